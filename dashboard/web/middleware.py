"""Failures as pages an operator can read: Redis down or slow → 503; a queue or message
that is gone, or a URL naming none → 404; not allowed → 403. Never a traceback.

An htmx request (a live refresh or an action) gets a small fragment swapped into the
page's alert area instead, so the page around it, and its live refresh, stay.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django_htmx.http import HttpResponseClientRedirect, reswap, retarget

from dashboard.places.connections import get_connection
from dashboard.web.errors import DATA_ERROR, web_error
from dashboard.web.htmx import HtmxHttpRequest

log = logging.getLogger(__name__)


class RedisUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HtmxHttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HtmxHttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(
        self, request: HtmxHttpRequest, exception: Exception
    ) -> HttpResponse | None:
        htmx = bool(getattr(request, "htmx", False))
        # Without htmx, Django's own 404 / 403 pages answer Http404 / PermissionDenied.
        if not htmx and isinstance(exception, (Http404, PermissionDenied)):
            return None
        match = request.resolver_match
        conn = get_connection(match.kwargs.get("conn") if match else None)
        error = web_error(exception, conn)
        if error is None:
            return None
        if error.status == 503 and not error.url:  # not Redis: the audit log (NotAudited)
            log.error("%s", error.text)
            if htmx:
                return self._fragment(request, 503, error.text)
            return render(request, "not_audited.html", {"message": error.text}, status=503)
        if error.status == 503:
            log.warning("Redis unavailable at %s: %s", error.url, error.error)
            if htmx:
                return self._fragment(request, 503, f"{error.text} Retrying.")
            context = {"url": error.url, "error": error.error}
            return render(request, "redis_unavailable.html", context, status=503)
        if error.status == 403:
            return self._fragment(request, 403, error.text)
        if error.status == DATA_ERROR:
            log.warning("%s", error.text)
            if htmx:
                return self._fragment(request, DATA_ERROR, error.text)
            return render(request, "data_error.html", {"message": error.text}, status=DATA_ERROR)
        return self._page(request, "404.html", error.status, message=error.text)

    @staticmethod
    def _page(request: HtmxHttpRequest, template: str, status: int, message: str) -> HttpResponse:
        if getattr(request, "htmx", False):
            # The thing this part of the page shows is gone: show the whole page's answer.
            return HttpResponseClientRedirect(
                request.htmx.current_url_abs_path or request.path, status=204
            )
        return render(request, template, {"message": message}, status=status)

    @staticmethod
    def _fragment(request: HtmxHttpRequest, status: int, text: str) -> HttpResponse:
        html = render_to_string("_alert.html", {"text": text, "status": status}, request)
        return reswap(retarget(HttpResponse(html, status=status), "#alert"), "outerHTML")
