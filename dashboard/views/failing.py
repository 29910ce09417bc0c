"""The Failing view: a queue's failing messages grouped by error type, like Sidekiq's
Retries and Dead tabs (what the worker recorded with ``record_failure``); the same as
JSON for the API is api/reads.py's ``failing``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from queues import validation as v

from ..htmx import HtmxHttpRequest
from ..place import place_for
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
