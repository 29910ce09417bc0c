"""htmx plumbing the pages share: which template (or partial) to render, where an action
goes back to, query parameters as numbers."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect
from django.templatetags.static import static
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_safe
from django_htmx.http import HttpResponseClientRedirect

from dashboard.places.place import Place
from dashboard.web.htmx import HtmxHttpRequest

UNPROCESSABLE = 422  # htmx is configured (base.html) to swap it: forms show their errors


def context(place: Place | None, **extra: Any) -> dict[str, Any]:
    """Page context; what the header needs comes from views/context.py's console."""
    ctx: dict[str, Any] = {"place": place, **extra}
    if place:
        ctx.update(connection=place.conn, namespace=place.ns)
    return ctx


def template(request: HtmxHttpRequest, page: str, polled: str | None = None) -> str:
    """The page, or the partial of it an htmx request asks for: its live-refreshed part
    (``polled``) for a poll, the whole ``#content`` after an action."""
    if request.htmx and request.method == "GET" and polled and request.htmx.target == polled:
        return f"{page}#{polled}"
    if request.htmx and request.method == "POST":
        return f"{page}#content"
    return page


def back(request: HtmxHttpRequest, default: str) -> str:
    """The page an action was posted from (htmx tells; plain forms send `next`)."""
    current = request.htmx.current_url_abs_path if request.htmx else None
    target = current or request.POST.get("next") or default
    # Only ever a path on this site: no open redirect through `next`.
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return default
    return target


def current(request: HtmxHttpRequest) -> str:
    """The URL the page shows in its links and polls: an action's is the page it came from."""
    return request.get_full_path() if request.method == "GET" else back(request, "")


def query_of(url: str) -> QueryDict:
    return QueryDict(urlsplit(url).query)


def go(request: HtmxHttpRequest, url: str) -> HttpResponse:
    """To another page: htmx follows HX-Redirect (a 302 would be swapped into the page)."""
    if request.htmx:
        return HttpResponseClientRedirect(url, status=204)
    return redirect(url)


def int_param(value: str | None, default: int, low: int = 1, high: int = 2**31) -> int:
    if value is None or value == "":
        return default
    try:
        return min(max(int(value), low), high)
    except ValueError:
        return default


@require_safe
def favicon(request: HtmxHttpRequest) -> HttpResponse:
    """``/favicon.ico``, which browsers ask for whatever the page links: the icon under
    its static (hashed, cached for good) name."""
    return redirect(static("favicon.svg"))
