from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .connections import get_connection, get_rsmq


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    conn = get_connection(request.GET.get("conn"))
    rsmq = get_rsmq(conn, request.GET.get("ns"))
    stats = rsmq.queue_stats()
    return render(
        request,
        "overview.html",
        {"stats": stats, "connection": conn, "namespace": rsmq.ns},
    )
