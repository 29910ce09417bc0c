"""Who owns what: owners, on-call contacts and runbooks per queue or name pattern.
Everyone with a role sees them; admins add, edit and delete them, each change audited."""

from __future__ import annotations

from typing import Any, TypedDict

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from dashboard.access import grants
from dashboard.access.grants import EVERY, require
from dashboard.access.guard import authorize, visible_or_404
from dashboard.access.roles import Role
from dashboard.audit import log as audit
from dashboard.models import AuditEntry, Ownership
from dashboard.places.place import configured, resolve, resolve_or_first
from dashboard.views.common import UNPROCESSABLE, context
from dashboard.views.forms import OwnershipForm
from dashboard.web.htmx import HtmxHttpRequest

PER_PAGE = 50


def _about(o: Ownership) -> tuple[str, str, str]:
    return o.connection, o.namespace, o.target


class OwnerParams(TypedDict):
    """An owner row's audit params (its create, edit and delete alike; an edit's also
    hold the row before it, in ``before``: triage/owners.py reads them to tell who owned
    a queue at a past time)."""

    pattern: str
    queue: str
    owner: str
    oncall: str
    runbook_url: str


def _params(o: Ownership) -> OwnerParams:
    return {"pattern": o.pattern, "queue": o.queue, "owner": o.owner, "oncall": o.oncall,
            "runbook_url": o.runbook_url}  # fmt: skip


def _page(
    request: HtmxHttpRequest, form: OwnershipForm, editing: Ownership | None, status: int = 200,
    **extra: Any,
) -> HttpResponse:  # fmt: skip
    every: Any = grants.kept(request, Ownership.objects.all(), _about)
    rows = Paginator(every, PER_PAGE).get_page(request.GET.get("page"))
    ctx = context(None, page_obj=rows, form=form, editing=editing, params=request.GET, **extra)
    return render(request, "owners.html", ctx, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def owners_page(request: HtmxHttpRequest) -> HttpResponse:
    if request.method == "GET":
        require(request.user, Role.OBSERVER)
        return _page(
            request, OwnershipForm(initial=_asked(request), places=grants.places(request)), None
        )
    return _save(request, Ownership(), "owner_create")


def _asked(request: HtmxHttpRequest) -> dict[str, str]:
    """The new owner's place and queue, when a queue page's "add one" asked for them
    (?place=conn/ns&queue=q): the form comes filled in."""
    place, queue = request.GET.get("place", ""), request.GET.get("queue", "")
    if "/" not in place or tuple(place.split("/", 1)) not in configured():
        return {}
    return {"place": place, "queue": queue[:160]}


@login_required
@require_http_methods(["GET", "POST"])
def owner_edit(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    row = visible_or_404(request, Ownership.objects.all(), pk, _about)
    if request.method == "GET":
        require(request.user, Role.ADMIN)
        return _page(request, OwnershipForm(instance=row, places=grants.places(request)), row)
    return _save(request, row, "owner_edit")


def _save(request: HtmxHttpRequest, row: Ownership, action: str) -> HttpResponse:
    where = resolve_or_first(row.connection, row.namespace) if row.pk else resolve()
    authorize(request, where, Role.ADMIN, action, queue=row.target)
    form = OwnershipForm(request.POST, instance=row, places=configured())
    if not form.is_valid():
        errors = "; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in form.errors.items())
        audit.record(request, where, action, AuditEntry.Outcome.INVALID,
                     queue=request.POST.get("queue", "") or request.POST.get("pattern", ""),
                     detail=errors)  # fmt: skip
        return _page(request, form, row if row.pk else None, status=UNPROCESSABLE)
    before = _params(Ownership.objects.get(pk=row.pk)) if row.pk else None
    row = form.save(commit=False)
    # where it now points: the caller's grants must cover it too
    authorize(request, resolve_or_first(row.connection, row.namespace), Role.ADMIN, action,
              queue=row.target or EVERY)  # fmt: skip
    row.updated_by = request.user.get_username()
    params: dict[str, object] = {**_params(row), **({"before": before} if before else {})}
    with transaction.atomic():  # saved and audited together, or neither
        row.save()
        where = resolve_or_first(row.connection, row.namespace)
        audit.record(request, where, action, AuditEntry.Outcome.OK, queue=row.target,
                     params=params)  # fmt: skip
    return redirect(reverse("rsmq-owners") + "?saved=1")


@login_required
@require_POST
def owner_delete(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    row = visible_or_404(request, Ownership.objects.all(), pk, _about)
    where = resolve_or_first(row.connection, row.namespace)
    authorize(request, where, Role.ADMIN, "owner_delete", queue=row.target)
    if request.POST.get("confirm", "") != row.target:
        audit.record(request, where, "owner_delete", AuditEntry.Outcome.INVALID,
                     queue=row.target, detail="confirm: not the queue or pattern")  # fmt: skip
        form = OwnershipForm(instance=row, places=grants.places(request))
        error = f"confirm: type {row.target} exactly to delete its owner"
        return _page(request, form, row, status=UNPROCESSABLE, delete_error=error)
    params = _params(row)
    with transaction.atomic():  # deleted and audited together, or neither
        row.delete()
        audit.record(request, where, "owner_delete", AuditEntry.Outcome.OK,
                     queue=params["pattern"] or row.queue, params=params)  # fmt: skip
    return redirect(reverse("rsmq-owners") + "?deleted=1")
