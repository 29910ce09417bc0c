"""Failures as pages an operator can read: Redis down or slow → 503; a queue or message
that is gone, or a URL naming none → 404; not allowed → 403. Never a traceback.

An htmx request (a live refresh or an action) gets a small fragment swapped into the
page's alert area instead, so the page around it, and its live refresh, stay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from queues import InvalidArgument, QueueNotFound
from queues.urls import redacted

from .connections import get_connection

log = logging.getLogger(__name__)


class RedisUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, QueueNotFound):
            # Deleted under the operator's feet (or never there).
            message = f"Queue {exception.qname} does not exist (any more)."
            return self._page(request, "404.html", 404, message=message)
        if isinstance(exception, InvalidArgument):
            # Only URLs reach here with bad names or ids: forms are checked in the views.
            what = "queue name" if exception.field == "qname" else exception.field
            return self._page(request, "404.html", 404, message=f"{exception}: not a valid {what}.")
        if isinstance(exception, Http404) and request.htmx:
            return self._page(request, "404.html", 404, message=str(exception))
        if isinstance(exception, PermissionDenied) and request.htmx:
            return self._fragment(request, 403, f"Not allowed: {exception} Nothing was changed.")
        if not isinstance(exception, redis.RedisError):
            return None
        match = request.resolver_match
        conn = get_connection(match.kwargs.get("conn") if match else None)
        error = " ".join(str(exception).split()).rstrip(".")
        log.warning("Redis unavailable at %s: %s", redacted(conn.url), error)
        if request.htmx:
            return self._fragment(
                request, 503, f"Redis is unavailable at {redacted(conn.url)}: {error}. Retrying."
            )
        context = {"url": redacted(conn.url), "error": error}
        return render(request, "redis_unavailable.html", context, status=503)

    @staticmethod
    def _page(request: HttpRequest, template: str, status: int, message: str) -> HttpResponse:
        if request.htmx:
            # The thing this part of the page shows is gone: show the whole page's answer.
            response = HttpResponse(status=204)
            response["HX-Redirect"] = request.htmx.current_url_abs_path or request.path
            return response
        return render(request, template, {"message": message}, status=status)

    @staticmethod
    def _fragment(request: HttpRequest, status: int, text: str) -> HttpResponse:
        html = render_to_string("_alert.html", {"text": text, "status": status}, request)
        response = HttpResponse(html, status=status)
        response["HX-Retarget"] = "#alert"
        response["HX-Reswap"] = "outerHTML"
        return response
