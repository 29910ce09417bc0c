"""The lean request path of the HTTP API: a call that carries an API token
(``Authorization: Bearer rsmq_…``) to ``/api/`` goes through a Django handler of its own,
without what only a browser's requests need — the session, CSRF, the user, messages,
django-axes, CSP, htmx, static files. A token call has no session and no cookie to trust,
acts only by its token (dashboard/api/calls.py), and answers JSON; every other request
takes the full stack (settings.MIDDLEWARE). The same views, the same URLs."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse

LEAN_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",  # ALLOWED_HOSTS, the missing slash
    "dashboard.lean.NoUser",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.middleware.RedisUnavailableMiddleware",
]
PREFIX = "bearer rsmq_"

StartResponse = Callable[..., Any]
Wsgi = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class NoUser:
    """A token call is nobody's session: ``request.user`` is anonymous, never looked up."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.user = AnonymousUser()
        return self.get_response(request)


class LeanHandler(WSGIHandler):
    """Django's WSGI handler with LEAN_MIDDLEWARE instead of settings.MIDDLEWARE."""

    def load_middleware(self, is_async: bool = False) -> None:
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = LEAN_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


def token_call(environ: dict[str, Any]) -> bool:
    path = environ.get("PATH_INFO", "")
    given = environ.get("HTTP_AUTHORIZATION", "")
    return path.startswith("/api/") and given[: len(PREFIX)].lower() == PREFIX


def dispatch(full: Wsgi) -> Wsgi:
    """The application: token calls to the lean handler, the rest to ``full``."""
    lean = LeanHandler()

    def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if token_call(environ):
            return lean(environ, start_response)
        return full(environ, start_response)

    return application
