"""Reveal: a queue's (or one message's) masked fields shown clear to the user who asks,
with a reason, for RSMQ_REVEAL_MINUTES, audited (dashboard/access/bodies.py)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_POST

from dashboard.access.bodies import access, minutes, reveal
from dashboard.access.guard import place_for
from dashboard.audit import log as audit
from dashboard.models import AuditEntry
from dashboard.views.common import back, go
from dashboard.web.htmx import HtmxHttpRequest
from queues import validation as v


class RevealForm(forms.Form):
    reason = forms.CharField(label="Why", max_length=500, strip=True)
    message = forms.CharField(required=False, max_length=200)


@login_required
@require_POST
def reveal_bodies(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    v.qname(qname)
    place = place_for(request, conn, ns, queue=qname)  # a queue out of sight: its 404
    form = RevealForm(request.POST)
    message = request.POST.get("message", "")
    bodies = access(request, place, qname, message)
    if not bodies.may_reveal:
        reason = "Revealing this queue's bodies needs a role its masking rule allows."
        audit.record(request, place, "reveal", AuditEntry.Outcome.DENIED, queue=qname,
                     detail=reason)  # fmt: skip
        raise PermissionDenied(reason)
    here = back(request, place.url("rsmq-queue", qname))
    if not form.is_valid():
        messages.error(request, "Reveal: give a reason (it is written to the audit log).")
        return go(request, here)
    row = reveal(request, place, qname, form.cleaned_data["reason"], form.cleaned_data["message"])
    what = f"message {row.message}" if row.message else f"{qname}'s bodies"
    messages.success(
        request,
        f"Revealed {what} for {minutes():g} minutes, until"
        f" {timezone.localtime(row.until):%H:%M:%S}.",
    )
    return go(request, here)
