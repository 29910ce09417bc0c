"""The corruption matrix: one bad record, of many kinds, written with raw redis-py next to
healthy queues. For each kind every surface — overview, queue page (healthy and bad),
message page, API, /metrics, a snapshot and the CLI — shows every healthy queue correctly,
answers without a 500 or a traceback, and names the bad one (issue 10's "Done when")."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dashboard import tasks
from dashboard.models import Snapshot
from dashboard.places.connections import Connection
from dashboard.web.errors import web_error
from queues import RedisSMQ
from queues.cli import main

pytestmark = pytest.mark.django_db

HEALTHY = ("alpha", "omega")
BAD = "bad"


@dataclass(frozen=True)
class Spoiled:
    """What a kind of bad record does: the queue it is in (as listed), whether the whole
    queue reads as unreadable, and the raw message id it left in the queue, if any."""

    queue: str = BAD
    unreadable: bool = True
    odd_id: str | None = None  # a listed message that is no RSMQ id, as the page shows it
    noted_id: str | None = None  # an RSMQ id whose rc / fr / score can't be read

    @property
    def has_page(self) -> bool:
        return self.queue == BAD


@dataclass(frozen=True)
class World:
    r: redis.Redis  # raw, bytes
    ns: str
    ids: list[str]  # the bad queue's two messages: [visible, in flight]


Spoil = Callable[[World], Spoiled]


def field(name: str, value: str | bytes) -> Spoil:
    def spoil(w: World) -> Spoiled:
        w.r.hset(f"{w.ns}:{BAD}:Q", name, value)
        return Spoiled()

    return spoil


def policy(dlq: str | bytes) -> Spoil:
    def spoil(w: World) -> Spoiled:
        w.r.hset(f"{w.ns}:{BAD}:Q", mapping={"x:dlq": dlq, "x:maxrc": 3})
        return Spoiled()

    return spoil


def key_type(suffix: str, write: Callable[[redis.Redis, str], object]) -> Spoil:
    def spoil(w: World) -> Spoiled:
        key = f"{w.ns}:{BAD}{suffix}"
        w.r.delete(key)
        write(w.r, key)
        return Spoiled()

    return spoil


def name(raw: str | bytes) -> Spoil:
    def spoil(w: World) -> Spoiled:
        w.r.sadd(f"{w.ns}:QUEUES", raw)
        shown = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw
        return Spoiled(queue=shown)

    return spoil


def member(raw: str | bytes, body: bytes | None = b"odd body") -> Spoil:
    def spoil(w: World) -> Spoiled:
        w.r.zadd(f"{w.ns}:{BAD}", {raw: 1})
        if body is not None:
            w.r.hset(f"{w.ns}:{BAD}:Q", raw, body)
        shown = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw
        return Spoiled(unreadable=False, odd_id=shown)

    return spoil


def message_field(suffix: str, value: str | bytes) -> Spoil:
    def spoil(w: World) -> Spoiled:
        w.r.hset(f"{w.ns}:{BAD}:Q", w.ids[0] + suffix, value)
        return Spoiled(unreadable=False, noted_id=w.ids[0])

    return spoil


def score(value: float) -> Spoil:
    def spoil(w: World) -> Spoiled:
        w.r.zadd(f"{w.ns}:{BAD}", {w.ids[0]: value})
        return Spoiled(unreadable=False, noted_id=w.ids[0])

    return spoil


def body(value: bytes) -> Spoil:
    def spoil(w: World) -> Spoiled:
        w.r.hset(f"{w.ns}:{BAD}:Q", w.ids[0], value)
        return Spoiled(unreadable=False)

    return spoil


KINDS: dict[str, Spoil] = {
    # the queue's hash: counters and attributes another client wrote as text
    "vt-abc": field("vt", "abc"),
    "vt-nan": field("vt", "nan"),
    "delay-soon": field("delay", "soon"),
    "maxsize-script": field("maxsize", "<script>alert(1)</script>"),
    "created-x": field("created", "x"),
    "modified-inf": field("modified", "inf"),
    "totalsent-lots": field("totalsent", "lots"),
    "totalrecv-fraction": field("totalrecv", "1.5"),
    "totalsent-1e300": field("totalsent", "1e300"),
    "vt-invalid-utf8": field("vt", b"\xff\xfe"),
    "maxrc-many": field("x:maxrc", "many"),
    "dlq-script": policy("<script>alert(1)</script>"),
    "dlq-invalid-utf8": policy(b"\xff\xfedlq"),
    # its keys, of the wrong Redis type
    "hash-is-string": key_type(":Q", lambda r, k: r.set(k, "vt=30")),
    "hash-is-list": key_type(":Q", lambda r, k: r.rpush(k, "vt", "30")),
    "zset-is-string": key_type("", lambda r, k: r.set(k, "x")),
    "zset-is-hash": key_type("", lambda r, k: r.hset(k, "a", "b")),
    # names in the queue set that are no RSMQ queue's
    "name-space": name("my queue"),
    "name-script": name("<script>alert(1)</script>"),
    "name-300-chars": name("q" * 300),
    "name-QUEUES": name("QUEUES"),
    "name-invalid-utf8": name(b"\xff\xfeq"),
    "name-dotdot": name("../etc"),
    # messages: ids that are no RSMQ id, rc / fr / score / body that can't be read
    "id-not-base36": member("not-base-36!"),
    "id-html": member('<img src=x onerror="alert(1)">'),
    "id-dotdot": member("../../etc/passwd"),
    "id-invalid-utf8": member(b"\xff\xfe\xfd"),
    "id-empty": member(""),
    "id-named-vt": member("vt", body=None),
    "id-without-body": member("no body here", body=None),
    "rc-abc": message_field(":rc", "abc"),
    "fr-soon": message_field(":fr", "soon"),
    "fr-huge": message_field(":fr", str(10**17)),
    "rc-invalid-utf8": message_field(":rc", b"\xff"),
    "score-inf": score(float("inf")),
    "score-minus-inf": score(float("-inf")),
    "score-1e300": score(1e300),
    "body-invalid-utf8": body(b"\xff\xfe<b>"),
}


@pytest.fixture
def world(console, lake: Path, redis_url: str, rsmq: RedisSMQ, ns: str, settings) -> World:
    settings.RSMQ_METRICS_TOKEN = "matrix-token"
    for q in (*HEALTHY, BAD):
        rsmq.create_queue(q)
        ids = rsmq.send_messages(q, ["first", "second"])
        rsmq.receive_message(q, vt=600)  # the first is in flight
    client = redis.Redis.from_url(redis_url)
    # the bad queue's visible message first: its rc / fr / score is what gets spoiled
    return World(r=client, ns=ns, ids=[ids[1], ids[0]])


def text(response) -> str:
    assert response.status_code != 500
    return response.content.decode()


def assert_healthy_row(page: str, console, q: str) -> None:
    """The overview's row of a healthy queue: linked, 2 messages, 1 visible, 1 in flight."""
    row = re.search(
        rf'<tr[^>]*>\s*<td class="qname"><a href="{re.escape(console.queue(q))}">{q}</a>(.*?)</tr>',
        page,
        re.S,
    )
    assert row, f"no row for {q}"
    cells = [
        re.sub(r"<[^>]+>", "", c) for c in re.findall(r'<td class="num"[^>]*>(.*?)</td>', row[1])
    ]
    assert cells[:4] == ["2", "1", "1", "0"]


@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
def test_one_bad_record_never_hides_the_healthy_queues(
    kind: Spoil, world: World, console, viewer: Client, redis_url: str, capsys
) -> None:
    bad = kind(world)
    escaped = html.escape(bad.queue)

    # overview: every healthy queue as usual; the bad one named (one row saying why)
    page = text(viewer.get(console.overview()))
    assert viewer.get(console.overview()).status_code == 200
    for q in HEALTHY:
        assert_healthy_row(page, console, q)
    assert escaped in page
    assert ("unreadable: " in page) == bad.unreadable
    assert "<script>alert" not in page and "<img src=x" not in page

    # queue pages: a healthy one in full; the bad one with what it can show, and a note
    for q in HEALTHY:
        healthy = text(viewer.get(console.queue(q)))
        assert 'data-count="msgs"><span class="n">2</span>' in healthy
        assert "data-unreadable" not in healthy
    if bad.has_page:
        lookups = (f"?id={world.ids[1]}", "?id=" + "x" * 32, "?rc=1", "?search=first")
        for query in ("", "?state=visible", "?state=inflight", "?state=delayed", *lookups):
            response = viewer.get(console.queue(BAD, query))
            assert response.status_code in (200, 302), query
        page = text(viewer.get(console.queue(BAD)))
        assert ("data-unreadable" in page) == bad.unreadable
        if bad.odd_id is not None:
            assert '<br><small class="note" data-note>not an RSMQ message id</small>' in page
            assert html.escape(bad.odd_id) in page
        if bad.noted_id:
            assert "data-note" in page

    # message page: a message of the bad queue (its note, if it has one); never a 500
    if bad.has_page:
        shown = bad.noted_id or world.ids[1]
        response = viewer.get(console.message(shown, BAD))
        assert response.status_code in (200, 409)
        if bad.noted_id:
            assert response.status_code == 200 and "data-note" in text(response)
        if response.status_code == 409:
            assert "data the console can&#x27;t read" in text(response)
    for q in HEALTHY:
        mid = console.rsmq.list_messages(q).items[0].id
        assert viewer.get(console.message(mid, q)).status_code == 200

    # API: every queue listed; the healthy ones' counts; the bad one's "unreadable"
    listed = {
        q["name"]: q
        for q in viewer.get("/api/c/default/" + console.ns + "/queues/").json()["queues"]
    }
    for q in HEALTHY:
        assert (listed[q]["msgs"], listed[q]["inflight"], listed[q]["unreadable"]) == (2, 1, None)
    assert (listed[bad.queue]["unreadable"] is not None) == bad.unreadable

    # /metrics: the healthy queues' gauges, up 1, and the bad one's unreadable gauge
    samples = scrape(Client(), console.ns)
    assert samples[("rsmq_up", "")] == 1
    for q in HEALTHY:
        assert samples[("rsmq_queue_messages", q)] == 2
    assert samples.get(("rsmq_queue_unreadable", bad.queue)) == (1 if bad.unreadable else None)

    # a snapshot: a row per healthy queue; the bad queue's only if it could be read
    result = tasks.snapshot()
    stored = dict(Snapshot.objects.filter(namespace=console.ns).values_list("queue", "msgs"))
    assert {q: stored[q] for q in HEALTHY} == {q: 2 for q in HEALTHY}
    assert (bad.queue in stored) == (not bad.unreadable)
    assert result["skipped"] == []

    # the CLI: every name listed; a healthy queue described; the bad one in one line
    capsys.readouterr()
    cli = ["--url", redis_url, "--ns", console.ns]
    assert main([*cli, "queue", "list"]) == 0
    out, err = capsys.readouterr()
    assert all(f'"{q}"' in out for q in HEALTHY) and err == ""
    assert main([*cli, "queue", "describe", "-n", HEALTHY[0]]) == 0
    assert '"msgs": 2' in capsys.readouterr().out
    if bad.has_page:
        for argv in (["queue", "describe"], ["message", "list"], ["message", "receive"]):
            code = main([*cli, *argv, "-n", BAD])
            out, err = capsys.readouterr()
            assert code in (0, 2), argv  # 3 is only for Redis unreachable
            assert "Traceback" not in err and err.count("\n") == (code != 0)
            if code:
                assert err.startswith(f"rsmq: queueUnreadable: Queue {BAD} has data")


def scrape(client: Client, ns: str) -> dict[tuple[str, str], float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer matrix-token")
    assert response.status_code == 200
    samples = {}
    for family in text_string_to_metric_families(response.getvalue().decode()):
        for s in family.samples:
            if s.labels.get("namespace") == ns:
                samples[(s.name, s.labels.get("queue", ""))] = s.value
    return samples


ODD_IDS = {k: v for k, v in KINDS.items() if k.startswith("id-")}


@pytest.mark.parametrize("kind", ODD_IDS.values(), ids=ODD_IDS.keys())
def test_a_listed_message_that_is_no_rsmq_one_can_be_deleted_from_the_page(
    kind: Spoil, world: World, console, operator: Client
) -> None:
    bad = kind(world)
    page = text(operator.get(console.queue(BAD)))
    (value,) = re.findall(r'name="ids" value="(member:[0-9a-f]*)"', page)

    response = operator.post(console.act(BAD), {"action": "delete", "ids": [value]})

    assert response.status_code == 302
    assert [m.note for m in console.rsmq.list_messages(BAD).items] == [None, None]
    assert world.r.hget(f"{world.ns}:{BAD}:Q", "vt") == b"30"
    assert bad.odd_id is not None


def test_a_typed_id_that_is_no_rsmq_id_is_still_refused(world: World, console, operator) -> None:
    member("not-base-36!")(world)

    operator.post(console.act(BAD), {"action": "delete", "ids": ["not-base-36!"]})

    assert len(console.rsmq.list_messages(BAD).items) == 3


def test_a_wrong_type_is_a_data_error_not_an_outage(world: World, console, viewer) -> None:
    key_type("", lambda r, k: r.set(k, "x"))(world)

    response = viewer.get(console.message(world.ids[0], BAD))

    assert response.status_code == 409
    assert "Redis is unavailable" not in text(response)
    assert f"Queue {BAD} has data the console can&#x27;t read" in text(response)


@pytest.mark.parametrize("kind", ["vt-abc", "zset-is-string", "hash-is-list"])
def test_an_admin_can_delete_a_queue_whose_data_cant_be_read(
    kind: str, world: World, console, admin: Client
) -> None:
    KINDS[kind](world)

    admin.post(console.act(BAD), {"action": "delete_queue", "delete-confirm": BAD})

    assert console.rsmq.list_queues() == list(HEALTHY)
    assert world.r.exists(f"{world.ns}:{BAD}", f"{world.ns}:{BAD}:Q") == 0


@pytest.mark.parametrize(
    ("error", "status"),
    [(redis.ResponseError("WRONGTYPE Operation against a key holding the wrong kind"), 409),
     (redis.exceptions.ReadOnlyError("READONLY You can't write against a replica"), 503),
     (redis.exceptions.OutOfMemoryError("OOM command not allowed"), 503),
     (redis.ConnectionError("Connection refused"), 503),
     (redis.TimeoutError("Timeout reading from socket"), 503)],
)  # fmt: skip
def test_only_redis_failing_is_called_unavailable(error: Exception, status: int) -> None:
    answer = web_error(error, Connection("c", "redis://h:6379/0", ("rsmq",)))

    assert answer is not None and answer.status == status
    assert ("Redis is unavailable" in answer.text) == (status == 503)


@pytest.mark.parametrize("kind", ODD_IDS.values(), ids=ODD_IDS.keys())
def test_a_listed_message_that_is_no_rsmq_one_opens_from_the_list(
    kind: Spoil, world: World, console, operator: Client
) -> None:
    """Its link (the member's hex) opens its page with its body, or — past MEMBER_MAX
    bytes — a 404; never a 500."""
    bad = kind(world)
    page = operator.get(console.queue(BAD)).content.decode()
    (url,) = re.findall(r'<a href="([^"]*/m/member:[0-9a-f]*/)">', page)

    response = operator.get(url)

    assert response.status_code in (200, 404)
    if response.status_code == 200:
        assert "data-foreign-id" in response.content.decode()
        body = re.search(r'<pre class="body-full">(.*?)</pre>', response.content.decode(), re.S)
        raw = bytes.fromhex(url.rsplit("member:", 1)[1].rstrip("/"))
        has_body = raw != b"vt" and world.r.hexists(f"{world.ns}:{BAD}:Q", raw)
        # its body; a member named like a queue's own field (vt) never shows that field
        assert body is not None and body[1] == ("odd body" if has_body else "")
    assert bad.odd_id is not None


def test_a_spoiled_attribute_says_so_at_the_top_and_is_not_offered_back_as_zero(
    world: World, console, admin: Client
) -> None:
    """vt another client wrote as text: the queue page says so first, and its Attributes
    form holds no value for Save to write back (the admin types each one)."""
    KINDS["vt-abc"](world)

    page = admin.get(console.queue(BAD)).content.decode()

    head = page.index("data-unreadable-head")
    assert head < page.index('id="consumers"')
    assert "vt is &#x27;abc&#x27;, not a number" in page[head : head + 400]
    vt_input = re.search(r'<input[^>]*id="id_vt"[^>]*>', page)
    assert vt_input is not None and 'value="' not in vt_input[0]
    healthy = admin.get(console.queue(HEALTHY[0])).content.decode()
    assert "data-unreadable-head" not in healthy
    healthy_vt = re.search(r'<input[^>]*id="id_vt"[^>]*>', healthy)
    assert healthy_vt is not None and 'value="30"' in healthy_vt[0]
