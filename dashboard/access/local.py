"""Password logins (Django's users): on by default; with RSMQ_LOCAL_LOGIN off, only the
break-glass users (RSMQ_BREAK_GLASS_USERS) may still log in with a password, for when
the single sign-on provider is down or misconfigured."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.http import HttpRequest

#: the session's backend (django.contrib.auth's BACKEND_SESSION_KEY) of a password login
PATH = "dashboard.access.local.LocalPasswords"


def allowed(username: str | None) -> bool:
    """Whether ``username`` may log in with a password now."""
    return bool(settings.RSMQ_LOCAL_LOGIN) or username in settings.RSMQ_BREAK_GLASS_USERS


class LocalPasswords(ModelBackend):
    """Django's password check, for the users who may log in with a password: anyone else
    fails like a wrong password (counted by django-axes, audited as a failed login)."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None,
        password: str | None = None, **kwargs: Any,
    ) -> User | None:  # fmt: skip
        if not allowed(username):
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)
