"""Who calls the API: an API token acting at its role (``TokenAuth`` → a ``Caller``, the
call's typed identity), or a reader (``reader``: any token, RSMQ_METRICS_TOKEN, or a
viewer's session); else ``Refused``, with what its audit row and answer say."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.views.decorators.debug import sensitive_variables
from ninja.security.base import AuthBase
from redis.exceptions import RedisError

from dashboard.access import grants, tokens
from dashboard.access.grants import refusal
from dashboard.access.guard import held_at
from dashboard.access.roles import Action, Role, bearer_token
from dashboard.models import ApiToken
from dashboard.places import place as places
from queues import RsmqError
from queues.ops import ApiRate

PREFIX = "bearer rsmq_"  # an API token's Authorization header, lower-cased


@dataclass(slots=True)
class Caller:
    """An API token's call: ninja's ``request.auth`` on an acting route (``TokenAuth``),
    made the same way by the fast path. ``rate``: the count the call's own script makes
    (None: it was counted when the token was admitted)."""

    token: ApiToken
    action: Action
    rate: ApiRate | None = None

    @property
    def actor(self) -> str:
        """The token's name in the audit log: never taken for a console user's."""
        return f"token:{self.token.name}"

    @property
    def role(self) -> Role:
        return tokens.role_of(self.token)


def caller(request: HttpRequest) -> Caller:
    found = getattr(request, "auth", None)
    assert isinstance(found, Caller)  # every acting route has a TokenAuth
    return found


class Refused(Exception):
    """A call refused before it ran (401 no token or an unknown one, 403 a role too low,
    429 over its rate, 413 a body too large): answered ``status`` with the text, and
    audited as a refusal of ``action`` (None: the call's, else a read) by ``actor`` (""
    the caller's)."""

    def __init__(self, status: int, text: str, action: Action | None = None, actor: str = "",
                 retry_after: int | None = None) -> None:  # fmt: skip
        super().__init__(text)
        self.status, self.action, self.actor, self.retry_after = status, action, actor, retry_after


def bearer(request: HttpRequest) -> str | None:
    """The API token the request carries (None: no ``Authorization: Bearer rsmq_…``)."""
    given = request.headers.get("Authorization", "")
    return given[7:].strip() if given[: len(PREFIX)].lower() == PREFIX else None


class TokenAuth(AuthBase):
    """``Authorization: Bearer rsmq_…`` (a django-ninja auth callable): a live token
    within its rate whose role may run ``action``; the call's ``Caller``. A token call
    whose count its own script makes (``counted``, on the counting Redis) is not counted
    here. Anything else is ``Refused``."""

    openapi_type = "http"
    openapi_scheme = "bearer"

    def __init__(self, action: Action, counted: bool = False) -> None:
        self.action, self.counted = action, counted
        super().__init__()

    @sensitive_variables("token")  # starred in error reports, DEBUG too
    def __call__(self, request: HttpRequest) -> Caller:
        token = bearer(request)
        if token is None:
            raise Refused(401, "Authentication required: an API token, as Authorization: Bearer.",
                          self.action)  # fmt: skip
        kwargs = request.resolver_match.kwargs if request.resolver_match else {}
        rate = None
        try:
            try:
                if not self.counted or not tokens.foldable(kwargs.get("conn")):
                    raise LookupError
                row, generation = tokens.identify(token)
                rate = tokens.rate_of(row, generation)
            except (LookupError, RedisError, RsmqError):
                row = tokens.admit(token)  # counted now (in the database if Redis is down)
        except tokens.Unauthenticated as e:
            raise Refused(401, str(e), self.action) from None
        except tokens.RateLimited as e:
            raise Refused(429, str(e), self.action, f"token:{e.name}", e.retry_after) from None
        who = Caller(row, self.action, rate)
        reason = refusal(in_scope(request, row, kwargs), self.action.role)
        if reason:
            raise Refused(403, reason, self.action, who.actor)
        return who


def in_scope(request: HttpRequest, row: ApiToken, kwargs: dict[str, Any]) -> Role:
    """The token's role where the call looks (the route's place and queue), its scope
    bound to the request; a place or queue out of it: the 404 of one that does not exist
    (the same check as the pages': guard.held_at)."""
    grants.bind(request, grants.of_token(row))
    place = places.resolve(kwargs.get("conn"), kwargs.get("ns"))
    return held_at(request, place.conn.name, place.ns, str(kwargs.get("qname", "")))


class ReaderAuth(AuthBase):
    """``reader``, as django-ninja's auth callable of the read routes."""

    openapi_type = "http"
    openapi_scheme = "bearer"

    def __call__(self, request: HttpRequest) -> bool:
        return reader(request)


def reader(request: HttpRequest) -> bool:
    """Who may read (the read API, /metrics): an API token of any role (counted against
    its rate), RSMQ_METRICS_TOKEN, or a logged-in observer's session. An Authorization
    header that is none of these tokens is refused, whatever the session. Else
    ``Refused`` (401 or 403, audited)."""
    token = bearer(request)
    if token is not None:
        try:
            row = tokens.admit(token)
            # its role decides what it reads of bodies (dashboard/access/bodies.py)
            setattr(request, "reader_token", row)  # noqa: B010
        except tokens.Unauthenticated as e:
            raise Refused(401, str(e), None) from None
        except tokens.RateLimited as e:
            raise Refused(429, str(e), None, f"token:{e.name}", e.retry_after) from None
        kwargs = request.resolver_match.kwargs if request.resolver_match else {}
        in_scope(request, row, kwargs)
        return True
    metrics = bearer_token(request)  # RSMQ_METRICS_TOKEN
    if metrics is not None:
        if not metrics:
            raise Refused(401, "Unknown token.", None)
        grants.bind(request, grants.everywhere(Role.VIEWER))
        return True
    if request.headers.get("Authorization"):
        raise Refused(401, "Authentication required: an API token, as Authorization: Bearer.",
                      None)  # fmt: skip
    if not request.user.is_authenticated:
        raise Refused(401, "Authentication required.", None)
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    if kwargs.get("conn") or kwargs.get("qname"):
        place = places.resolve(kwargs.get("conn"), kwargs.get("ns"))
        held = held_at(request, place.conn.name, place.ns, str(kwargs.get("qname", "")))
    else:
        held = grants.role_of(request.user)
    if held < Role.OBSERVER:
        raise Refused(403, "This needs the observer role.", None, request.user.get_username())
    return True
