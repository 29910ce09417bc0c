"""The one access helper every view goes through (healthchecks' ``_get_rw_check_for_user``):
``place_for`` returns the place, or raises Http404 / PermissionDenied, writing a denied
action to the audit log. A queue the caller holds no grant at is a queue that does not
exist: the same 404 (QueueNotFound), never a 403 naming it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404

from dashboard.access import grants
from dashboard.access.roles import Role
from dashboard.audit import log as audit
from dashboard.models import AuditEntry
from dashboard.places.place import Place, resolve
from queues import QueueNotFound

M = TypeVar("M", bound=Model)


def place_for(
    request: HttpRequest,
    conn: str,
    ns: str,
    role: Role = Role.OBSERVER,
    action: str = "",
    queue: str = "",
) -> Place:
    """The place, if the caller holds ``role`` there (at ``queue``, when it names one); a
    refused ``action`` is audited as denied."""
    place = resolve(conn, ns)
    authorize(request, place, role, action, queue)
    return place


def authorize(
    request: HttpRequest, place: audit.Place, role: Role, action: str, queue: str = ""
) -> None:
    """Go on if the caller holds ``role`` at the place (at ``queue``: there); a place or a
    queue it may not see is answered as one that does not exist; else the refusal is
    audited (when it is an ``action``'s) and answered 403."""
    held = held_at(request, place.conn.name, place.ns, queue)
    reason = grants.refusal(held, role)
    if not reason:
        return
    if action:
        audit.record(request, place, action, AuditEntry.Outcome.DENIED, queue=queue, detail=reason)
    raise PermissionDenied(reason)


def visible_or_404(
    request: HttpRequest, rows: QuerySet[M], pk: int, about: Callable[[M], tuple[str, str, str]]
) -> M:
    """The row ``pk`` of ``rows`` if the caller may see what it is about (``about``: its
    connection, namespace and queue or glob); else the 404 of a row that is not there."""
    found = get_object_or_404(rows, pk=pk)
    if grants.scope_of(request).hides(*about(found)):
        raise Http404(f"No {rows.model._meta.object_name} matches the given query.")
    return found


def destination(request: HttpRequest, place: Place, queue: str | None) -> None:
    """Go on if the caller may put messages in ``queue`` (a move's, a redrive's, a
    re-send's destination: an operator's there); one it may not see is answered as a queue
    that does not exist. None (back to where each message came from, any queue): only
    for a caller who may act at every queue of the place."""
    scope = grants.scope_of(request)
    conn, ns = place.conn.name, place.ns
    if queue is None:
        if scope.here(conn, ns).floor < Role.OPERATOR:
            raise PermissionDenied(
                "Name the queue to go to: your grants do not cover every queue here."
            )
        return
    reason = grants.refusal(scope.held(conn, ns, queue), Role.OPERATOR)
    if reason:
        raise PermissionDenied(reason)


def may_act(request: HttpRequest, place: Place, role: Role, queue: str = "") -> bool:
    """Whether the caller may act at ``role`` there (what a page offers; no audit row)."""
    try:
        return not grants.refusal(held_at(request, place.conn.name, place.ns, queue), role)
    except (QueueNotFound, Http404):
        return False


def held_at(request: HttpRequest, conn: str, ns: str, queue: str = "") -> Role:
    """The caller's role at the queue, or at the place (grants.Scope.held)."""
    return grants.scope_of(request).held(conn, ns, queue)
