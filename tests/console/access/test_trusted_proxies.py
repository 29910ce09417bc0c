"""Behind a proxy (issue 23): RSMQ_TRUSTED_PROXIES names the proxies whose X-Forwarded-For
counts. Login throttling (django-axes) and the audit log then see the client's real
address — the right-most hop that is not a trusted proxy — and a lockout is per (user
name, address): nobody who does not know the password can lock the real user out from
another address. From any other peer the header is ignored."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, RequestFactory

from dashboard.access.throttle import client_ip
from dashboard.models import AuditEntry

ROOT = Path(__file__).resolve().parents[3]
PROXY = "127.0.0.1"  # nginx or Caddy on the same host
A, B = "203.0.113.5", "198.51.100.7"  # two clients behind it


def networks(*entries: str) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(e, strict=False) for e in entries]


@pytest.fixture
def admin_user(db, settings) -> User:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast
    user = User.objects.create_user("root", password="right")
    user.groups.add(Group.objects.get(name="admin"))
    return user


@pytest.fixture
def behind_proxy(settings) -> None:
    settings.RSMQ_TRUSTED_PROXIES = networks(PROXY)


def login(password: str, peer: str, forwarded: str | None = None) -> int:
    """One login try on a connection of its own from ``peer``: its status."""
    extra = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    response = Client().post("/login/", {"username": "root", "password": password}, **extra)
    return response.status_code


def throttled() -> list[str]:
    """The audit log's "throttled" rows' texts (one per refused try)."""
    rows = AuditEntry.objects.filter(action="login", outcome=AuditEntry.Outcome.THROTTLED)
    return [r.detail for r in rows]


@pytest.mark.django_db
def test_behind_a_trusted_proxy_failures_from_a_lock_a_not_b(
    admin_user: User, behind_proxy: None, settings
) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login("wrong", PROXY, A) == 200
    assert login("wrong", PROXY, A) == 429  # the last one locks A out
    assert login("right", PROXY, A) == 429  # A is locked out, even with the password
    assert login("right", PROXY, B) == 302  # the real admin, from B, logs in
    assert login("wrong", PROXY, B) == 200  # and B's own count starts at one
    # The audit log names the client's address, not the proxy's.
    details = throttled()
    assert details and all(A in d and PROXY not in d for d in details), details


@pytest.mark.django_db
def test_the_left_most_hop_is_not_believed_the_right_most_untrusted_is(
    admin_user: User, behind_proxy: None, settings
) -> None:
    # A writes a new made-up address left of its own every time; the proxy appends A.
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login("wrong", PROXY, f"10.9.8.{i}, {A}") == 200
    assert login("wrong", PROXY, f"10.9.8.50, {A}") == 429
    assert login("right", PROXY, f"10.9.8.99, {A}") == 429
    assert login("right", PROXY, B) == 302


@pytest.mark.django_db
def test_a_spoofed_header_from_an_untrusted_peer_counts_against_the_peer(
    admin_user: User, behind_proxy: None, settings
) -> None:
    peer = "192.0.2.9"  # talks to the console directly, not through the proxy
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login("wrong", peer, f"198.51.100.{i}") == 200  # a new made-up address each
    assert login("wrong", peer, "198.51.100.100") == 429
    assert login("right", peer, "198.51.100.200") == 429  # the peer's own count
    assert login("right", peer) == 429
    assert login("right", PROXY, B) == 302  # nobody else is locked out
    details = throttled()
    assert details and all(peer in d for d in details), details


@pytest.mark.django_db
def test_without_trusted_proxies_the_header_counts_for_nothing(admin_user: User, settings) -> None:
    assert settings.RSMQ_TRUSTED_PROXIES == []  # the default
    for i in range(settings.AXES_FAILURE_LIMIT - 1):
        assert login("wrong", PROXY, f"203.0.113.{i}") == 200
    assert login("wrong", PROXY, "203.0.113.100") == 429
    # Every try was the proxy's (the socket's) address: locked out there, whatever the header.
    assert login("right", PROXY, B) == 429
    assert login("right", "192.0.2.50") == 302


@pytest.mark.parametrize(
    ("trusted", "peer", "forwarded", "client"),
    [
        (["127.0.0.1"], "127.0.0.1", None, "127.0.0.1"),  # no header: the proxy itself
        (["127.0.0.1"], "127.0.0.1", "", "127.0.0.1"),
        (["127.0.0.1"], "127.0.0.1", A, A),
        (["127.0.0.1"], "192.0.2.9", A, "192.0.2.9"),  # an untrusted peer: ignored
        ([], "127.0.0.1", A, "127.0.0.1"),  # no trusted proxy at all
        # Two proxies (a load balancer, then nginx) in a CIDR: past both of them.
        (["10.0.0.0/8"], "10.0.0.1", f"6.6.6.6, {A}, 10.0.0.2", A),
        (["10.0.0.0/8"], "10.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3"),  # all trusted
        (["10.0.0.0/8"], "10.0.0.1", f"{A},10.0.0.2", A),  # no space after the comma
        # An address that is not one: nothing left of it can be believed.
        (["10.0.0.0/8"], "10.0.0.1", f"{A}, unknown, 10.0.0.2", "10.0.0.2"),
        (["127.0.0.1"], "127.0.0.1", f"{A}:51234", A),  # with a port
        (["::1"], "::1", "[2001:db8::7]:443", "2001:db8::7"),
        (["::1", "127.0.0.1"], "::ffff:127.0.0.1", A, A),  # an IPv4-mapped peer
        (["fd00::/8"], "fd00::1", "2001:db8::9, fd00::2", "2001:db8::9"),
    ],
)
def test_the_client_address_is_the_right_most_untrusted_hop(
    settings, trusted: list[str], peer: str, forwarded: str | None, client: str
) -> None:
    settings.RSMQ_TRUSTED_PROXIES = networks(*trusted)
    meta = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        meta["HTTP_X_FORWARDED_FOR"] = forwarded
    assert client_ip(RequestFactory().get("/", **meta)) == client


def test_a_trusted_proxy_that_is_no_address_is_one_line_at_start(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RSMQ_", "DJANGO_"))} | {
        "RSMQ_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/33",
        "RSMQ_DATA_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "RSMQ_TRUSTED_PROXIES: '10.0.0.0/33' is not an IP address or a CIDR" in done.stderr
