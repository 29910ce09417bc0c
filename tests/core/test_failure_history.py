"""Why it failed: failure histories in the queue's extension key {ns}:{qname}:x:failures,
bounded, expiring, deleted with their message and carried with it, on the real Redis."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis
from support.node_rsmq import NodeRsmq

from queues import AsyncRedisSMQ, Failure, FailureGroup, InvalidArgument, RedisSMQ, limits
from queues.ops import failures as failure_ops


def brief(groups: list[FailureGroup]) -> list[tuple[str, str, str, int, tuple[str, ...]]]:
    """Each group's type, state, queue, count and example ids."""
    return [(g.type, g.state, g.where, g.count, g.examples) for g in groups]


def fkey(ns: str, qname: str) -> str:
    return f"{ns}:{qname}:x:failures"


def boom(text: str = "boom") -> ValueError:
    try:
        raise ValueError(text)
    except ValueError as e:
        return e


@pytest.fixture
def jobs(rsmq: RedisSMQ) -> str:
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    return "jobs"


# -- recording ------------------------------------------------------------------------------


def test_it_records_type_message_trace_time_and_attempt(rsmq: RedisSMQ, jobs: str, r) -> None:
    mid = rsmq.send_message(jobs, "m")
    rsmq.receive_message(jobs)
    sec, _ = r.time()

    assert rsmq.record_failure(jobs, mid, boom()) is True

    (f,) = rsmq.failures(jobs, mid)
    assert (f.type, f.message, f.attempt, f.note) == ("ValueError", "boom", 1, None)
    assert f.trace[0] == "Traceback (most recent call last):"
    assert f.trace[-1] == "ValueError: boom"
    assert any("in boom" in line for line in f.trace)
    assert abs(f.at / 1000 - sec) < 5


def test_a_module_exception_is_named_with_its_module(rsmq: RedisSMQ, jobs: str) -> None:
    mid = rsmq.send_message(jobs, "m")
    rsmq.record_failure(jobs, mid, json.JSONDecodeError("bad", "x", 0))

    assert rsmq.failures(jobs, mid)[0].type == "json.decoder.JSONDecodeError"


def test_history_is_newest_first_and_keeps_the_last_few(rsmq: RedisSMQ, jobs: str) -> None:
    mid = rsmq.send_message(jobs, "m")
    for i in range(limits.FAILURE_HISTORY + 2):
        rsmq.record_failure(jobs, mid, error_type="E", message=str(i))

    got = [f.message for f in rsmq.failures(jobs, mid)]
    assert got == [str(i) for i in reversed(range(2, limits.FAILURE_HISTORY + 2))]


def test_message_trace_and_history_are_bounded(rsmq: RedisSMQ, jobs: str, r) -> None:
    mid = rsmq.send_message(jobs, "m")
    trace = "".join(f"line {i}\n" for i in range(100))
    for _ in range(limits.FAILURE_HISTORY):
        rsmq.record_failure(jobs, mid, error_type="E", message="é" * 5000, trace=trace)

    f = rsmq.failures(jobs, mid)[0]
    assert len(f.message.encode()) <= limits.FAILURE_MESSAGE_MAX + len("…".encode())
    assert f.message.startswith("é" * 10)  # cut between characters, never inside one
    assert f.trace[:2] == ("line 0", "line 1")
    assert len(f.trace) == limits.FAILURE_TRACE_LINES + 1 and f.trace[-1] == "… 80 more lines"
    assert len(r.hget(fkey(rsmq.ns, jobs), mid).encode()) <= limits.FAILURE_BYTES


def test_a_queue_keeps_histories_for_a_bounded_number_of_messages(
    rsmq: RedisSMQ, jobs: str, r, monkeypatch
) -> None:
    monkeypatch.setattr(failure_ops, "FAILURE_MESSAGES", 3)
    ids = rsmq.send_messages(jobs, ["m"] * 5)
    for mid in ids:
        rsmq.record_failure(jobs, mid, error_type="E")

    assert r.hlen(fkey(rsmq.ns, jobs)) == 2 * 3
    assert sum(1 for mid in ids if rsmq.failures(jobs, mid)) == 3
    assert rsmq.failures(jobs, ids[-1])  # the newest is always kept


def test_the_key_expires_after_the_last_failure(rsmq: RedisSMQ, jobs: str, r) -> None:
    mid = rsmq.send_message(jobs, "m")
    rsmq.record_failure(jobs, mid, error_type="E")

    assert limits.FAILURE_TTL - 5 <= r.ttl(fkey(rsmq.ns, jobs)) <= limits.FAILURE_TTL


def test_with_vt_it_sets_the_visibility_in_the_same_call(rsmq: RedisSMQ, jobs: str) -> None:
    mid = rsmq.send_message(jobs, "m")
    rsmq.receive_message(jobs, vt=600)

    assert rsmq.record_failure(jobs, mid, boom(), vt=0)
    assert rsmq.receive_message(jobs).id == mid


def test_nothing_is_recorded_for_a_message_not_in_the_queue(rsmq: RedisSMQ, jobs: str, r) -> None:
    assert rsmq.record_failure(jobs, "a" * 32, boom()) is False
    assert not r.exists(fkey(rsmq.ns, jobs))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({}, "error_type"),
        ({"error_type": "x" * 201}, "error_type"),
        ({"error_type": "E", "message": 3}, "message"),
        ({"error_type": "E", "trace": [1]}, "trace"),
        ({"error_type": "E", "vt": -1}, "vt"),
        ({"error": "boom"}, "error"),
    ],
)
def test_bad_input_names_the_field(rsmq: RedisSMQ, jobs: str, kwargs, field) -> None:
    mid = rsmq.send_message(jobs, "m")
    with pytest.raises(InvalidArgument) as caught:
        rsmq.record_failure(jobs, mid, **kwargs)
    assert field in str(caught.value)


# -- cleaned with the message ----------------------------------------------------------------


def failed(rsmq: RedisSMQ, qname: str, n: int = 1) -> list[str]:
    ids = rsmq.send_messages(qname, ["m"] * n)
    for mid in ids:
        rsmq.record_failure(qname, mid, boom())
    return ids


@pytest.mark.parametrize(
    "delete",
    [
        lambda q, ids: q.delete_message("jobs", ids[0]),
        lambda q, ids: q.delete_messages("jobs", ids),
        lambda q, ids: q.delete_members("jobs", ids),
        lambda q, ids: q.pop_messages("jobs", 10),
        lambda q, ids: q.delete_state("jobs", "all"),
        lambda q, ids: q.purge_queue("jobs"),
        lambda q, ids: q.delete_queue("jobs"),
    ],
    ids=[
        "delete_message",
        "delete_messages",
        "delete_members",
        "pop",
        "delete_state",
        "purge",
        "delete_queue",
    ],  # fmt: skip
)
def test_every_delete_path_deletes_the_history(rsmq: RedisSMQ, jobs: str, r, delete) -> None:
    ids = failed(rsmq, jobs, 1)

    delete(rsmq, ids)

    assert not r.exists(fkey(rsmq.ns, jobs))


def test_a_delete_leaves_the_other_messages_histories(rsmq: RedisSMQ, jobs: str) -> None:
    a, b = failed(rsmq, jobs, 2)

    rsmq.delete_messages(jobs, [a])

    assert rsmq.failures(jobs, a) == [] and rsmq.failures(jobs, b)[0].type == "ValueError"


def test_a_dead_lettered_message_takes_its_history_to_the_dlq(rsmq: RedisSMQ, jobs: str) -> None:
    rsmq.set_dead_letter_policy(jobs, "dlq", 1)
    (mid,) = rsmq.send_messages(jobs, ["m"])
    rsmq.receive_message(jobs, vt=0)
    rsmq.record_failure(jobs, mid, boom("first"))

    assert rsmq.receive_message(jobs) is None  # dead-lettered

    assert rsmq.failures(jobs, mid) == []
    assert [f.message for f in rsmq.failures("dlq", mid)] == ["first"]
    groups = rsmq.failure_groups(jobs)
    assert brief(groups.groups) == [("ValueError", "dead", "dlq", 1, (mid,))]

    assert rsmq.redrive("dlq") == 1  # and back with it
    assert [f.message for f in rsmq.failures(jobs, mid)] == ["first"]
    assert rsmq.failures("dlq", mid) == []


def test_move_messages_carries_the_history(rsmq: RedisSMQ, jobs: str) -> None:
    a, b = failed(rsmq, jobs, 2)

    assert rsmq.move_messages(jobs, "dlq", [a]) == 1
    assert rsmq.move_messages(jobs, "dlq") == 1

    assert rsmq.failures(jobs, a) == [] and rsmq.failures(jobs, b) == []
    assert rsmq.failures("dlq", a)[0].message == "boom"
    assert rsmq.failures("dlq", b)[0].message == "boom"


# -- the grouped view -------------------------------------------------------------------------


def test_failure_groups_counts_retries_and_dead_by_type(rsmq: RedisSMQ, jobs: str) -> None:
    rsmq.set_dead_letter_policy(jobs, "dlq", 1)
    dead = rsmq.send_message(jobs, "m")
    rsmq.receive_message(jobs, vt=0)
    rsmq.record_failure(jobs, dead, boom())
    assert rsmq.receive_message(jobs) is None  # dead-lettered
    ids = rsmq.send_messages(jobs, ["m"] * 3)
    for mid in ids[:2]:
        rsmq.record_failure(jobs, mid, boom())
    rsmq.record_failure(jobs, ids[2], KeyError("k"))
    other = rsmq.send_message("dlq", "from elsewhere")
    rsmq.record_failure("dlq", other, boom())

    g = rsmq.failure_groups(jobs)

    assert (g.qname, g.dlq, g.complete) == (jobs, "dlq", True)
    assert brief(g.groups) == [
        ("ValueError", "retry", jobs, 2, tuple(sorted(ids[:2]))),
        ("KeyError", "retry", jobs, 1, (ids[2],)),
        ("ValueError", "dead", "dlq", 1, (dead,)),  # not `other`
    ]


def test_failure_groups_is_bounded(rsmq: RedisSMQ, jobs: str, monkeypatch) -> None:
    monkeypatch.setattr(failure_ops, "FAILURE_SCAN_COUNT", 1)
    monkeypatch.setattr(failure_ops, "FAILURE_SCAN_STEPS", 1)
    rsmq.create_queue("big")
    for mid in rsmq.send_messages("big", ["m"] * 300):
        rsmq.record_failure("big", mid, error_type="E")

    g = rsmq.failure_groups("big")

    # One HSCAN step of COUNT 1 visits one bucket of the hash (maybe an empty one): the
    # read stops there, says it is incomplete, and has counted at most what it saw.
    assert g.complete is False and sum(x.count for x in g.groups) < 300
    monkeypatch.undo()
    full = rsmq.failure_groups("big")
    assert full.complete is True and sum(x.count for x in full.groups) == 300


def test_the_async_client_reads_failures_too(redis_url: str, rsmq: RedisSMQ, jobs: str) -> None:
    mid = rsmq.send_message(jobs, "m")

    async def main() -> tuple[bool, list[Failure]]:
        aq = AsyncRedisSMQ(url=redis_url, ns=rsmq.ns)
        try:
            ok = await aq.record_failure(jobs, mid, boom())
            return ok, await aq.failures(jobs, mid)
        finally:
            await aq.close()

    ok, got = asyncio.run(main())
    assert ok and got[0].type == "ValueError"


# -- hostile data -----------------------------------------------------------------------------


def test_a_corrupt_history_is_reported_and_hides_no_other(rsmq: RedisSMQ, jobs: str, r) -> None:
    a, b = failed(rsmq, jobs, 2)
    r.hset(fkey(rsmq.ns, jobs), a, "{not json")

    (bad,) = rsmq.failures(jobs, a)
    assert bad.type == "?" and "not a failure history" in (bad.note or "")
    assert rsmq.failures(jobs, b)[0].type == "ValueError"
    assert {g.count for g in rsmq.failure_groups(jobs).groups} == {2}

    assert rsmq.record_failure(jobs, a, boom("again"))  # starts over
    assert [f.message for f in rsmq.failures(jobs, a)] == ["again"]


def test_a_spoiled_entry_is_read_with_a_note(rsmq: RedisSMQ, jobs: str, r) -> None:
    mid = rsmq.send_message(jobs, "m")
    entries = [{"t": "x", "rc": 2, "type": "E", "msg": None, "trace": "a\nb"}, 7]
    r.hset(fkey(rsmq.ns, jobs), mapping={mid: json.dumps(entries), mid + ":t": "E"})

    number, entry = rsmq.failures(jobs, mid)

    assert number.note == "an entry is '7', not a failure"
    assert (entry.type, entry.attempt, entry.at, entry.trace) == ("E", 2, 0, ("a", "b"))
    assert "its time is" in (entry.note or "") and "its msg is" in (entry.note or "")


def test_a_failure_key_of_another_type_breaks_no_delete(rsmq: RedisSMQ, jobs: str, r) -> None:
    ids = rsmq.send_messages(jobs, ["m"] * 3)
    r.set(fkey(rsmq.ns, jobs), "not a hash")

    assert "not a hash" in (rsmq.failures(jobs, ids[0])[0].note or "")
    assert rsmq.failure_groups(jobs).groups == []
    assert rsmq.delete_message(jobs, ids[0])
    assert rsmq.pop_message(jobs).id == ids[1]
    assert rsmq.record_failure(jobs, ids[2], boom())  # ours: replaced
    assert rsmq.failures(jobs, ids[2])[0].type == "ValueError"


# -- original clients ---------------------------------------------------------------------------


def test_node_rsmq_works_on_a_queue_with_failures_and_never_sees_the_key(
    node: NodeRsmq, rsmq: RedisSMQ, jobs: str, r: redis.Redis
) -> None:
    a, b = failed(rsmq, jobs, 2)

    results = node.run(
        ("listQueues", {}),
        ("receiveMessage", {"qname": jobs, "vt": 0}),
        ("deleteMessage", {"qname": jobs, "id": a}),
        ("getQueueAttributes", {"qname": jobs}),
    )

    assert sorted(results[0]) == ["dlq", "jobs"]
    assert results[1]["id"] == a and results[2] == 1
    assert results[3]["msgs"] == 1
    # Node deleted `a` without knowing: its record is stale, and read as nothing.
    assert brief(rsmq.failure_groups(jobs).groups) == [("ValueError", "retry", jobs, 1, (b,))]
    assert node.call("deleteQueue", qname=jobs) == 1
    assert r.ttl(fkey(rsmq.ns, jobs)) > 0  # left to expire
