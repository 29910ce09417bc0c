"""API tokens: made once and shown once, kept as their SHA-256, checked and counted on
every call (a fixed one-minute window per token, in its database row: one count for
every web process)."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time

from django.db import transaction
from django.utils import timezone

from .access import GROUPS, Role
from .models import ApiToken

PREFIX = "rsmq_"
WINDOW = 60  # s


class Unauthenticated(Exception):
    """No token, or one that is unknown or revoked: 401."""


class RateLimited(Exception):
    """The token's requests of this minute are spent: 429, again in ``retry_after`` s."""

    def __init__(self, name: str, per_minute: int, retry_after: int) -> None:
        super().__init__(
            f"Token {name} is limited to {per_minute} requests a minute: "
            f"try again in {retry_after} s."
        )
        self.retry_after = retry_after
        self.name = name


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def mint(name: str, role: str, created_by: str, per_minute: int) -> tuple[ApiToken, str]:
    """A new token: its row, and the token itself (shown once, never stored)."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        name=name, role=role, digest=digest(token), prefix=token[: len(PREFIX) + 4],
        per_minute=per_minute, created_by=created_by,
    )  # fmt: skip
    return row, token


def role_of(row: ApiToken) -> Role:
    return GROUPS[row.role]


def admit(token: str) -> ApiToken:
    """The live token ``token`` is, counted against its limit; else Unauthenticated or
    RateLimited (a refused call is not counted)."""
    wanted = digest(token)
    with transaction.atomic():
        row = ApiToken.objects.select_for_update().filter(digest=wanted).first()
        # The lookup is by digest; compare again in constant time all the same.
        if row is None or not hmac.compare_digest(row.digest, wanted):
            raise Unauthenticated("Unknown API token.")
        if row.revoked_at is not None:
            raise Unauthenticated(f"API token {row.name} was revoked.")
        now = time.time()
        window = int(now // WINDOW)
        if row.window != window:
            row.window, row.used = window, 0
        if row.used >= row.per_minute:
            retry = max(1, math.ceil((window + 1) * WINDOW - now))
            raise RateLimited(row.name, row.per_minute, retry)
        row.used += 1
        row.last_used_at = timezone.now()
        row.save(update_fields=["window", "used", "last_used_at"])
    return row
