"""The Failing view: a queue's failing messages grouped by error type, like Sidekiq's
Retries and Dead tabs (what the worker recorded with ``record_failure``); and the same as
JSON for the API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from queues import InvalidArgument
from queues import validation as v

from ..api.reads import api_view
from ..formatting import iso
from ..htmx import HtmxHttpRequest
from ..place import Place, place_for
from .common import context


@login_required
@require_safe
def failing(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    place = place_for(request, conn, ns)
    v.qname(qname)  # a bad name in the URL: the middleware answers 404
    groups = place.rsmq.failure_groups(qname)
    ctx = context(
        place,
        qname=qname,
        failing=groups,
        retry=groups.of_state("retry"),
        dead=groups.of_state("dead"),
        now=groups.now,
    )
    return render(request, "failing.html", ctx)


@api_view
def failing_api(request: HttpRequest, place: Place, qname: str) -> JsonResponse:
    """``/api/…/queues/<name>/failures/``: the groups; ``?id=`` one message's history."""
    mid = request.GET.get("id")
    if mid is not None:
        try:
            v.message_id(mid)
        except InvalidArgument as e:  # a bad query, not a page that isn't there
            return JsonResponse({"error": str(e)}, status=400)
        failures = place.rsmq.failures(qname, mid)
        return JsonResponse({"name": qname, "id": mid, "failures": [f.as_dict() for f in failures]})
    g = place.rsmq.failure_groups(qname)
    return JsonResponse(
        {
            "name": g.qname,
            "dlq": g.dlq,
            "complete": g.complete,
            "read_at": iso(g.now),
            "groups": [x.as_dict() for x in g.groups],
        }  # fmt: skip
    )
