"""Each connection's Redis health (queues/health.py), as the console uses it: cached a few
seconds per connection (``RSMQ_REDIS_HEALTH_CACHE``; a Redis that did not answer,
``ERROR_CACHE``) so that pages, the banner, /metrics
and alerts don't each run INFO; the risks judged with the thresholds of settings
(``RSMQ_REDIS_SAVE_AGE``, ``RSMQ_REDIS_MEMORY_SHARE``); and ``redis_banner``, the context
processor of the warning on every page."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import redis
from django.conf import settings
from django.http import HttpRequest
from django.urls import reverse

from dashboard.places.connections import Connection, connections, get_rsmq
from queues import RsmqError
from queues.health import RedisHealth, Risk, read_health, risks
from queues.urls import redacted

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Reading:
    """A connection's health now: the reading and its risks, or why there is none."""

    conn: str
    health: RedisHealth | None
    risks: list[Risk] = field(default_factory=list)
    error: str = ""  # the server did not answer (or refused INFO)

    @property
    def at_risk(self) -> bool:
        return bool(self.risks)


#: seconds a failed reading is kept, at least
ERROR_CACHE = 30.0
_cache: dict[tuple[str, str], tuple[float, Reading]] = {}
_lock = threading.Lock()


def clear_cache() -> None:
    with _lock:
        _cache.clear()


def judge(health: RedisHealth) -> list[Risk]:
    return risks(
        health,
        save_age_limit=float(settings.RSMQ_REDIS_SAVE_AGE),
        memory_share=float(settings.RSMQ_REDIS_MEMORY_SHARE),
    )


def read(conn: Connection) -> Reading:
    """A fresh reading of the connection's Redis (the node of its first namespace), kept
    in the cache."""
    try:
        health = read_health(get_rsmq(conn).redis)
        reading = Reading(conn.name, health, judge(health))
    except (redis.RedisError, RsmqError, OSError) as e:
        log.warning("Redis health of %s (%s): %s", conn.name, redacted(conn.url), e)
        reading = Reading(conn.name, None, error=f"{type(e).__name__}: {e}")
    with _lock:
        _cache[conn.name, conn.url] = (time.monotonic(), reading)
    return reading


def cached(conn: Connection) -> Reading:
    """The connection's reading of the last RSMQ_REDIS_HEALTH_CACHE seconds, else a new one."""
    with _lock:
        hit = _cache.get((conn.name, conn.url))
    if hit is not None:
        ttl = float(settings.RSMQ_REDIS_HEALTH_CACHE)
        if hit[1].health is None:
            # A Redis that did not answer is asked again less often: pages of no
            # connection (the audit log) must not wait on its timeout every few seconds.
            ttl = max(ttl, ERROR_CACHE)
        if time.monotonic() - hit[0] < ttl:
            return hit[1]
    return read(conn)


def find(name: str) -> Connection | None:
    return next((c for c in connections() if c.name == name), None)


def metric_value(conn_name: str, metric: str) -> float | None:
    """An alert rule's ``redis:`` metric for the connection (None: Redis didn't answer)."""
    conn = find(conn_name)
    if conn is None:
        return None
    reading = cached(conn)
    h = reading.health
    if h is None:
        return None
    if metric == "redis:at_risk":
        return float(reading.at_risk)
    if metric == "redis:memory_share":
        return h.memory_ratio or 0.0
    if metric == "redis:evicted_keys":
        return float(h.evicted_keys)
    raise ValueError(f"{metric} is not a Redis metric")


def redis_banner(request: HttpRequest) -> dict[str, Any]:
    """Context processor: ``redis_warnings`` — the page's connection (every connection on
    pages of none) whose Redis could lose RSMQ data silently, with why; and
    ``redis_health_conn``, the connection the header's "Redis" link opens."""
    if not request.user.is_authenticated:
        return {}
    conns = connections()
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    mine = [c for c in conns if c.name == kwargs.get("conn")]
    found: list[tuple[str, str, list[str]]] = []

    def warnings() -> list[tuple[str, str, list[str]]]:
        # Called by the template only if it shows the banner: an htmx fragment (a live
        # refresh) reads no health at all.
        if not found:
            for conn in mine or conns:
                reading = cached(conn)
                if reading.risks:
                    url = reverse("rsmq-redis", args=[conn.name])
                    found.append((conn.name, url, [r.text for r in reading.risks]))
            found.append(("", "", []))  # read: the marker of an empty answer too
        return [w for w in found if w[0]]

    return {
        "redis_warnings": warnings,
        "redis_health_conn": (mine or conns)[0].name if conns else None,
    }
