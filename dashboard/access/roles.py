"""Who may do what: four roles, each holding the ones below it (where each is held:
grants.py)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from enum import IntEnum

from django.conf import settings
from django.http import HttpRequest
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


def read_only() -> bool:
    return bool(getattr(settings, "RSMQ_READ_ONLY", False))


@sensitive_variables("given")  # starred in error reports, DEBUG too
def bearer_token(request: HttpRequest) -> bool | None:
    """True: the request carries RSMQ_METRICS_TOKEN as its bearer token; False: it carries
    another; None: it carries none (or no token is configured)."""
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not settings.RSMQ_METRICS_TOKEN:
        return None
    return hmac.compare_digest(given.strip().encode(), settings.RSMQ_METRICS_TOKEN.encode())
