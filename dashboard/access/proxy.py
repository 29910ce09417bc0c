"""Sign-in through an authenticating proxy: a header that names the user
(RSMQ_PROXY_USER_HEADER, e.g. X-Forwarded-User), and optionally one that lists their groups
(RSMQ_PROXY_GROUPS_HEADER), believed only when the request comes from a proxy of
RSMQ_TRUSTED_PROXIES; from anyone else both are ignored. Django's RemoteUserMiddleware
and RemoteUserBackend do the rest: the user is made at first sight, the session ends when
the proxy stops naming them, another name in the header is another session."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware
from django.contrib.auth.models import User
from django.http import HttpRequest

from dashboard.access import groups, sign_ins
from dashboard.access.throttle import trusted_peer

#: the session's backend (BACKEND_SESSION_KEY) of a proxy's sign-in
PATH = "dashboard.access.proxy.ProxyUsers"
#: the session's copy of the groups header it last synced
GROUPS_SEEN = "rsmq_proxy_groups"


def meta_name(header: str) -> str:
    """The request.META key of an HTTP header ("X-Forwarded-User" → HTTP_X_FORWARDED_USER)."""
    return "HTTP_" + header.upper().replace("-", "_")


class ProxyUsers(RemoteUserBackend):
    """The user a trusted proxy named, made at first sign-in (no password: they can't log
    in with one)."""

    create_unknown_user = True

    def configure_user(self, request: HttpRequest, user: Any, created: bool = True) -> Any:
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        return user


class ProxyUserMiddleware(RemoteUserMiddleware):
    """RemoteUserMiddleware for the header RSMQ_PROXY_USER_HEADER names, from trusted
    proxies only; the groups header, when set, syncs the user's groups on each request."""

    def process_request(self, request: HttpRequest) -> None:
        # REMOTE_USER (what Django's middleware reads) is the configured header's, from a
        # trusted proxy only: written by the client itself, it is as if it were not there
        # (a session the proxy began ends, as when the proxy stops sending it).
        user_header = meta_name(settings.RSMQ_PROXY_USER_HEADER)
        groups_header = meta_name(settings.RSMQ_PROXY_GROUPS_HEADER)
        named = request.META.pop(user_header, None) if settings.RSMQ_PROXY_USER_HEADER else None
        claimed = request.META.pop(groups_header, "") if settings.RSMQ_PROXY_GROUPS_HEADER else ""
        request.META.pop(self.header, None)
        trusted = named is not None and trusted_peer(request)
        if trusted:
            request.META[self.header] = named
        elif settings.SESSION_COOKIE_NAME not in request.COOKIES:
            return  # nobody to sign in or out: the session untouched (an API token's call)
        before = _signed_in(request)
        was = request.user if before[0] == PATH else None
        super().process_request(request)
        user = request.user
        now = _signed_in(request)
        if isinstance(was, User) and now != before:
            sign_ins.ended(was, "The proxy no longer names this user.")
        if isinstance(user, User) and now[0] == PATH and now != before:
            sign_ins.signed_in(request, user, "proxy")
        if not trusted or not settings.RSMQ_PROXY_GROUPS_HEADER or now[0] != PATH:
            return
        assert isinstance(user, User)
        if request.session.get(GROUPS_SEEN) != claimed:  # a query only when they change
            groups.sync(user, groups.claimed_groups(claimed), via="proxy")
            request.session[GROUPS_SEEN] = claimed


def _signed_in(request: HttpRequest) -> tuple[object, object]:
    """Who the session holds: (its backend, its user's id)."""
    return request.session.get(BACKEND_SESSION_KEY), request.session.get(SESSION_KEY)
