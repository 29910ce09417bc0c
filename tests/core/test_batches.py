"""Batches: send_messages, receive_messages, pop_messages, delete_messages (SPEC §3, §4)."""

from __future__ import annotations

import re

import pytest
import redis

from queues import InvalidArgument, MessageNotString, MessageTooLong, QueueNotFound, RedisSMQ

ABSENT_ID = "a" * 32


def id_us(message_id: str) -> int:
    return int(message_id[:10], 36)


def now_us(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1_000_000 + usec


# -- send_messages -------------------------------------------------------------------


def test_send_messages_returns_one_id_per_message(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, ["a", "b", "c"])

    assert len(ids) == 3
    assert all(re.fullmatch(r"[0-9a-z]{10}[A-Za-z0-9]{22}", i) for i in ids)


def test_send_messages_ids_strictly_increase_in_send_order(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, [f"m{i}" for i in range(100)])

    stamps = [id_us(i) for i in ids]
    assert stamps == list(range(stamps[0], stamps[0] + 100))
    assert ids == sorted(ids)


def test_send_messages_first_id_is_the_server_microsecond(
    rsmq: RedisSMQ, queue: str, r: redis.Redis
):
    before = now_us(r)
    ids = rsmq.send_messages(queue, ["a", "b"])

    assert before <= id_us(ids[0]) <= now_us(r)


def test_send_messages_scores_every_message_at_the_same_send_millisecond(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b", "c"], delay=9)

    scores = [r.zscore(f"{ns}:{queue}", i) for i in ids]
    assert scores == [id_us(ids[0]) // 1000 + 9_000] * 3


def test_send_messages_stores_every_body_and_counts_totalsent(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "bé", ""])

    h = r.hgetall(f"{ns}:{queue}:Q")
    assert [h[i] for i in ids] == ["a", "bé", ""]
    assert h["totalsent"] == "3"


def test_send_messages_accepts_a_generator(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, (f"m{i}" for i in range(3)))

    assert [m.message for m in rsmq.receive_messages(queue, 3)] == ["m0", "m1", "m2"]
    assert len(ids) == 3


def test_send_messages_of_nothing_returns_an_empty_list_and_writes_nothing(
    rsmq: RedisSMQ, queue: str, ns_state
):
    before = ns_state()

    assert rsmq.send_messages(queue, []) == []
    assert ns_state() == before


def test_messages_of_one_batch_are_received_first_in_first_out(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, [f"m{i}" for i in range(50)])

    received = [rsmq.receive_message(queue).id for _ in range(50)]

    assert received == ids


def test_consecutive_batches_are_received_in_send_order(rsmq: RedisSMQ, queue: str):
    ids = []
    for k in range(5):
        ids += rsmq.send_messages(queue, [f"b{k}m{i}" for i in range(200)])

    received = []
    while batch := rsmq.receive_messages(queue, 300):
        received += [m.id for m in batch]

    assert received == ids


def test_send_messages_with_delay_hides_the_whole_batch(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["a", "b"], delay=60)

    assert rsmq.receive_messages(queue, 10) == []


def test_send_messages_with_one_non_string_writes_nothing(rsmq: RedisSMQ, queue: str, ns_state):
    before = ns_state()

    with pytest.raises(MessageNotString):
        rsmq.send_messages(queue, ["a", 42, "b"])

    assert ns_state() == before


def test_send_messages_with_one_over_long_message_writes_nothing(rsmq: RedisSMQ, ns_state):
    rsmq.create_queue("small", maxsize=1024)
    before = ns_state()

    with pytest.raises(MessageTooLong) as exc:
        rsmq.send_messages("small", ["a", "x" * 1025, "b"])

    assert (exc.value.size, exc.value.maxsize) == (1025, 1024)
    assert ns_state() == before


def test_send_messages_with_one_message_over_maxsize_in_utf8_bytes_writes_nothing(
    rsmq: RedisSMQ, ns_state
):
    rsmq.create_queue("small", maxsize=1024)
    before = ns_state()

    with pytest.raises(MessageTooLong) as exc:
        rsmq.send_messages("small", ["a", "é" * 1024])

    assert exc.value.size == 2048
    assert ns_state() == before


def test_send_messages_with_invalid_utf8_bytes_writes_nothing(rsmq: RedisSMQ, queue: str, ns_state):
    before = ns_state()

    with pytest.raises(MessageNotString):
        rsmq.send_messages(queue, [b"ok", b"\xff\xfe"])

    assert ns_state() == before


# -- receive_messages ----------------------------------------------------------------


def test_receive_messages_returns_up_to_n_in_fifo_order(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, [f"m{i}" for i in range(5)])

    got = rsmq.receive_messages(queue, 3)

    assert [m.id for m in got] == ids[:3]
    assert [m.message for m in got] == ["m0", "m1", "m2"]
    assert [m.rc for m in got] == [1, 1, 1]


def test_receive_messages_returns_fewer_when_fewer_are_visible(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, ["a", "b"])
    rsmq.send_message(queue, "later", delay=100)

    assert [m.id for m in rsmq.receive_messages(queue, 10)] == ids


def test_receive_messages_of_an_empty_queue_returns_an_empty_list(rsmq: RedisSMQ, queue: str):
    assert rsmq.receive_messages(queue, 5) == []


def test_receive_messages_hides_all_until_fr_plus_vt(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b", "c"])

    got = rsmq.receive_messages(queue, 3, vt=12)

    fr = got[0].fr
    assert [m.fr for m in got] == [fr] * 3
    assert [r.zscore(f"{ns}:{queue}", i) for i in ids] == [fr + 12_000] * 3
    assert rsmq.receive_messages(queue, 3) == []


def test_receive_messages_counts_each_message_in_totalrecv_and_rc(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b", "c"])

    rsmq.receive_messages(queue, 3)

    h = r.hgetall(f"{ns}:{queue}:Q")
    assert h["totalrecv"] == "3"
    assert [h[f"{i}:rc"] for i in ids] == ["1", "1", "1"]


def test_receive_messages_accepts_n_of_1000(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["m"] * 1000)

    assert len(rsmq.receive_messages(queue, 1000)) == 1000


# -- pop_messages --------------------------------------------------------------------


def test_pop_messages_returns_up_to_n_in_fifo_order_and_removes_them(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b", "c"])

    got = rsmq.pop_messages(queue, 2)

    assert [(m.id, m.message, m.rc) for m in got] == [(ids[0], "a", 1), (ids[1], "b", 1)]
    assert r.zrange(f"{ns}:{queue}", 0, -1) == [ids[2]]
    assert set(r.hkeys(f"{ns}:{queue}:Q")) == {
        "vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv", ids[2],
    }  # fmt: skip


def test_pop_messages_counts_them_in_totalrecv(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["a", "b", "c"])

    rsmq.pop_messages(queue, 5)

    attrs = rsmq.get_queue_attributes(queue)
    assert (attrs.totalrecv, attrs.msgs) == (3, 0)


def test_pop_messages_of_an_empty_queue_returns_an_empty_list(rsmq: RedisSMQ, queue: str):
    assert rsmq.pop_messages(queue, 3) == []
    assert rsmq.get_queue_attributes(queue).totalrecv == 0


# -- delete_messages -----------------------------------------------------------------


def test_delete_messages_returns_how_many_were_in_the_queue(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, ["a", "b", "c"])

    assert rsmq.delete_messages(queue, [ids[0], ids[2], ABSENT_ID]) == 2
    assert [m.id for m in rsmq.receive_messages(queue, 5)] == [ids[1]]


def test_delete_messages_removes_members_and_all_their_hash_fields(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b"])
    rsmq.receive_messages(queue, 2)

    rsmq.delete_messages(queue, ids)

    assert r.zcard(f"{ns}:{queue}") == 0
    assert set(r.hkeys(f"{ns}:{queue}:Q")) == {
        "vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv",
    }  # fmt: skip


def test_delete_messages_of_no_ids_returns_zero(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "a")

    assert rsmq.delete_messages(queue, []) == 0
    assert rsmq.get_queue_attributes(queue).msgs == 1


def test_delete_messages_deletes_more_than_a_thousand(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, ["m"] * 1500)

    assert rsmq.delete_messages(queue, ids) == 1500
    assert rsmq.get_queue_attributes(queue).msgs == 0


# -- whole-call guarantees ---------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.send_messages("nope", []),
        lambda c: c.delete_messages("nope", []),
        lambda c: c.requeue("nope", []),
    ],
    ids=["send_messages", "delete_messages", "requeue"],
)
def test_an_empty_batch_on_a_missing_queue_raises_queue_not_found(rsmq: RedisSMQ, call):
    with pytest.raises(QueueNotFound):
        call(rsmq)


def test_send_messages_refuses_more_than_10000_per_call_and_writes_nothing(
    rsmq: RedisSMQ, queue: str
):
    with pytest.raises(InvalidArgument, match="at most 10000 per batch"):
        rsmq.send_messages(queue, ["x"] * 10_001)
    assert rsmq.get_queue_attributes(queue).msgs == 0


def test_delete_messages_of_more_than_1000_ids_is_one_script_call(
    rsmq: RedisSMQ, queue: str, r: redis.Redis
):
    ids = rsmq.send_messages(queue, ["x"] * 2500)
    before = int(r.info("commandstats")["cmdstat_evalsha"]["calls"])

    assert rsmq.delete_messages(queue, ids) == 2500

    # One EVALSHA for the delete (the INFO calls are not EVALSHA).
    assert int(r.info("commandstats")["cmdstat_evalsha"]["calls"]) - before == 1
    assert rsmq.get_queue_attributes(queue).msgs == 0
