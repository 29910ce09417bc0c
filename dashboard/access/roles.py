"""Who may do what: four roles, as Django groups with cumulative permissions."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from functools import wraps
from typing import TypeVar, cast

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.debug import sensitive_variables


class Role(IntEnum):
    """Ordered: a role may do all that the roles below it may. The numbers are never
    stored (groups hold permissions, tokens their role's name), only compared."""

    NONE = 0
    # queues, counts, charts, conditions, failure groups, timings: never a body
    # (docs/bodies.md)
    OBSERVER = 1
    VIEWER = 2  # read, bodies too (masked where a rule says: dashboard/access/bodies.py)
    # send, requeue, change visibility, delete, move (over a selection); redrive a
    # dead-letter queue
    OPERATOR = 3
    # create / edit / delete queue, policy, purge, bulk over "all in this state", redrive
    # any other queue (docs/console.md: the table of who may do what)
    ADMIN = 4


@dataclass(frozen=True, slots=True)
class Action:
    """An action, for who may take it and how the audit log names it (the tables of
    them: dashboard/acting/actions.py)."""

    role: Role
    audit_name: str


PERMISSIONS = {
    Role.OBSERVER: "dashboard.observe_console",
    Role.VIEWER: "dashboard.view_console",
    Role.OPERATOR: "dashboard.operate_messages",
    Role.ADMIN: "dashboard.administer_queues",
}
GROUPS = {
    "observer": Role.OBSERVER,
    "viewer": Role.VIEWER,
    "operator": Role.OPERATOR,
    "admin": Role.ADMIN,
}


def role_of(user: AbstractBaseUser | AnonymousUser) -> Role:
    # A user model without permissions (no PermissionsMixin) can hold no role.
    member = user if isinstance(user, PermissionsMixin) else None
    if member is None or not user.is_authenticated:
        return Role.NONE
    for role in (Role.ADMIN, Role.OPERATOR, Role.VIEWER, Role.OBSERVER):
        if member.has_perm(PERMISSIONS[role]):
            return role
    return Role.NONE


def read_only() -> bool:
    return bool(getattr(settings, "RSMQ_READ_ONLY", False))


def can(user: AbstractBaseUser | AnonymousUser, role: Role) -> bool:
    """Whether the user may act at this level (reading is never switched off)."""
    if role > Role.VIEWER and read_only():
        return False
    return role_of(user) >= role


def refusal(user: AbstractBaseUser | AnonymousUser, role: Role) -> str:
    """Why the user may not act at this level ("": they may)."""
    if can(user, role):
        return ""
    if role > Role.VIEWER and read_only():
        return "The console is read-only (RSMQ_READ_ONLY)."
    return f"This needs the {role.name.lower()} role."


def require(user: AbstractBaseUser | AnonymousUser, role: Role) -> None:
    reason = refusal(user, role)
    if reason:
        raise PermissionDenied(reason)


@sensitive_variables("given")  # starred in error reports, DEBUG too
def bearer_token(request: HttpRequest) -> bool | None:
    """True: the request carries RSMQ_METRICS_TOKEN as its bearer token; False: it carries
    another; None: it carries none (or no token is configured)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not settings.RSMQ_METRICS_TOKEN:
        return None
    return hmac.compare_digest(given.strip().encode(), settings.RSMQ_METRICS_TOKEN.encode())


#: a view: plain or streaming response
View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def token_or_viewer(view: View) -> View:
    """For machines and people: /metrics and the JSON API take the bearer token, or a
    logged-in viewer's session like the pages. They answer 401 / 403 rather than send a
    scraper to the login page."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        token = bearer_token(request)
        if token is False or (token is None and not request.user.is_authenticated):
            response = JsonResponse({"error": "Authentication required."}, status=401)
            response["WWW-Authenticate"] = 'Bearer realm="rsmq-console"'
            return response
        if token is None and not can(request.user, Role.OBSERVER):
            return JsonResponse({"error": "This needs the observer role."}, status=403)
        return view(request, *args, **kwargs)

    return cast(View, wrapped)
