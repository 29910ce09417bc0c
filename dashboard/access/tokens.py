"""API tokens: made once and shown once, kept as their SHA-256, checked and counted on
every call: a fixed one-minute window per token, counted in the first connection's Redis
(queues/ops/console_api.py ``api_rate``: one round trip, one count for every web process).

A process keeps the rows it read for CACHE_TTL (1 s), so a call costs no database
query; the same round trip that counts the call reads the tokens' generation, which
every change of a token (a revocation) bumps, so a revoked token is refused at once by
every process that has seen the bump, and within CACHE_TTL whatever happens."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import math
import secrets
import threading
import time
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.utils import timezone
from django.views.decorators.debug import sensitive_variables
from redis.exceptions import RedisError

from dashboard.access.roles import GROUPS, Role
from dashboard.models import ApiToken
from dashboard.places.connections import get_connection, get_rsmq
from queues import RsmqError
from queues.console import ConsoleRSMQ
from queues.errors import ApiRefused
from queues.ops import ApiRate
from queues.urls import CLUSTER

log = logging.getLogger(__name__)

PREFIX = "rsmq_"
WINDOW = 60  # s
CACHE_TTL = 1.0  # s: how long a process trusts a token row it read


class Unauthenticated(Exception):
    """No token, or one that is unknown or revoked: 401."""


class RateLimited(Exception):
    """The token's requests of this minute are spent: 429, again in ``retry_after`` s."""

    def __init__(self, name: str, per_minute: int, retry_after: int, n: int = 1) -> None:
        text = f"Token {name} is limited to {per_minute} requests a minute: "
        if n > 1 and n + 1 > per_minute:
            text += (
                f"this call counts for {n + 1} (an import: one a message), more than a minute"
                " takes: import a smaller file, or use `rsmq message import`."
            )
        else:
            extra = f" (this call counts for {n + 1}: an import, one a message)" if n > 1 else ""
            text += f"try again in {retry_after} s{extra}."
        super().__init__(text)
        self.retry_after = retry_after
        self.name = name


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mint(
    name: str, role: str, created_by: str, per_minute: int, connection: str = "*",
    namespace: str = "*", queues: str = "*", expires_at: dt.datetime | None = None,
) -> tuple[ApiToken, str]:  # fmt: skip
    """A new token: its row, and the token itself (shown once, never stored)."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        name=name, role=role, digest=digest(token), prefix=token[: len(PREFIX) + 4],
        per_minute=per_minute, created_by=created_by, connection=connection,
        namespace=namespace, queues=queues, expires_at=expires_at,
    )  # fmt: skip
    return row, token


def role_of(row: ApiToken) -> Role:
    return GROUPS[row.role]


class _Seen:
    """The token rows this process read: digest → (read at, generation then, row)."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[float, str, ApiToken]] = {}
        self.lock = threading.Lock()

    def get(self, wanted: str, generation: str | None = None) -> ApiToken | None:
        seen = self.rows.get(wanted)
        if seen is None or time.monotonic() - seen[0] > CACHE_TTL:
            return None
        if generation is not None and seen[1] != generation:
            return None
        return seen[2]

    def put(self, wanted: str, generation: str, row: ApiToken) -> None:
        with self.lock:
            if len(self.rows) > 10_000:
                self.rows.clear()
            self.rows[wanted] = (time.monotonic(), generation, row)

    def clear(self) -> None:
        with self.lock:
            self.rows.clear()


_seen = _Seen()


def counter() -> ConsoleRSMQ:
    """Where every process counts the tokens' calls: the first connection's Redis."""
    return get_rsmq(get_connection(None))


def _read(wanted: str) -> ApiToken:
    row = ApiToken.objects.filter(digest=wanted).first()
    # The lookup is by digest; compare again in constant time all the same.
    if row is None or not hmac.compare_digest(row.digest, wanted):
        raise Unauthenticated("Unknown API token.")
    return row


def _live(row: ApiToken) -> ApiToken:
    if row.revoked_at is not None:
        raise Unauthenticated(f"API token {row.name} was revoked.")
    if expired(row):
        raise Unauthenticated(f"API token {row.name} has expired.")
    return row


def expired(row: ApiToken) -> bool:
    return row.expires_at is not None and row.expires_at <= timezone.now()


@sensitive_variables("token", "wanted")  # starred in error reports, DEBUG too
def admit(token: str) -> ApiToken:
    """The live token ``token`` is, counted against its limit; else Unauthenticated or
    RateLimited (a refused call is not counted)."""
    wanted = digest(token)
    row = _seen.get(wanted)
    fresh = row is None
    if row is None:
        row = _read(wanted)
    _live(row)
    now = time.time()
    try:
        admitted, _, generation = counter().api_rate(wanted, row.per_minute, WINDOW)
    except (RedisError, RsmqError, OSError):
        # The counting Redis is down: count in the token's row (slower, still one count
        # for every process), and read it anew.
        return _admit_in_database(wanted, now)
    if not fresh and _seen.get(wanted, generation) is None:
        # A token changed since this process read it: read it again.
        row, fresh = _live(_read(wanted)), True
    if not admitted:
        raise RateLimited(row.name, row.per_minute, _retry(now))
    if fresh:
        _used(row)
        _seen.put(wanted, generation, row)
    return row


LAST_USED_EVERY = 30  # s: how stale "last used" (the tokens page: "… ago") may be


def _used(row: ApiToken) -> None:
    """ "Last used", written when the row is read again and it is more than
    LAST_USED_EVERY old: not a database write a call, nor one a second per process."""
    now = timezone.now()
    if row.last_used_at is None or (now - row.last_used_at).total_seconds() > LAST_USED_EVERY:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now


def _retry(now: float) -> int:
    return max(1, math.ceil((int(now // WINDOW) + 1) * WINDOW - now))


def charge(row: ApiToken, n: int) -> None:
    """``n`` more requests of a call that counts for more than one (an import: one a
    message; the call itself was counted when its token was admitted); RateLimited,
    nothing counted, when this minute's rest can't take them."""
    if n <= 0:
        return
    now = time.time()
    try:
        admitted, _, _ = counter().api_rate(row.digest, row.per_minute, WINDOW, n)
    except (RedisError, RsmqError, OSError):
        _admit_in_database(row.digest, now, n)
        return
    if not admitted:
        raise RateLimited(row.name, row.per_minute, _retry(now), n)


def _admit_in_database(wanted: str, now: float, n: int = 1) -> ApiToken:
    with transaction.atomic():
        row = _live(_read_for_update(wanted))
        window = int(now // WINDOW)
        if row.window != window:
            row.window, row.used = window, 0
        if row.used + n > row.per_minute:
            raise RateLimited(row.name, row.per_minute, _retry(now), n)
        row.used += n
        row.last_used_at = timezone.now()
        # update(), not save(): a save would tell every process the token changed.
        ApiToken.objects.filter(pk=row.pk).update(
            window=row.window, used=row.used, last_used_at=row.last_used_at
        )
    return row


def _read_for_update(wanted: str) -> ApiToken:
    row = ApiToken.objects.select_for_update().filter(digest=wanted).first()
    if row is None or not hmac.compare_digest(row.digest, wanted):
        raise Unauthenticated("Unknown API token.")
    return row


def cached(token: str) -> tuple[ApiToken, str] | None:
    """The live token ``token`` is and its generation, if this process read it within
    CACHE_TTL (no query, no round trip); else None."""
    seen = _seen.rows.get(digest(token))
    if seen is None or time.monotonic() - seen[0] > CACHE_TTL or seen[2].revoked_at:
        return None
    if expired(seen[2]):
        return None
    return seen[2], seen[1]


def identify(token: str) -> tuple[ApiToken, str]:
    """The live token ``token`` is and the tokens' generation it was read at, not counted:
    the call's own script counts it (rate_of, queues/ops/console_api.py ``audited``)."""
    wanted = digest(token)
    seen = _seen.rows.get(wanted)
    if seen is not None and time.monotonic() - seen[0] <= CACHE_TTL:
        return _live(seen[2]), seen[1]
    return reread(wanted)


def reread(wanted: str) -> tuple[ApiToken, str]:
    """Read a token again (its generation first: a change after it is seen next time)."""
    generation = counter().api_generation()
    row = _live(_read(wanted))
    _used(row)
    _seen.put(wanted, generation, row)
    return row, generation


def rate_of(row: ApiToken, generation: str) -> ApiRate:
    return ApiRate(row.digest, row.per_minute, WINDOW, generation)


def foldable(conn: str | None) -> bool:
    """Whether a call on connection ``conn`` can be counted by its own script: it runs on
    the counting Redis (the first connection), and not on a Cluster (another slot)."""
    first = get_connection(None)
    return (conn is None or conn == first.name) and not first.url.startswith(CLUSTER)


def refused(row: ApiToken, e: ApiRefused) -> ApiToken:
    """A call's script refused it (``e``): RateLimited, or the token read again (revoked:
    Unauthenticated); the row to call again with."""
    if e.why == "rateLimited":
        raise RateLimited(row.name, row.per_minute, _retry(time.time()))
    return reread(row.digest)[0]


@receiver(post_save, sender=ApiToken)
@receiver(post_delete, sender=ApiToken)
def _changed(sender: type[ApiToken], **kwargs: Any) -> None:
    """A token was made, revoked or changed: this process forgets what it read, and every
    other one sees the new generation on its next call."""
    _seen.clear()
    try:
        counter().api_generation_bump()
    except Exception:  # Redis down: the others see it within CACHE_TTL all the same
        log.warning("Could not tell the other processes that an API token changed", exc_info=True)
