"""A connection's Redis health page: version, memory, eviction policy, persistence,
clients, replication and the slow log, read fresh (read-only: INFO, CONFIG GET, SLOWLOG)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from dashboard.access import grants
from dashboard.access.grants import require
from dashboard.access.roles import Role
from dashboard.display.formatting import epoch_ms
from dashboard.places.connections import connections
from dashboard.probes import redis_health
from dashboard.views.common import context
from dashboard.web.htmx import HtmxHttpRequest


@login_required
@require_safe
def redis_page(request: HtmxHttpRequest, conn: str) -> HttpResponse:
    require(request.user, Role.OBSERVER)
    connection = redis_health.find(conn)
    scope = grants.scope_of(request)
    # its slow log names keys: only for who sees every queue of every namespace there
    if connection is None or not all(scope.whole(conn, ns) for ns in connection.namespaces):
        raise Http404(f"No connection {conn!r} is configured.")
    reading = redis_health.read(connection)
    h = reading.health
    ctx = context(
        None,
        reading=reading,
        health=h,
        redis_conn=connection,
        others=[c.name for c in connections() if c.name != connection.name],
        last_save=epoch_ms(h.rdb_last_save_time * 1000) if h else None,
        slowlog=[(e, epoch_ms(e.started * 1000)) for e in (h.slowlog or ())] if h else [],
        save_age_limit=settings.RSMQ_REDIS_SAVE_AGE,
        memory_share=settings.RSMQ_REDIS_MEMORY_SHARE,
    )
    return render(request, "redis.html", ctx)
