"""Redis down or slow: a clear page with HTTP 503; a vanished queue: a 404 page."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from queues import QueueNotFound
from queues.cli import redacted

from .connections import get_connection

log = logging.getLogger(__name__)


class RedisUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, QueueNotFound):
            # Deleted under the operator's feet (or never there): a 404 page, not a 500.
            context = {"message": f"Queue {exception.qname} does not exist (any more)."}
            return render(request, "404.html", context, status=404)
        if not isinstance(exception, redis.RedisError):
            return None
        match = request.resolver_match
        conn = get_connection(match.kwargs.get("conn") if match else None)
        log.warning("Redis unavailable at %s: %s", redacted(conn.url), exception)
        context = {"url": redacted(conn.url), "error": " ".join(str(exception).split())}
        return render(request, "redis_unavailable.html", context, status=503)
