"""Saved filters: the queue page's filter saved under a name, for one queue or every queue
of the namespace, its owner's or (an admin's choice) shared with everyone. A saved filter
is a link (its URL query, dashboard/acting/message_filter.py). Anyone with a role saves and
deletes their own; admins share and delete any. Each save and delete is audited."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from dashboard.access.guard import authorize, place_for
from dashboard.access.roles import Role
from dashboard.acting.message_filter import FilterError, checked
from dashboard.audit import log as audit
from dashboard.models import AuditEntry, SavedFilter
from dashboard.views.forms import SaveFilterForm
from dashboard.views.queue import render_queue
from dashboard.web.htmx import HtmxHttpRequest

#: saved filters a user keeps at most in one namespace (a list on the filter bar)
PER_USER = 100


def _params(row: SavedFilter) -> dict[str, object]:
    return {"name": row.name, "query": row.query, "queue": row.queue or "(every queue)",
            "shared": row.shared}  # fmt: skip


@login_required
@require_POST
def save_filter(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    place = place_for(request, conn, ns, Role.VIEWER, "filter_save", qname)
    form = SaveFilterForm(request.POST)
    problem, field = "", ""
    f = None
    try:
        f = checked(request.POST)
    except FilterError as e:
        problem, field = str(e), e.field
    if not problem and not form.is_valid():
        field, errors = next(iter(form.errors.items()))
        problem = f"{field}: {' '.join(map(str, errors))}"
    if not problem and f is not None and not f.query():
        field, problem = "filter", "filter: nothing to save (no field of the filter is set)."
    if problem or f is None:
        audit.record(request, place, "filter_save", AuditEntry.Outcome.INVALID, queue=qname,
                     detail=problem)  # fmt: skip
        return render_queue(request, place, qname, request.GET, status=400,
                            extra={"save_error": problem, "save_error_field": field})  # fmt: skip
    shared = form.cleaned_data["shared"]
    if shared:
        authorize(request, place, Role.ADMIN, "filter_share", qname)
    scope_queue = qname if form.cleaned_data["scope"] == "queue" else ""
    mine = SavedFilter.objects.filter(owner_id=request.user.pk, connection=place.conn.name,
                                      namespace=place.ns)  # fmt: skip
    name = form.cleaned_data["name"]
    if mine.count() >= PER_USER and not mine.filter(queue=scope_queue, name=name).exists():
        problem = f"name: you keep {PER_USER} saved filters here at most: delete one first."
        audit.record(request, place, "filter_save", AuditEntry.Outcome.INVALID, queue=qname,
                     detail=problem)  # fmt: skip
        return render_queue(request, place, qname, request.GET, status=400,
                            extra={"save_error": problem, "save_error_field": "name"})  # fmt: skip
    q = QueryDict(mutable=True)
    q.update(f.query())
    with transaction.atomic():  # saved and audited together, or neither
        row, _ = SavedFilter.objects.update_or_create(
            owner_id=request.user.pk, connection=place.conn.name, namespace=place.ns,
            queue=scope_queue, name=name, defaults={"query": q.urlencode(), "shared": shared},
        )  # fmt: skip
        audit.record(request, place, "filter_save", AuditEntry.Outcome.OK, queue=qname,
                     params=_params(row))  # fmt: skip
    return redirect(place.url("rsmq-queue", qname) + "?" + row.query)


@login_required
@require_POST
def delete_filter(
    request: HtmxHttpRequest, conn: str, ns: str, qname: str, pk: int
) -> HttpResponse:
    place = place_for(request, conn, ns, Role.VIEWER, "filter_delete", qname)
    row = get_object_or_404(SavedFilter, pk=pk, connection=place.conn.name, namespace=place.ns)
    if row.owner_id != request.user.pk:
        authorize(request, place, Role.ADMIN, "filter_delete", qname)
    params = _params(row)
    with transaction.atomic():  # deleted and audited together, or neither
        row.delete()
        audit.record(request, place, "filter_delete", AuditEntry.Outcome.OK, queue=qname,
                     params=params)  # fmt: skip
    return redirect(place.url("rsmq-queue", qname))
