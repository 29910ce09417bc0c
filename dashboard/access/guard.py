"""The one access helper every view goes through (healthchecks' ``_get_rw_check_for_user``):
``place_for`` returns the place, or raises Http404 / PermissionDenied, writing a denied
action to the audit log."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from dashboard.access.roles import Role, refusal
from dashboard.audit import log as audit
from dashboard.models import AuditEntry
from dashboard.places.place import Place, resolve


def place_for(
    request: HttpRequest,
    conn: str,
    ns: str,
    role: Role = Role.OBSERVER,
    action: str = "",
    queue: str = "",
) -> Place:
    """The place, if the user has ``role``; a refused ``action`` is audited as denied."""
    place = resolve(conn, ns)
    authorize(request, place, role, action, queue)
    return place


def authorize(
    request: HttpRequest, place: audit.Place, role: Role, action: str, queue: str = ""
) -> None:
    """Go on if the user may act at ``role``; else the refusal is audited (when it is an
    ``action``'s) and answered 403."""
    reason = refusal(request.user, role)
    if not reason:
        return
    if action:
        audit.record(request, place, action, AuditEntry.Outcome.DENIED, queue=queue, detail=reason)
    raise PermissionDenied(reason)
