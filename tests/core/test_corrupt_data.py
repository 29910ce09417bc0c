"""Data no RSMQ client writes (another client's bug, a hand-made HSET): the core reports
it as data — a row with ``unreadable``, a message with a ``note`` — and every other queue
and message reads as usual. Written with raw redis-py next to healthy queues."""

from __future__ import annotations

import json

import pytest
import redis

from queues import QueueUnreadable, RedisSMQ
from queues.cli import EXIT_DATA, main
from queues.ops import NOT_A_QUEUE

ID = "a" * 32


@pytest.fixture
def three(rsmq: RedisSMQ) -> list[str]:
    """Queues a, b (the one to spoil), c; each with two messages, one in flight."""
    for q in ("a", "b", "c"):
        rsmq.create_queue(q)
        rsmq.send_messages(q, ["one", "two"])
        rsmq.receive_message(q, vt=100)
    return ["a", "b", "c"]


def healthy(rsmq: RedisSMQ, names: list[str]) -> None:
    stats = {s.qname: s for s in rsmq.queue_stats()}
    for q in names:
        s = stats[q]
        assert (s.msgs, s.visible, s.inflight, s.delayed, s.unreadable) == (2, 1, 1, 0, None)
        assert s.totalsent == 2 and s.vt == 30 and s.oldest_sent


@pytest.mark.parametrize(
    ("field", "value"),
    [("vt", "abc"), ("maxsize", "<script>"), ("created", "x"), ("totalsent", "lots"),
     ("delay", "inf"), ("totalrecv", "1.5"), ("modified", "1e300"), ("x:maxrc", "many")],
)  # fmt: skip
def test_a_counter_that_is_not_a_number_is_that_queues_unreadable_row(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str], field: str, value: str
):
    r.hset(f"{ns}:b:Q", field, value)

    (b,) = [s for s in rsmq.queue_stats() if s.qname == "b"]

    assert b.unreadable == f"{field} is '{value}', not a number"
    assert b.msgs == 2  # what can be read still is
    healthy(rsmq, ["a", "c"])


def test_a_key_of_the_wrong_type_is_that_queues_unreadable_row(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str]
):
    r.delete(f"{ns}:b")
    r.set(f"{ns}:b", "not a zset")

    (b,) = [s for s in rsmq.queue_stats() if s.qname == "b"]

    assert b.unreadable == f"{ns}:b is a string, not a zset"
    healthy(rsmq, ["a", "c"])


@pytest.mark.parametrize(
    "name",
    ["my queue", "<script>alert(1)</script>", "q" * 300, "QUEUES", b"\xff\xfe", "../x"],
    ids=["space", "html", "300-chars", "QUEUES", "invalid-utf8", "dotdot"],
)
def test_a_name_in_the_queue_set_that_is_not_a_queue_name_is_listed_and_never_read(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str], name: str | bytes
):
    r.sadd(f"{ns}:QUEUES", name)
    shown = name.decode("utf-8", "backslashreplace") if isinstance(name, bytes) else name

    stats = {s.qname: s for s in rsmq.queue_stats()}
    again = {s.qname: s for s in rsmq.queue_stats()}  # the known-names path

    assert stats[shown].unreadable == again[shown].unreadable == NOT_A_QUEUE
    assert shown in rsmq.list_queues()
    assert rsmq.queue_stats([shown])[0].unreadable == NOT_A_QUEUE
    healthy(rsmq, ["a", "b", "c"])


def test_the_dead_letter_queue_field_that_is_not_a_queue_name_is_reported(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str]
):
    r.hset(f"{ns}:b:Q", mapping={"x:dlq": b"<script>\xff", "x:maxrc": 3})

    (b,) = rsmq.queue_stats(["b"])

    assert b.dlq is None
    assert b.unreadable == "x:dlq is '<script>\\xff', not a queue name"
    assert rsmq.receive_message("b", vt=5) is not None  # the policy can't apply: delivered


@pytest.mark.parametrize(
    ("member", "shown"),
    [("not-base-36!", "not-base-36!"), ("<b>x</b>", "<b>x</b>"), ("../../etc", "../../etc"),
     (b"\xff\xfeid", "\\xff\\xfeid"), ("short", "short")],
)  # fmt: skip
def test_a_member_that_is_not_an_rsmq_id_is_listed_with_a_note_and_can_be_deleted(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str], member: str | bytes, shown: str
):
    r.zadd(f"{ns}:b", {member: 1})
    r.hset(f"{ns}:b:Q", member, "its body")

    items = rsmq.list_messages("b").items
    (odd,) = [m for m in items if m.note]

    assert (odd.id, odd.message, odd.note) == (shown, "its body", "not an RSMQ message id")
    assert odd.member == (member if isinstance(member, bytes) else member.encode())
    assert [s.msgs for s in rsmq.queue_stats(["b"])] == [3]
    assert rsmq.delete_members("b", [odd.member]) == 1
    assert [m.note for m in rsmq.list_messages("b").items] == [None, None]
    assert r.hget(f"{ns}:b:Q", member) is None


def test_deleting_a_member_named_like_a_queue_field_keeps_the_field(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str]
):
    r.zadd(f"{ns}:b", {"vt": 1})

    assert rsmq.delete_members("b", [b"vt"]) == 1
    assert r.hget(f"{ns}:b:Q", "vt") == "30"
    assert rsmq.delete_members("b", [b"never-there"]) == 0


@pytest.mark.parametrize(
    ("field", "value", "note"),
    [(":rc", "abc", "rc is 'abc', not a number"), (":fr", "soon", "fr is 'soon', not a time")],
)
def test_a_receive_count_or_first_receive_that_is_not_a_number_is_a_note(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, field: str, value: str, note: str
):
    rsmq.create_queue("b")
    bad, good = rsmq.send_messages("b", ["bad", "good"])
    r.hset(f"{ns}:b:Q", bad + field, value)

    page = rsmq.list_messages("b")
    one = rsmq.get_message("b", bad)

    assert [m.note for m in page.items] == [note, None]
    assert one is not None and one.note == note
    assert rsmq.census_range("b", 0, 10).ids == [bad, good]


@pytest.mark.parametrize("score", ["inf", "-inf", "1e300"])
def test_a_score_that_is_not_a_time_is_a_note(rsmq: RedisSMQ, r: redis.Redis, ns: str, score: str):
    rsmq.create_queue("b")
    bad, good = rsmq.send_messages("b", ["bad", "good"])
    r.zadd(f"{ns}:b", {bad: float(score)})

    notes = {m.id: m.note for m in rsmq.list_messages("b").items}
    census = rsmq.census_range("b", 0, 10)

    assert notes[good] is None
    assert notes[bad] is not None and notes[bad].endswith("', not a time")  # as Redis shows it
    assert dict(zip(census.ids, census.visible_at, strict=True))[bad] == 0
    assert rsmq.queue_stats(["b"])[0].unreadable is None


def test_receive_leaves_a_message_with_a_bad_receive_count_and_gets_the_next(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    rsmq.create_queue("b")
    bad, good = rsmq.send_messages("b", ["bad", "good"])
    r.hset(f"{ns}:b:Q", bad + ":rc", "abc")

    got = rsmq.receive_message("b", vt=100)

    assert got is not None and got.id == good
    assert rsmq.receive_message("b") is None
    assert rsmq.browse("b", min_rc=1).items[0].id == bad


@pytest.mark.parametrize(
    ("call", "field", "value"),
    [(lambda c: c.get_queue_attributes("b"), "vt", "abc"),
     (lambda c: c.receive_message("b"), "vt", "abc"),
     (lambda c: c.send_message("b", "m"), "maxsize", "<script>"),
     (lambda c: c.send_message("b", "m"), "delay", "soon"),
     (lambda c: c.move_messages("a", "b"), "maxsize", "big")],
)  # fmt: skip
def test_an_operation_that_needs_a_bad_field_raises_queue_unreadable(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str], call, field: str, value: str
):
    r.hset(f"{ns}:b:Q", field, value)

    with pytest.raises(QueueUnreadable) as exc:
        call(rsmq)

    assert exc.value.qname == "b"
    assert f"{field} is '{value}', not a number" in str(exc.value)


def test_an_operation_on_a_key_of_the_wrong_type_raises_queue_unreadable(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str]
):
    r.delete(f"{ns}:b")
    r.set(f"{ns}:b", "x")

    with pytest.raises(QueueUnreadable, match="wrong kind of Redis value"):
        rsmq.list_messages("b")


# -- the CLI: one line and exit 2 for bad data; 3 is only for Redis unreachable ---------


@pytest.mark.parametrize(
    "argv",
    [["queue", "describe", "-n", "b"], ["message", "receive", "-n", "b"],
     ["message", "list", "-n", "b"], ["message", "send", "-n", "b", "-m", "x"]],
)  # fmt: skip
def test_the_cli_says_a_bad_record_in_one_line_and_exits_2(
    redis_url: str, r: redis.Redis, ns: str, three: list[str], argv: list[str], capsys
):
    r.delete(f"{ns}:b:Q")
    r.set(f"{ns}:b:Q", "not a hash")

    code = main(["--url", redis_url, "--ns", ns, *argv])

    err = capsys.readouterr().err
    assert code == EXIT_DATA == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("rsmq: queueUnreadable: Queue b has data that can't be read")


def test_the_cli_lists_a_message_that_is_not_an_rsmq_one_as_json(
    redis_url: str, r: redis.Redis, ns: str, three: list[str], capsys
):
    r.zadd(f"{ns}:b", {b"\xff<x>": 1})

    code = main(["--url", redis_url, "--ns", ns, "message", "list", "-n", "b"])

    items = json.loads(capsys.readouterr().out)["items"]
    assert code == 0
    assert [(m["id"], m["note"]) for m in items if m["note"]] == [
        ("\\xff<x>", "not an RSMQ message id")
    ]


def test_a_queue_with_a_spoiled_counter_can_still_be_emptied_and_deleted(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, three: list[str]
):
    r.hset(f"{ns}:b:Q", "vt", "abc")

    assert rsmq.delete_state("b", "all") == 2
    rsmq.delete_queue("b")
    assert rsmq.list_queues() == ["a", "c"]
