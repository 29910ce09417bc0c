"""The served console behind a proxy (issue 23): `./run` with RSMQ_TRUSTED_PROXIES=127.0.0.1,
as nginx or Caddy on the same host would reach it; every login comes from 127.0.0.1 with
a different X-Forwarded-For, as the proxy writes it. Five wrong passwords from one client
lock that client out, and the real admin logs in from another."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from support.served import Served, cookies, request, start

pytestmark = pytest.mark.slow

A, B = "203.0.113.5", "198.51.100.7"


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    console = start(clone, "--no-celery", log_name="proxy.log", RSMQ_TRUSTED_PROXIES="127.0.0.1")
    try:
        console.wait_ready()
        yield console
    finally:
        console.stop()


def login(served: Served, password: str, forwarded: str) -> int:
    """A login as admin through the proxy for the client ``forwarded``: its status."""
    page = request(served.port, "/login/", headers={"X-Forwarded-For": forwarded})
    jar = cookies(page)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, page.text[:500]
    form = {"csrfmiddlewaretoken": html.unescape(token[1]), "username": "admin",
            "password": password}  # fmt: skip
    answer = request(
        served.port, "/login/", "POST", body=urlencode(form).encode(),
        headers={"Cookie": "; ".join(f"{k}={v}" for k, v in jar.items()),
                 "Content-Type": "application/x-www-form-urlencoded",
                 "Referer": f"http://127.0.0.1:{served.port}/login/",
                 "X-Forwarded-For": forwarded},
    )  # fmt: skip
    return answer.status


def test_failures_through_the_proxy_lock_out_their_client_only(served: Served) -> None:
    for _ in range(4):
        assert login(served, "wrong", A) == 200
    assert login(served, "wrong", A) == 429  # the fifth locks A out
    assert login(served, "admin", A) == 429
    assert login(served, "admin", B) == 302  # the real admin, from B
    # A spoofed left-most hop does not give A a fresh count: the proxy appends A.
    assert login(served, "admin", f"192.0.2.1, {A}") == 429
