"""The queue page's export: the messages of its current filter as a streamed JSON Lines
download (dashboard/acting/exports.py); the import is the page's ``import`` action
(views/queue_actions.py)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, HttpResponseBase
from django.views.decorators.http import require_safe

from dashboard.access.bodies import access
from dashboard.access.guard import place_for
from dashboard.acting import exports
from dashboard.acting.actions import EXPORT
from dashboard.acting.message_filter import FilterError, body_refusal, checked
from dashboard.audit import log as audit
from dashboard.models import AuditEntry
from dashboard.web.htmx import HtmxHttpRequest
from queues import validation as v


@login_required
@require_safe
def export(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponseBase:
    """The filter of the query (``message_filter.checked``: a bad field is a 400 naming
    it); the queue must exist (404) before the download starts."""
    place = place_for(request, conn, ns, EXPORT.role, EXPORT.audit_name, qname)
    v.qname(qname)  # a bad name in the URL: the middleware answers 404
    try:
        flt = checked(request.GET)
    except FilterError as e:
        audit.record(request, place, EXPORT.audit_name, AuditEntry.Outcome.INVALID, qname,
                     detail=f"{e.field}: {e}")  # fmt: skip
        return HttpResponse(f"{e.field}: {e}\n", status=400, content_type="text/plain")
    shown = access(request, place, qname)
    refused = body_refusal(shown, flt)
    if refused:
        audit.record(request, place, EXPORT.audit_name, AuditEntry.Outcome.DENIED, qname,
                     params=flt.query(), detail=refused)  # fmt: skip
        return HttpResponse(f"{refused}\n", status=403, content_type="text/plain")
    place.rsmq.get_queue_attributes(qname)  # QueueNotFound: the middleware answers 404
    audited: list[AuditEntry] = []
    try:
        response = exports.export_response(place.rsmq, qname, flt, shown, audited)
    except exports.Busy as e:
        answer = HttpResponse(f"{e}.\n", status=503, content_type="text/plain; charset=utf-8")
        answer["Retry-After"] = str(e.retry_after)
        return answer
    params = {**flt.query(), "bodies": exports.bodies_param(shown)}
    row = audit.record(request, place, EXPORT.audit_name, AuditEntry.Outcome.OK, qname,
                       params=params, detail=f"exporting {flt.describe()}")  # fmt: skip
    audited.append(row)
    return response
