"""Login throttling: django-axes' lockout check, in front of the model backend, and the
client address it counts by (behind trusted proxies: the real one)."""

from __future__ import annotations

import ipaddress
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
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


def client_ip(request: HttpRequest) -> str | None:
    """The client's address, as django-axes counts failed logins by it (and the audit log
    names it): the socket's peer; behind a proxy of RSMQ_TRUSTED_PROXIES, the right-most
    address of X-Forwarded-For that is not a trusted proxy — each trusted proxy appends
    the address it got the request from, so only what is right of the first untrusted
    hop was written by someone trusted. From any other peer the header is ignored.

    (django-ipware, axes' default, picks an address out of the header whoever sent it: a
    client talking to the console directly would choose the address it is counted by.)
    """
    peer = request.META.get("REMOTE_ADDR")
    trusted = settings.RSMQ_TRUSTED_PROXIES
    if not trusted or not _is_trusted(peer, trusted):
        return peer
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    client = peer
    for hop in reversed([h for h in hops if h]):
        address = _address(hop)
        if address is None:
            break  # not an address: nothing left of it can be believed
        client = str(address)
        if not _is_trusted(client, trusted):
            break
    return client


def trusted_peer(request: HttpRequest) -> bool:
    """Whether the socket's peer is a proxy of RSMQ_TRUSTED_PROXIES."""
    return _is_trusted(request.META.get("REMOTE_ADDR"), settings.RSMQ_TRUSTED_PROXIES)


def _address(hop: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``hop`` of X-Forwarded-For as an address ("[::1]:443" and "1.2.3.4:80" too)."""
    if hop.startswith("["):
        hop = hop[1 : hop.find("]")] if "]" in hop else hop
    elif hop.count(":") == 1:
        hop = hop.split(":")[0]
    try:
        address = ipaddress.ip_address(hop)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def _is_trusted(peer: str | None, trusted: list[Any]) -> bool:
    address = _address(peer or "")
    return address is not None and any(address in network for network in trusted)
