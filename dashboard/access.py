"""Who may do what: three roles, as Django groups with cumulative permissions."""

from __future__ import annotations

from enum import IntEnum

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied


class Role(IntEnum):
    NONE = 0
    VIEWER = 1  # read
    OPERATOR = 2  # send, requeue, change visibility, delete, move (over a selection)
    ADMIN = 3  # create / edit / delete queue, purge, bulk over "all in this state"


PERMISSIONS = {
    Role.VIEWER: "dashboard.view_console",
    Role.OPERATOR: "dashboard.operate_messages",
    Role.ADMIN: "dashboard.administer_queues",
}
GROUPS = {"viewer": Role.VIEWER, "operator": Role.OPERATOR, "admin": Role.ADMIN}


def role_of(user: AbstractBaseUser | AnonymousUser) -> Role:
    if not user.is_authenticated:
        return Role.NONE
    for role in (Role.ADMIN, Role.OPERATOR, Role.VIEWER):
        if user.has_perm(PERMISSIONS[role]):
            return role
    return Role.NONE


def read_only() -> bool:
    return bool(getattr(settings, "RSMQ_READ_ONLY", False))


def can(user: AbstractBaseUser | AnonymousUser, role: Role) -> bool:
    """Whether the user may act at this level (reading is never switched off)."""
    if role > Role.VIEWER and read_only():
        return False
    return role_of(user) >= role


def require(user: AbstractBaseUser | AnonymousUser, role: Role) -> None:
    if not can(user, role):
        if role > Role.VIEWER and read_only():
            raise PermissionDenied("The console is read-only (RSMQ_READ_ONLY).")
        raise PermissionDenied(f"This needs the {role.name.lower()} role.")
