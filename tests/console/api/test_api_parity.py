"""Every route of the API's table (dashboard/api/routes.py), for its success and each
class of error that can reach it (400, 401, 403, 404, 409, 413, 429, 503), sent through
the served application twice — with its fast path, and with Django answering everything —
from the same state of Redis: the same status, every header but Date, the same body and
the same audit rows. A value the server makes anew on each call (a new message's id, an
undo token, a job's or an annotation's number, a time) may differ between the two, and
only in its place and in its form."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import redis
from django.utils import timezone
from redis.connection import AbstractConnection
from support.asgi import Answer, Served
from support.asgi import console as served_console

from dashboard.access import tokens
from dashboard.api import routes
from dashboard.audit import drain
from dashboard.celery import app as celery_app
from dashboard.models import Annotation, AuditEntry, BulkJob, UndoEntry
from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db(transaction=True)

LIMIT = 4000  # DATA_UPLOAD_MAX_MEMORY_SIZE here: a body past it is a 413


@dataclass
class Case:
    method: str
    path: str  # under the place's prefix
    body: bytes | Any = b""
    token: str | None = "admin"  # a token's name (World.tokens), None: no Authorization
    query: str = ""
    content_type: str = ""
    down: bool = False  # Redis unreachable
    #: whether the fast path is to answer it itself (the plain calls' successes and the
    #: errors their scripts meet)
    fast: bool = False


@dataclass
class World:
    ns: str
    rsmq: RedisSMQ
    r: redis.Redis
    tokens: dict[str, str]
    ids: dict[str, str] = field(default_factory=dict)
    undo: str = ""
    job: int = 0


@pytest.fixture
def world(
    console, rsmq: RedisSMQ, r: redis.Redis, ns: str, settings, monkeypatch, broker_url: str
) -> World:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    monkeypatch.setattr(celery_app.conf, "broker_url", broker_url)  # a job's task: queued
    # The tokens stay read for the whole test: each case's fast call finds its token.
    monkeypatch.setattr(tokens, "CACHE_TTL", 3600)
    made = {
        "admin": tokens.mint("parity-admin", "admin", "test", 1_000_000)[1],
        "viewer": tokens.mint("parity-viewer", "viewer", "test", 1_000_000)[1],
        "spent": tokens.mint("parity-spent", "admin", "test", 0)[1],
        "unknown": "rsmq_" + "x" * 43,
        # scoped (dashboard/access/grants.py): to the world's queues, to none of them, and
        # one whose time is up
        "inside": tokens.mint(
            "parity-inside", "admin", "test", 1_000_000, queues="q1,q2,gone,spoiled,nope,new"
        )[1],  # fmt: skip
        "elsewhere": tokens.mint(
            "parity-elsewhere", "admin", "test", 1_000_000, queues="billing-*"
        )[1],  # fmt: skip
        "expired": tokens.mint(
            "parity-expired",
            "admin",
            "test",
            1_000_000,
            expires_at=timezone.now() - dt.timedelta(seconds=1),
        )[1],  # fmt: skip
    }
    w = World(ns, rsmq, r, made)
    rsmq.create_queue("q1", maxsize=2048)
    rsmq.create_queue("q2")
    rsmq.create_queue("gone")
    first, second, later = rsmq.send_messages("q1", ["first", '{"n": 2}', "later"])
    # Received once and visible again: their first receive (fr) is fixed, whoever receives.
    rsmq.receive_messages("q1", 3, vt=0)
    rsmq.change_message_visibility("q1", later, 3600)
    w.ids = {"first": first, "second": second, "later": later}
    spoiled = "spoiled"
    rsmq.create_queue(spoiled)
    r.hset(f"{ns}:{spoiled}:Q", "vt", "abc")  # another client's bad write
    # An undo to undo, and a counted job to read and confirm.
    from support.asgi import console as make

    setup = make(fast=False)
    rsmq.send_messages("gone", ["kept", "for", "undo"])
    kept = setup("POST", "/api/queues/gone/purge/", token=made["admin"])
    w.undo = kept.json()["undo"]
    job = setup("POST", "/api/queues/q1/jobs/", {"kind": "delete"}, token=made["admin"])
    w.job = job.json()["id"]
    BulkJob.objects.filter(pk=w.job).update(state=BulkJob.State.COUNTED, matched=2)
    setup.close()
    return w


def cases(w: World) -> dict[str, list[tuple[str, Case]]]:
    """Each route's cases, by its name in the table: (label, case)."""
    ids, job = w.ids, w.job

    def common(method: str, path: str, acting: bool, body: Any = b"") -> list[tuple[str, Case]]:
        out = [
            ("401", Case(method, path, body, token=None)),
            ("401 unknown", Case(method, path, body, token="unknown")),
            ("429", Case(method, path, body, token="spent")),
            ("413", Case(method, path, b"x" * (LIMIT + 1), content_type="application/json")),
            ("503", Case(method, path, body, down=True)),
            # a queue out of the token's scope: a queue that does not exist (Django's)
            ("404 out of scope", Case(method, path, body, token="elsewhere")),
            ("401 expired", Case(method, path, body, token="expired")),
        ]
        if acting:
            out.append(("403", Case(method, path, body, token="viewer")))
        return out

    send = {"message": "hello"}
    plain = {
        "send": [
            ("201", Case("POST", "/queues/q1/messages/", send, fast=True)),
            (
                "201 batch",
                Case("POST", "/queues/q1/messages/", {"messages": ["a", "b"]}, fast=True),
            ),
            ("400", Case("POST", "/queues/q1/messages/", {"message": 1})),
            ("400 both", Case("POST", "/queues/q1/messages/", {"message": "a", "messages": ["b"]})),
            (
                "400 too long",
                Case("POST", "/queues/q1/messages/", {"message": "x" * 3000}, fast=True),
            ),
            ("400 unknown field", Case("POST", "/queues/q1/messages/", {"message": "a", "x": 1})),
            ("404", Case("POST", "/queues/nope/messages/", send, fast=True)),
            ("404 name", Case("POST", "/queues/bad!name/messages/", send)),
            *common("POST", "/queues/q1/messages/", True, send),
        ],
        "receive": [
            ("200", Case("POST", "/queues/q1/receive/", {"n": 2, "vt": 30}, fast=True)),
            ("200 no body", Case("POST", "/queues/q1/receive/", fast=True)),
            ("200 none", Case("POST", "/queues/q2/receive/", fast=True)),
            ("400", Case("POST", "/queues/q1/receive/", {"n": 0}, fast=True)),
            ("400 type", Case("POST", "/queues/q1/receive/", {"n": "two"})),
            ("404", Case("POST", "/queues/nope/receive/", fast=True)),
            ("409", Case("POST", "/queues/spoiled/receive/", fast=True)),
            *common("POST", "/queues/q1/receive/", True),
        ],
        "delete_message": [
            ("200", Case("DELETE", f"/queues/q1/messages/{ids['first']}/", fast=True)),
            ("200 not there", Case("DELETE", f"/queues/q1/messages/{'a' * 32}/", fast=True)),
            ("400", Case("DELETE", "/queues/q1/messages/not-an-id/", fast=True)),
            ("404", Case("DELETE", f"/queues/nope/messages/{ids['first']}/", fast=True)),
            *common("DELETE", f"/queues/q1/messages/{ids['first']}/", True),
        ],
        "change_visibility": [
            (
                "200",
                Case(
                    "POST", f"/queues/q1/messages/{ids['later']}/visibility/", {"vt": 0}, fast=True
                ),
            ),  # fmt: skip
            (
                "400",
                Case(
                    "POST", f"/queues/q1/messages/{ids['later']}/visibility/", {"vt": -1}, fast=True
                ),
            ),  # fmt: skip
            ("400 missing", Case("POST", f"/queues/q1/messages/{ids['later']}/visibility/", {})),
            *common("POST", f"/queues/q1/messages/{ids['later']}/visibility/", True, {"vt": 0}),
        ],
        "rest_rsmq_send_message": [
            ("200", Case("POST", "/messages/q1", send, fast=True)),
            (
                "200 form",
                Case(
                    "POST",
                    "/messages/q1",
                    b"message=hi",
                    content_type="application/x-www-form-urlencoded",
                ),
            ),  # fmt: skip
            ("400", Case("POST", "/messages/q1", {"message": "a", "qname": "q2"})),
            ("404", Case("POST", "/messages/nope", send, fast=True)),
            *common("POST", "/messages/q1", True, send),
        ],
        "rest_rsmq_receive_message": [
            ("200", Case("GET", "/messages/q1", query="vt=30", fast=True)),
            ("200 empty", Case("GET", "/messages/q2", fast=True)),
            ("400", Case("GET", "/messages/q1", query="vt=abc")),
            ("404", Case("GET", "/messages/nope", fast=True)),
            *common("GET", "/messages/q1", True),
        ],
        "rest_rsmq_delete_message": [
            ("200", Case("DELETE", f"/messages/q1/{ids['first']}", fast=True)),
            ("404", Case("DELETE", f"/messages/nope/{ids['first']}", fast=True)),
            *common("DELETE", f"/messages/q1/{ids['first']}", True),
        ],
    }
    for name in (
        "rest_rsmq_change_message_visibility",
        "rest_rsmq_change_message_visibility_plural",
    ):
        verb = "/message" if name.endswith("visibility") else "/messages"
        at = f"{verb}/q1/{ids['later']}"
        plain[name] = [
            ("200", Case("PUT", at, query="vt=0", fast=True)),
            ("400", Case("PUT", at)),
            ("400 value", Case("PUT", at, query="vt=-5", fast=True)),
            *common("PUT", at, True),
        ]
    # each plain call's success by a token scoped to its queue: the fast path's too
    for listed in plain.values():
        label, first = listed[0]
        listed.append((f"{label} scoped", dataclasses.replace(first, token="inside")))
    job_path = f"/queues/q1/jobs/{job}/"
    other = {
        "list_queues": [("200", Case("GET", "/queues/")), *common("GET", "/queues/", False)],
        "describe_queue": [
            ("200", Case("GET", "/queues/q1/")),
            ("404", Case("GET", "/queues/nope/")),
            ("409", Case("GET", "/queues/spoiled/")),
            *common("GET", "/queues/q1/", False),
        ],
        "queue_failures": [
            ("200", Case("GET", "/queues/q1/failures/")),
            *common("GET", "/queues/q1/failures/", False),
        ],  # fmt: skip
        "queue_messages": [
            ("200", Case("GET", "/queues/q1/messages/", query="state=all")),
            ("400", Case("GET", "/queues/q1/messages/", query="rc=many")),
            *common("GET", "/queues/q1/messages/", False),
        ],
        "create_queue": [
            ("201", Case("PUT", "/queues/new/", {"vt": 5})),
            ("400", Case("PUT", "/queues/new/", {"vt": -1})),
            ("409", Case("PUT", "/queues/q1/")),
            *common("PUT", "/queues/new/", True),
        ],
        "delete_queue": [
            ("200", Case("DELETE", "/queues/q2/")),
            ("404", Case("DELETE", "/queues/nope/")),
            *common("DELETE", "/queues/q2/", True),
        ],  # fmt: skip
        "purge_queue": [
            ("200", Case("POST", "/queues/q1/purge/")),
            ("404", Case("POST", "/queues/nope/purge/")),
            *common("POST", "/queues/q1/purge/", True),
        ],  # fmt: skip
        "undo": [
            ("200", Case("POST", f"/undo/{w.undo}/")),
            ("404", Case("POST", f"/undo/{'0' * 32}/")),
            *common("POST", f"/undo/{w.undo}/", True),
        ],  # fmt: skip
        "requeue": [
            ("200", Case("POST", "/queues/q1/requeue/", {"ids": [ids["later"]]})),
            ("400", Case("POST", "/queues/q1/requeue/", {"ids": "x"})),
            *common("POST", "/queues/q1/requeue/", True, {"ids": [ids["later"]]}),
        ],
        "move": [
            ("200", Case("POST", "/queues/q1/move/", {"ids": [ids["later"]], "to": "q2"})),
            ("400", Case("POST", "/queues/q1/move/", {"ids": [ids["later"]], "to": "bad!"})),
            ("404", Case("POST", "/queues/q1/move/", {"ids": [ids["later"]], "to": "nope"})),
            *common("POST", "/queues/q1/move/", True, {"ids": [ids["later"]], "to": "q2"}),
        ],
        "resend_message": [
            (
                "201",
                Case(
                    "POST",
                    f"/queues/q1/messages/{ids['second']}/resend/",
                    {"message": "edited", "delete_original": True},
                ),
            ),  # fmt: skip
            (
                "404",
                Case(
                    "POST",
                    f"/queues/q1/messages/{'b' * 32}/resend/",
                    {"message": "edited", "delete_original": True},
                ),
            ),  # fmt: skip
            *common(
                "POST", f"/queues/q1/messages/{ids['second']}/resend/", True, {"message": "edited"}
            ),  # fmt: skip
        ],
        "export_messages": [
            ("200", Case("GET", "/queues/q1/export/", query="state=all")),
            ("400", Case("GET", "/queues/q1/export/", query="state=sideways")),
            ("404", Case("GET", "/queues/nope/export/")),
            *common("GET", "/queues/q1/export/", False),
        ],
        "import_messages": [
            (
                "200",
                Case(
                    "POST",
                    "/queues/q2/import/",
                    b'{"body": "imported"}\n',
                    content_type="application/x-ndjson",
                ),
            ),  # fmt: skip
            (
                "400",
                Case(
                    "POST", "/queues/q2/import/", b"no json\n", content_type="application/x-ndjson"
                ),
            ),  # fmt: skip
            *common("POST", "/queues/q2/import/", True, b'{"body": "imported"}\n'),
        ],
        "job_start": [
            ("201", Case("POST", "/queues/q1/jobs/", {"kind": "delete", "search": "first"})),
            ("400", Case("POST", "/queues/q1/jobs/", {"kind": "explode"})),
            *common("POST", "/queues/q1/jobs/", True, {"kind": "delete"}),
        ],
        "job_read": [
            ("200", Case("GET", job_path)),
            ("404", Case("GET", "/queues/q1/jobs/999999/")),
            *common("GET", job_path, False),
        ],  # fmt: skip
        "job_control": [
            ("200", Case("POST", job_path + "confirm/", {"confirm": "q1"})),
            ("400", Case("POST", job_path + "confirm/", {"confirm": "q2"})),
            ("404", Case("POST", job_path + "explode/")),
            *common("POST", job_path + "pause/", True),
        ],
        # pause / throttle / resume, and what is coming due (api/flow.py)
        "pause_queue": [
            ("200", Case("POST", "/queues/q1/pause/", {"reason": "deploy", "duration": "1h"})),
            ("200 no body", Case("POST", "/queues/q1/pause/")),
            ("400", Case("POST", "/queues/q1/pause/", {"duration": "soon"})),
            ("404", Case("POST", "/queues/nope/pause/")),
            *common("POST", "/queues/q1/pause/", True, {"reason": "deploy"}),
        ],
        "throttle_queue": [
            ("200", Case("POST", "/queues/q1/throttle/", {"rate": 5, "reason": "slow"})),
            ("400", Case("POST", "/queues/q1/throttle/", {"rate": 0})),
            ("400 missing", Case("POST", "/queues/q1/throttle/", {})),
            ("404", Case("POST", "/queues/nope/throttle/", {"rate": 5})),
            *common("POST", "/queues/q1/throttle/", True, {"rate": 5}),
        ],
        "resume_queue": [
            ("200", Case("POST", "/queues/q1/resume/")),
            ("404", Case("POST", "/queues/nope/resume/")),
            *common("POST", "/queues/q1/resume/", True),
        ],
        "queue_flow": [
            ("200", Case("GET", "/queues/q1/flow/")),
            ("404", Case("GET", "/queues/nope/flow/")),
            *common("GET", "/queues/q1/flow/", False),
        ],
        "queue_due": [
            ("200", Case("GET", "/queues/q1/due/", query="scale=minute")),
            ("400", Case("GET", "/queues/q1/due/", query="scale=week")),
            ("404", Case("GET", "/queues/nope/due/")),
            *common("GET", "/queues/q1/due/", False),
        ],
        "create_annotation": [
            ("201", Case("POST", "/annotations/", {"text": "deploy 42", "queue": "q1"})),
            ("400", Case("POST", "/annotations/", {"text": ""})),
            *common("POST", "/annotations/", True, {"text": "deploy"}),
        ],
        "rest_rsmq_list_queues": [
            ("200", Case("GET", "/queues")),
            *common("GET", "/queues", False),
        ],  # fmt: skip
        "rest_rsmq_get_queue_attributes": [
            ("200", Case("GET", "/queues/q1")),
            ("404", Case("GET", "/queues/nope")),
            *common("GET", "/queues/q1", False),
        ],  # fmt: skip
        "rest_rsmq_create_queue": [
            ("200", Case("POST", "/queues/new", {"vt": 5})),
            ("409", Case("POST", "/queues/q1")),
            *common("POST", "/queues/new", True),
        ],  # fmt: skip
        "rest_rsmq_delete_queue": [
            ("200", Case("DELETE", "/queues/q2")),
            *common("DELETE", "/queues/q2", True),
        ],  # fmt: skip
    }
    return {**plain, **other}


def test_every_route_of_the_table_has_its_cases(world: World) -> None:
    assert set(cases(world)) == {route.name for route in routes.TABLE}


#: where a value the server makes anew may stand in an answer, and its form
ID = re.compile(r"[0-9a-zA-Z]{32}")
TIME = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(\+00:00|Z)")
MADE = {
    "id": re.compile(r"[0-9a-zA-Z]{32}|\d+"), "ids": ID, "new_id": ID, "first_id": ID,
    "last_id": ID, "undo": re.compile(r"[0-9a-f]{32}"),
    "at": TIME, "now": TIME, "read_at": TIME, "job": re.compile(r"\d+"),
    # how long ago, or how long ahead, as the call is made
    "oldest_age": re.compile(r"[\d.]+"), "delay_ms": re.compile(r"\d+"),
    "token": re.compile(r"[0-9a-f]{32}"),
    # a flag's times (pause, throttle: api/flow.py; its audit row's until: epoch ms)
    "since": TIME, "until": re.compile(TIME.pattern + r"|\d{13}"), "last_held": TIME,
    "start": TIME, "end": TIME,
}  # fmt: skip


#: what a text says of a moment or of a number made anew: the seconds to wait, a job
TIMELY = [(re.compile(r"(try again in )\d+( s)"), r"\1N\2"), (re.compile(r"\bjob \d+"), "job N")]


def timeless(text: str) -> str:
    for pattern, put in TIMELY:
        text = pattern.sub(put, text)
    return text


def alike(a: Any, b: Any, key: str = "") -> bool:
    """Equal, but for values the server made anew in the places MADE names, in its form,
    and the moments and numbers TIMELY finds in texts."""
    if isinstance(a, str) and isinstance(b, str) and timeless(a) == timeless(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(alike(a[k], b[k], k) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(alike(x, y, key) for x, y in zip(a, b, strict=True))
    if a == b:
        return True
    form = MADE.get(key)
    return form is not None and bool(form.fullmatch(str(a))) and bool(form.fullmatch(str(b)))


def body_of(answer: Answer) -> Any:
    kind = answer.header("content-type") or ""
    if kind.startswith("application/json"):
        return answer.json()
    if "ndjson" in kind:
        import json

        return [json.loads(line) for line in answer.body.splitlines()]
    return answer.body


def audit_rows(after: int) -> list[dict[str, Any]]:
    drain._drainer.submit(lambda: None).result()  # a drain handed to its thread: done
    drain.drain()
    return [
        {k: v for k, v in row.items() if k not in ("id", "at", "record")}
        for row in AuditEntry.objects.filter(id__gt=after).order_by("id").values()
    ]


class Run:
    """One case through one application, from the world's state, which is put back after."""

    def __init__(self, w: World, settings: Any, redis_url: str) -> None:
        self.w, self.settings, self.redis_url = w, settings, redis_url
        self.dead = free_port()  # where Redis is down (nothing listens)
        self.saved = {k: (w.r.dump(k), w.r.pttl(k)) for k in w.r.keys(f"{w.ns}*")}
        self.marks = {m: m.objects.order_by("-id").values_list("id", flat=True).first() or 0
                      for m in (AuditEntry, UndoEntry, BulkJob, Annotation)}  # fmt: skip
        self.job = BulkJob.objects.filter(pk=w.job).values().get()
        self.undo = UndoEntry.objects.filter(token=w.undo).values().get()

    def __call__(self, app: Served, case: Case, prefix: str) -> tuple[Answer, list[dict[str, Any]]]:
        headers = [("content-type", case.content_type)] if case.content_type else []
        token = self.w.tokens[case.token] if case.token else None
        if case.down:
            dead = f"redis://127.0.0.1:{self.dead}/0"
            self.settings.RSMQ_CONNECTIONS = [{**self.settings.RSMQ_CONNECTIONS[0], "url": dead}]
        try:
            answer = app(case.method, "/api" + prefix + case.path, case.body, headers=headers,
                         token=token, query=case.query)  # fmt: skip
        finally:
            if case.down:
                self.settings.RSMQ_CONNECTIONS = [
                    {**self.settings.RSMQ_CONNECTIONS[0], "url": self.redis_url}
                ]
        rows = audit_rows(self.marks[AuditEntry])
        self.restore()
        return answer, rows

    def restore(self) -> None:
        r = self.w.r
        gone = [k for k in r.keys(f"{self.w.ns}*") if k not in self.saved]
        if gone:
            r.delete(*gone)
        for key, (value, ttl) in self.saved.items():
            r.restore(key, max(ttl, 0), value, replace=True)
        for model, mark in self.marks.items():
            model.objects.filter(id__gt=mark).delete()
        BulkJob.objects.filter(pk=self.w.job).update(**self.job)
        UndoEntry.objects.filter(token=self.w.undo).update(**self.undo)


def every_case(w: World) -> Iterator[tuple[str, str, Case, str]]:
    """Each case at both of its route's prefixes (the first place's, and one naming it)."""
    for name, listed in cases(w).items():
        route = next(r for r in routes.TABLE if r.name == name)
        first, named = route.prefixes
        for label, case in listed:
            for prefix in (first, named.format(conn="default", ns=w.ns)):
                yield name, label, case, prefix


def test_the_fast_path_and_django_answer_every_route_alike(
    world: World, settings, redis_url: str, r: redis.Redis
) -> None:
    fast, django = served_console(fast=True), served_console(fast=False)
    try:
        for name in ("admin", "inside"):  # its tokens: read
            fast("GET", "/api/rest-rsmq/queues", token=world.tokens[name])
        run = Run(world, settings, redis_url)
        differ: list[str] = []
        checked: Callable[[str], None] = differ.append
        for name, label, case, place in every_case(world):
            a, rows_a = run(fast, case, place)
            b, rows_b = run(django, case, place)
            where = f"{name} {label} at {place or '/'}"
            if a.fast != case.fast:
                checked(f"{where}: the fast path answered: {a.fast}, expected {case.fast}")
            if a.status != b.status:
                checked(f"{where}: status {a.status} != {b.status} ({a.body[:200]!r})")
                continue
            # The lengths of bodies alike() finds equal may differ (a 429's "try again in
            # 9 s" and "10 s"): each answer's length is its own body's, checked here.
            made = ("date", "retry-after", "content-length")
            heads_a = sorted(h for h in a.headers if h[0] not in made)
            heads_b = sorted(h for h in b.headers if h[0] not in made)
            for answer in (a, b):
                length = answer.header("content-length")
                if length is not None and int(length) != len(answer.body):
                    checked(f"{where}: Content-Length {length}, body {len(answer.body)}")
            if (a.header("content-length") is None) != (b.header("content-length") is None):
                checked(f"{where}: Content-Length {a.header('content-length')} "
                        f"{b.header('content-length')}")  # fmt: skip
            if bool(a.header("retry-after")) != bool(b.header("retry-after")):
                checked(f"{where}: Retry-After {a.header('retry-after')} {b.header('retry-after')}")
            if heads_a != heads_b:
                checked(f"{where}: headers {heads_a} != {heads_b}")
            if not alike(body_of(a), body_of(b)):
                checked(f"{where}: body {a.body[:300]!r} != {b.body[:300]!r}")
            if not alike(rows_a, rows_b):
                checked(f"{where}: audit rows {rows_a} != {rows_b}")
        assert not differ, "\n".join(differ)
    finally:
        fast.close()
        django.close()


def test_no_sync_redis_call_runs_in_the_event_loop(
    world: World, settings, redis_url: str, monkeypatch
) -> None:
    """Every route and error class of the parity test through the served application:
    the sync Redis client is never called from the event loop's thread (one slow call
    there would stall every request of the process)."""
    served = served_console()
    in_loop: list[str] = []
    real = AbstractConnection.send_packed_command

    def guarded(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        if threading.get_ident() == served.thread.ident:
            in_loop.append(repr(command)[:200])
        real(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", guarded)
    try:
        served("GET", "/api/rest-rsmq/queues", token=world.tokens["admin"])
        run = Run(world, settings, redis_url)
        fast = 0
        for _, _, case, prefix in every_case(world):
            answer, _ = run(served, case, prefix)
            fast += answer.fast
    finally:
        served.close()
    assert fast > 50  # the fast path answered its calls
    assert not in_loop, in_loop


def test_the_guard_sees_a_sync_call_in_the_loop(console, rsmq: RedisSMQ, monkeypatch) -> None:
    """The check above can fail: a sync call made from the loop's thread is seen."""
    served = served_console()
    seen: list[int] = []
    real = AbstractConnection.send_packed_command

    def guarded(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        seen.append(threading.get_ident() == served.thread.ident)
        real(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", guarded)
    try:
        asyncio.run_coroutine_threadsafe(_sync_ping(rsmq), served.loop).result(10)
    finally:
        served.close()
    assert True in seen


async def _sync_ping(rsmq: RedisSMQ) -> None:
    rsmq.redis.ping()
