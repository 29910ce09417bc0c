"""What never leaves the console: secrets in Django's error reports and error texts."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import Resolver404, resolve
from django.views.debug import SafeExceptionReporterFilter

from queues.urls import redacted

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (an error message may quote one)."""
    return _URL.sub(lambda m: redacted(m.group(0)), text)


# An API token (dashboard/access/tokens.py: "rsmq_" and 43 URL-safe characters), or whatever
# follows "Bearer " in an Authorization header.
_TOKEN = re.compile(r"rsmq_[A-Za-z0-9_-]{8,}|(?i:bearer)\s+[^\s'\",}\]]+")


def mask_secrets(text: str) -> str:
    """``text`` with every API token, bearer credential, and the value of SECRET_KEY and
    RSMQ_METRICS_TOKEN in it starred."""
    text = _TOKEN.sub(
        lambda m: "Bearer ****" if m[0].lower().startswith("bearer") else "rsmq_****", text
    )
    for name in ("SECRET_KEY", "RSMQ_METRICS_TOKEN"):
        value = getattr(settings, name, "")
        if isinstance(value, str) and len(value) >= 8:
            text = text.replace(value, "********")
    return text


class ConsoleExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's error report (the DEBUG page, the mails to ADMINS) without the settings
    that hold a URL with a password or a token: RSMQ_REDIS_URL, CELERY_BROKER_URL,
    RSMQ_CONNECTIONS, DATABASE_URL, RSMQ_METRICS_TOKEN, SECRET_KEY…; and every URL
    elsewhere in it (request.META, a frame's variables) without its password."""

    hidden_settings = re.compile(
        "API|AUTH|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|CONNECTIONS|DATABASE|DSN",
        flags=re.I,
    )

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        cleansed = super().cleanse_setting(key, value)
        return redact_text(cleansed) if type(cleansed) is str else cleansed

    #: a frame's variables that hold a secret by their name: shown as stars
    hidden_locals = re.compile(
        "TOKEN|AUTH|BEARER|PASS|SECRET|SIGNATURE|CREDENTIAL|COOKIE|SESSION|API_?KEY|DIGEST",
        flags=re.I,
    )

    def is_active(self, request: Any) -> bool:
        # Django masks @sensitive_variables and @sensitive_post_parameters only with DEBUG
        # off: the console masks them on its DEBUG page too.
        return True

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> Any:
        # Any object's repr may quote a URL (a dataclass holding one): shown redacted; and
        # a token in any variable (a headers dict, a string built from one) is starred.
        return [
            (
                name,
                _Shown(
                    repr(self.cleansed_substitute)
                    if self.hidden_locals.search(name)
                    else mask_secrets(redact_text(repr(value)))
                ),
            )
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]


class _Shown:
    """A value as the report shows it (its repr, already redacted)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class NoUrlList:
    """With DEBUG on, Django's 404 page for an address that names no page lists every URL
    pattern of the console: the console's own 404 page answers instead. (With DEBUG off
    Django already does.) Placed after CommonMiddleware (which still adds a missing slash) and
    the user's."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.DEBUG:
            try:
                resolve(request.path_info)
            except Resolver404:
                return render(request, "404.html", status=404)
        return self.get_response(request)
