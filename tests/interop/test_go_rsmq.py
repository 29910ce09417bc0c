"""A queue made and fed by go-rsmq (its writes replayed command for command, see
tests/support/go_rsmq.py) reads like any other: its attributes in the forms the port
writes (RFC 3339 ``created``, a ``createdby`` field) are readable, never "unreadable";
its messages' ids have no time in them, so they carry no sent time — on the console's
pages, the API, the CLI and the snapshot; what its deletes leave behind is counted and
cleaned up without touching a live message."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
import redis
from support.go_rsmq import GoRsmq

from queues import RedisSMQ
from queues.cli import main as cli_main
from queues.server import EmbeddedRedis


@pytest.fixture
def raw(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def go(raw: redis.Redis, ns: str) -> GoRsmq:
    return GoRsmq(raw, ns)


@pytest.fixture
def fed(go: GoRsmq, raw: redis.Redis) -> list[str]:
    """A go queue with three messages, one received once."""
    go.create_queue("go")
    ids = [go.send_message("go", f"job {i}") for i in range(3)]
    assert go.receive_message("go", vt=600) is not None
    return ids


def test_its_attributes_are_read_as_it_writes_them(
    rsmq: RedisSMQ, raw: redis.Redis, ns: str, fed: list[str]
) -> None:
    created = raw.hget(f"{ns}:go:Q", "created").decode()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", created)
    now = raw.time()[0]
    a = rsmq.get_queue_attributes("go")
    assert abs(a.created - now) <= 2 and a.modified == a.created
    assert (a.vt, a.delay, a.maxsize, a.totalsent, a.totalrecv) == (30, 0, 65536, 3, 1)
    assert (a.msgs, a.hiddenmsgs) == (3, 1)
    (s,) = rsmq.queue_stats(["go"])
    assert s.unreadable is None
    assert (s.msgs, s.visible, s.inflight, s.delayed) == (3, 2, 1, 0)


@pytest.mark.parametrize(
    ("created", "expected"),
    [
        ("1700000000", 1700000000),  # epoch s: the original, PyRSMQ
        ("1700000000123", 1700000000),  # epoch ms: the seed's post of go-rsmq
        ("2023-11-14T22:13:20Z", 1700000000),
        ("2023-11-14T22:13:20.123456789Z", 1700000000),
        ("2023-11-15T00:13:20+02:00", 1700000000),
        ("2023-11-14 22:13:20", 1700000000),
    ],
)
def test_created_in_any_form_a_port_writes(
    rsmq: RedisSMQ, raw: redis.Redis, ns: str, created: str, expected: int
) -> None:
    rsmq.create_queue("q")
    raw.hset(f"{ns}:q:Q", mapping={"created": created, "modified": created, "createdby": "x"})
    assert rsmq.get_queue_attributes("q").created == expected
    (s,) = rsmq.queue_stats(["q"])
    assert (s.unreadable, s.created, s.modified) == (None, expected, expected)


def test_a_time_that_is_no_form_is_still_unreadable(
    rsmq: RedisSMQ, raw: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    raw.hset(f"{ns}:q:Q", "created", "yesterday")
    (s,) = rsmq.queue_stats(["q"])
    assert s.unreadable == "created is 'yesterday', not a number"


def test_its_messages_carry_no_made_up_sent_time(rsmq: RedisSMQ, fed: list[str]) -> None:
    b = rsmq.browse("go", limit=10)
    assert sorted(m.id for m in b.items) == sorted(fed)
    assert all(m.sent is None for m in b.items)
    assert [m.visible_at for m in b.items] == sorted(m.visible_at for m in b.items)
    page = rsmq.list_messages("go", limit=10)
    assert all(m.sent is None for m in page.items)
    s = rsmq.census_range("go", 0, 10)
    assert s.sent == [None, None, None]
    (stats,) = rsmq.queue_stats(["go"])
    assert stats.oldest_sent is None and stats.oldest_age is None  # no wait time made up
    # a message of this client in the same queue keeps its time
    mine = rsmq.send_message("go", "mine")
    got = {m.id: m.sent for m in rsmq.browse("go", limit=10).items}
    assert (
        got[mine] is not None
        and abs(got[mine] / 1000 - rsmq.get_queue_attributes("go").modified) < 86400 * 365
    )


def test_what_its_deletes_leave_behind_is_counted_and_cleaned(
    rsmq: RedisSMQ, go: GoRsmq, raw: redis.Redis, ns: str, fed: list[str]
) -> None:
    assert rsmq.orphans("go").fields == 0
    go.delete_message("go", fed[0])
    assert raw.hexists(f"{ns}:go:Q", fed[0])  # the body stays: an orphan
    o = rsmq.orphans("go")
    assert (o.fields, o.bytes) == (1, len("job 0"))
    before = {k: v for k, v in raw.hgetall(f"{ns}:go:Q").items() if k != fed[0].encode()}
    assert rsmq.clean_orphans("go").fields == 1
    assert raw.hgetall(f"{ns}:go:Q") == before  # only the orphan went; createdby stays
    assert rsmq.orphans("go").fields == 0
    assert sorted(m.message for m in rsmq.browse("go", limit=10).items) == ["job 1", "job 2"]

    go.delete_queue("go")
    assert raw.exists(f"{ns}:go:Q")
    assert rsmq.is_leftover_queue("go")
    rsmq.create_queue("live")
    assert not rsmq.is_leftover_queue("live")
    assert rsmq.clean_leftover_queue("live") is False  # a live queue is never one
    assert rsmq.clean_leftover_queue("go") is True
    assert not raw.exists(f"{ns}:go:Q") and not rsmq.is_leftover_queue("go")
    assert rsmq.list_queues() == ["live"]


def test_the_clean_up_never_takes_a_live_messages_field(
    rsmq: RedisSMQ, raw: redis.Redis, ns: str
) -> None:
    """Field names a live message owns, or the queue's own, are never orphans, however
    they look."""
    rsmq.create_queue("q")
    live = rsmq.send_message("q", "live")
    rsmq.receive_message("q", vt=600)  # rc and fr fields
    raw.hset(f"{ns}:q:Q", mapping={"createdby": "go", "x:dlq": "", "short": "1"})
    before = raw.hgetall(f"{ns}:q:Q")
    assert rsmq.clean_orphans("q").fields == 0
    assert raw.hgetall(f"{ns}:q:Q") == before and live.encode() in before


def test_the_cli_shows_it(redis_url: str, ns: str, fed: list[str], capsys) -> None:
    assert cli_main(["--url", redis_url, "--ns", ns, "queue", "describe", "-n", "go"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["msgs"] == 3 and d.get("unreadable") is None and d["created"] > 1_600_000_000
    assert cli_main(["--url", redis_url, "--ns", ns, "message", "list", "-n", "go"]) == 0
    out = json.loads(capsys.readouterr().out)
    items = out["items"] if isinstance(out, dict) else out
    assert len(items) == 3 and all(m["sent"] is None for m in items)


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """A redis-server of this module's own: a look for left-over hashes SCANs the whole
    database (LEFTOVER_SCAN_STEPS steps at most), so the session's shared one, holding
    every other test's keys, could make it stop at its bound."""
    with EmbeddedRedis(tmp_path_factory.mktemp("leftovers")) as s:
        yield s


def test_the_look_for_left_over_hashes_finds_them_among_many_queues(own: EmbeddedRedis) -> None:
    raw = redis.Redis.from_url(own.url)
    rsmq = RedisSMQ(url=own.url, ns="lo")
    go = GoRsmq(raw, "lo")
    other = GoRsmq(raw, "other")  # another namespace's left-over hash is not this one's
    for i in range(1200):
        go.create_queue(f"q{i}")
    for i in range(0, 1200, 100):
        go.delete_queue(f"q{i}")
    other.create_queue("x")
    other.delete_queue("x")
    left = rsmq.leftover_queues()
    assert left.complete and left.names == sorted(f"q{i}" for i in range(0, 1200, 100))
    assert rsmq.clean_leftover_queue("q100") and "q100" not in rsmq.leftover_queues().names
    assert RedisSMQ(url=own.url, ns="other").leftover_queues().names == ["x"]
    rsmq.close()
    raw.close()
