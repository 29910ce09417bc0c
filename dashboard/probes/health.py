"""Is the console alive, ready, and are its snapshots coming?

``/healthz``: liveness — 200 as long as the process answers (it touches nothing).
``/readyz``: readiness — each connection's Redis, the database, and the age of the last
snapshot (``snapshots_behind``: older than two intervals, the most a snapshot may be late
whatever else the worker runs — bulk jobs are short steps beside it; ``snapshots_stale``:
older than three, the pages' banner); 503 when a Redis or the database does not
answer. For compose and Kubernetes healthchecks: no login, nothing secret in the answer
(connection names, not URLs).

The pages show a banner when the last snapshot is older than three intervals: charts and
rates go stale silently otherwise when the Celery worker or beat is gone.
"""

from __future__ import annotations

import time
from typing import Any

import redis
from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Max
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from dashboard.display.formatting import duration
from dashboard.models import Snapshot
from dashboard.places.connections import connections, get_rsmq

# When this process started: no snapshot at all is news only after a few intervals.
STARTED = time.time()
# Pages ask at most this often (s) per process: one small indexed query, not one per page.
CACHE_SECONDS = 5.0
_cache: tuple[float, float | None] = (0.0, None)


def last_snapshot_at() -> float | None:
    """Epoch seconds of the newest snapshot row (the Redis clock), or None if none."""
    global _cache
    checked, value = _cache
    now = time.monotonic()
    if now - checked > CACHE_SECONDS:
        newest = Snapshot.objects.aggregate(newest=Max("taken_at"))["newest"]
        value = newest / 1000 if newest is not None else None
        _cache = (now, value)
    return value


def snapshot_lag() -> tuple[float | None, bool]:
    """(age of the last snapshot in s or None, whether that is more than 3 intervals)."""
    limit = 3 * settings.RSMQ_SNAPSHOT_INTERVAL
    at = last_snapshot_at()
    if at is None:
        return None, time.time() - STARTED > limit
    age = max(0.0, time.time() - at)
    return age, age > limit


def snapshot_banner(request: HttpRequest) -> dict[str, Any]:
    """Context processor: ``snapshot_warning``, the banner's text, on logged-in pages.

    Read only by a template that shows it (base.html): Django calls a callable variable
    when it is used, so a page's htmx refresh, which renders a part without the banner,
    reads no snapshot."""
    if not request.user.is_authenticated:
        return {}
    return {"snapshot_warning": _warning}


def _warning() -> str:
    try:
        age, stale = snapshot_lag()
    except DatabaseError:
        return ""
    if not stale:
        return ""
    if age is None:
        return "No snapshots yet — is the Celery worker running?"
    return f"Snapshots stopped {duration(age)} ago — is the Celery worker running?"


@require_safe
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_safe
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, Any] = {}
    ready = True
    for conn in connections():
        try:
            get_rsmq(conn).redis.ping()
            checks[f"redis:{conn.name}"] = "ok"
        except redis.RedisError as e:
            checks[f"redis:{conn.name}"] = type(e).__name__
            ready = False
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
        age, stale = snapshot_lag()
        interval = float(settings.RSMQ_SNAPSHOT_INTERVAL)
        checks["snapshot_age_s"] = None if age is None else round(age, 1)
        checks["snapshot_interval_s"] = interval
        checks["snapshots_behind"] = stale or (age is not None and age > 2 * interval)
        checks["snapshots_stale"] = stale
    except DatabaseError as e:
        checks["database"] = type(e).__name__
        ready = False
    # Stale snapshots don't make the web server unready: it serves pages all the same.
    return JsonResponse({"status": "ok" if ready else "unavailable", **checks},
                        status=200 if ready else 503)  # fmt: skip
