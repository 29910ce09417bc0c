"""The shared base of the console view tests: the console pointed at the test Redis, and
one client per role (viewer, operator, admin, a user with no group, anonymous).

tests/conftest.py loads it for every folder; test modules import nothing
from it (so that pytest still rewrites its asserts); helpers hang off the ``console``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import redis
from django.contrib.auth.models import Group, User
from django.http import HttpResponse
from django.test import Client
from redis.connection import AbstractConnection

from dashboard.celery import app as celery_app
from dashboard.models import AuditEntry
from dashboard.probes import redis_health
from queues import RedisSMQ, scripts

FLASH_RE = re.compile(r'<p class="flash ([a-z ]*)">(.*?)</p>', re.S)
UNDO_FORM = re.compile(
    r'<form class="undo"[^>]*action="([^"]+)".*?name="undo-token" value="([0-9a-f]{32})"', re.S
)


@dataclass(frozen=True)
class Console:
    """Where the console under test looks (connection "default", this test's namespace),
    the addresses of its pages, and what to read back from its answers."""

    ns: str
    rsmq: RedisSMQ
    conn: str = "default"

    # -- addresses ---------------------------------------------------------------------

    @property
    def base(self) -> str:
        return f"/c/{self.conn}/{self.ns}/"

    def overview(self, query: str = "") -> str:
        return self.base + query

    def create(self) -> str:
        return self.base + "create/"

    def queue(self, qname: str = "q1", query: str = "") -> str:
        return f"{self.base}q/{qname}/{query}"

    def act(self, qname: str = "q1") -> str:
        return f"{self.base}q/{qname}/act/"

    def message(self, mid: str, qname: str = "q1") -> str:
        return f"{self.base}q/{qname}/m/{mid}/"

    def message_act(self, mid: str, qname: str = "q1") -> str:
        return f"{self.base}q/{qname}/m/{mid}/act/"

    def htmx(self, current: str | None = None, target: str | None = None) -> dict[str, str]:
        """The headers htmx sends from `current` (default: q1's page, "all" tab)."""
        headers = {
            "HTTP_HX_REQUEST": "true",
            "HTTP_HX_CURRENT_URL": "http://testserver"
            + (current or self.queue("q1", "?state=all")),
        }
        if target:
            headers["HTTP_HX_TARGET"] = target
        return headers

    # -- reading answers ---------------------------------------------------------------

    @staticmethod
    def flashes(response: HttpResponse) -> list[str]:
        """The flash messages a page shows, as text."""
        return [
            html.unescape(re.sub(r"<[^>]*>", "", t))
            for _, t in FLASH_RE.findall(response.content.decode())
        ]

    @staticmethod
    def undo_button(response: HttpResponse) -> tuple[str, str]:
        """The answer's one Undo: (where it posts, its token)."""
        (found,) = UNDO_FORM.findall(response.content.decode())
        return found

    @staticmethod
    def audit() -> AuditEntry:
        """The one audit row (fails if there is not exactly one)."""
        return AuditEntry.objects.get()


@pytest.fixture
def console(settings, redis_url: str, ns: str, rsmq: RedisSMQ, broker_url: str) -> Console:
    # A task a view queues (a job's step) goes to the test Redis, whichever test made the
    # Celery app's first connection: never to a Redis on the default port.
    settings.CELERY_BROKER_URL = broker_url
    celery_app.conf.broker_url = broker_url
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": redis_url, "namespaces": [ns], "environment": "test"}
    ]
    settings.RSMQ_READ_ONLY = False
    settings.RSMQ_REFRESH_SECONDS = 5
    # The banner's Redis health (dashboard/probes/redis_health.py) read now and kept for the
    # test: a reading that expires between two requests is no page's round trip, nor a
    # connection a test that watches sockets should see.
    settings.RSMQ_REDIS_HEALTH_CACHE = 3600
    redis_health.clear_cache()
    redis_health.cached(redis_health.find("default"))  # type: ignore[arg-type]
    # The API's audit records drained after every call: a test reads its row at once.
    settings.RSMQ_AUDIT_DRAIN_EVERY = 0
    return Console(ns=ns, rsmq=rsmq)


@pytest.fixture
def login(db) -> Callable[..., Client]:
    """``login("alice", "operator")``: a client logged in as a new user of that group."""

    def make(username: str, group: str | None = None) -> Client:
        user = User.objects.create_user(username)  # no password: hashing one is slow
        if group:
            user.groups.add(Group.objects.get(name=group))
        client = Client()
        client.force_login(user)
        client.user = user  # type: ignore[attr-defined]
        return client

    return make


@pytest.fixture
def observer(login) -> Client:
    return login("odile", "observer")


@pytest.fixture
def viewer(login) -> Client:
    return login("vera", "viewer")


@pytest.fixture
def operator(login) -> Client:
    return login("otto", "operator")


@pytest.fixture
def admin(login) -> Client:
    return login("ada", "admin")


@pytest.fixture
def outsider(login) -> Client:
    """Logged in, but in no group: no role at all."""
    return login("olga")


@pytest.fixture
def anon() -> Client:
    return Client()


@pytest.fixture
def as_role(request: pytest.FixtureRequest) -> Callable[[str], Client]:
    """``as_role("operator")``: that role's client, for tests parametrized by role."""
    return lambda role: request.getfixturevalue(role)


class Wire:
    """Redis round trips, counted on the wire: every write of a packed command (one
    command, or a whole pipeline) to a Redis socket is one."""

    def __init__(self) -> None:
        self.sends = 0


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch, r: redis.Redis) -> Iterator[Wire]:
    """Counting from a Redis that has every script of the client in its cache, as a
    running console's has: a NOSCRIPT retry (after another test flushed the cache) is
    no round trip of the code under test."""
    for script in vars(scripts).values():
        if isinstance(script, scripts.Script):
            r.script_load(script.source)
    wire = Wire()
    send = AbstractConnection.send_packed_command

    def counting(self, command, check_health=True):
        wire.sends += 1
        return send(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)
    yield wire


TOKEN = "s3cret-scrape-token"


@pytest.fixture
def token(settings) -> str:
    """The bearer token of /metrics and the JSON API."""
    settings.RSMQ_METRICS_TOKEN = TOKEN
    return TOKEN
