"""Login throttling: django-axes' lockout check, in front of the model backend."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.http import HttpRequest


class LoginThrottle(AxesStandaloneBackend):
    """django-axes' lockout check for logins over HTTP; ``authenticate()`` called without
    a request (a shell, a management command) has no client to throttle."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is not None:
            super().authenticate(request, *args, **kwargs)
