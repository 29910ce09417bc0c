"""Login throttling: django-axes' lockout check, in front of the model backend."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.contrib.auth import get_user_model
from django.http import HttpRequest


class LoginThrottle(AxesStandaloneBackend):
    """django-axes' lockout check for logins over HTTP; ``authenticate()`` called without
    a request (a shell, a management command) has no client to throttle."""

    def authenticate(self, request: HttpRequest | None, *args: Any, **kwargs: Any) -> None:
        if request is not None:
            super().authenticate(request, *args, **kwargs)


def username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The user name a login tried, as django-axes counts and stores it: cut to the
    longest a user name can be (axes' column holds 255 characters, and Postgres answers a
    longer one with an error, a 500 at the login form, where SQLite stores it)."""
    data = credentials or getattr(request, "POST", {})
    name = data.get("username")
    if not isinstance(name, str):
        return None
    longest = get_user_model()._meta.get_field("username").max_length
    return name[:longest] if longest else name
