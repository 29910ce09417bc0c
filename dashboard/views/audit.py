"""The audit log's page: every mutating action, filtered by who, where and what."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from .. import audit_drain
from ..access import Role, require
from ..htmx import HtmxHttpRequest
from ..models import AuditEntry
from .common import context

FILTERS = ("username", "queue", "action", "outcome", "connection", "namespace")


@login_required
@require_safe
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    # The log spans every place, so there is no place to resolve: only the role.
    require(request.user, Role.VIEWER)
    # The API's records still in Redis are moved in first; what can't be yet is counted.
    audit_drain.drain()
    pending = audit_drain.pending()
    # each row's Undo, if its action kept one (dashboard/undo.py): in the same query
    entries = AuditEntry.objects.select_related("undo")
    filters = {}
    for field in FILTERS:
        value = request.GET.get(field, "").strip()
        if value:
            entries = entries.filter(**{field: value})
            filters[field] = value
    page_obj = Paginator(entries, 50).get_page(request.GET.get("page"))
    ctx = context(
        None,
        page_obj=page_obj,
        filters=filters,
        actions=AuditEntry.objects.values_list("action", flat=True).distinct().order_by("action"),
        outcomes=AuditEntry.Outcome.choices,
        params=request.GET,
        pending=pending,
    )
    return render(request, "audit.html", ctx)
