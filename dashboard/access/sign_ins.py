"""Every sign-in and sign-out in the audit log: a login by how it came (``via``: password,
oidc, proxy), a failed one folded like a lockout (one row a minute per user name, counting
its tries: django-axes' ``user_login_failed`` receiver, connected in dashboard/apps.py, and
the provider's refusals), a logout, and a session the console ended (the provider ended
it, passwords were turned off)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest

from dashboard.access.throttle import client_ip
from dashboard.audit import log as audit
from dashboard.models import AuditEntry


def _from(request: HttpRequest | None) -> str:
    return f"from {client_ip(request)}" if request is not None else "without a request"


def signed_in(request: HttpRequest, user: AbstractBaseUser, via: str) -> None:
    audit.write(None, "login", AuditEntry.Outcome.OK, user=user, params={"via": via},
                detail=_from(request))  # fmt: skip


def signed_out(request: HttpRequest, user: AbstractBaseUser) -> None:
    audit.write(None, "logout", AuditEntry.Outcome.OK, user=user, detail=_from(request))


def ended(user: AbstractBaseUser, why: str) -> None:
    audit.write(None, "session_end", AuditEntry.Outcome.OK, user=user, detail=why)


def failed(request: HttpRequest | None, who: str, why: str) -> None:
    """A sign-in that failed, folded: a client trying again and again adds no rows."""
    audit.write_folded(None, "login_failed", AuditEntry.Outcome.DENIED, who,
                       detail=f"{why} ({_from(request)}).")  # fmt: skip


def login_failed(sender: object, credentials: dict[str, Any], request: HttpRequest | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
    """Django's ``user_login_failed``: a wrong password (or a user who may not use one)."""
    if request is not None and getattr(request, "axes_locked_out", False):
        return  # django-axes refused it: its lockout has a row (audit.record_lockout)
    name = credentials.get("username")
    failed(request, name if isinstance(name, str) else "", "Wrong user name or password")
