"""purge_queue and move_messages: bulk operations that keep attributes and totals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from queues import InvalidArgument, QueueNotFound, RedisSMQ

ATTRIBUTE_FIELDS = ("vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv")
ABSENT_ID = "a" * 32


def now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


# -- purge_queue ---------------------------------------------------------------------


def test_purge_queue_returns_how_many_messages_it_removed(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["a", "b", "c"])
    rsmq.send_message(queue, "later", delay=100)
    rsmq.receive_message(queue)

    assert rsmq.purge_queue(queue) == 4


def test_purge_queue_leaves_only_the_attributes_in_the_hash(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.send_messages(queue, ["a", "b", "c"])
    rsmq.receive_messages(queue, 2)
    attributes = r.hmget(f"{ns}:{queue}:Q", *ATTRIBUTE_FIELDS)

    rsmq.purge_queue(queue)

    assert set(r.hkeys(f"{ns}:{queue}:Q")) == set(ATTRIBUTE_FIELDS)
    assert r.hmget(f"{ns}:{queue}:Q", *ATTRIBUTE_FIELDS) == attributes
    assert not r.exists(f"{ns}:{queue}", f"{ns}:{queue}:purge")
    assert r.sismember(f"{ns}:QUEUES", queue)


def test_purge_queue_of_an_empty_queue_returns_zero_and_writes_nothing(
    rsmq: RedisSMQ, queue: str, ns_state
):
    before = ns_state()

    assert rsmq.purge_queue(queue) == 0
    assert ns_state() == before


def test_a_purged_queue_takes_new_messages(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["a", "b"])
    rsmq.purge_queue(queue)

    mid = rsmq.send_message(queue, "after")

    assert rsmq.receive_message(queue).id == mid
    assert rsmq.get_queue_attributes(queue).totalsent == 3


def test_purge_queue_drains_a_purge_left_over_by_an_interrupted_purge(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.send_messages(queue, [f"old{i}" for i in range(2500)])
    rsmq.receive_messages(queue, 10)
    # a purge interrupted after its detach step and one drain step
    purge_key = f"{ns}:{queue}:purge"
    r.rename(f"{ns}:{queue}", purge_key)
    drained = r.zrange(purge_key, 0, 999)
    r.hdel(f"{ns}:{queue}:Q", *[f"{i}{s}" for i in drained for s in ("", ":rc", ":fr")])
    r.zremrangebyrank(purge_key, 0, 999)
    rsmq.send_messages(queue, ["new0", "new1"])

    assert rsmq.purge_queue(queue) == 2

    assert set(r.hkeys(f"{ns}:{queue}:Q")) == set(ATTRIBUTE_FIELDS)
    assert not r.exists(purge_key, f"{ns}:{queue}")


def test_purge_queue_of_a_missing_queue_leaves_its_purge_key_alone(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    with pytest.raises(QueueNotFound):
        rsmq.purge_queue("nope")

    assert r.keys(f"{ns}:*") == []


@pytest.fixture
def slowlog(r: redis.Redis) -> Iterator[redis.Redis]:
    """Log every command slower than 50 ms; restore the server's settings afterwards."""
    saved = r.config_get("slowlog-log-slower-than")["slowlog-log-slower-than"]
    r.config_set("slowlog-log-slower-than", 50_000)
    yield r
    r.config_set("slowlog-log-slower-than", saved)
    r.slowlog_reset()


@pytest.mark.slow
def test_purge_of_200_000_messages_empties_the_queue_without_blocking_redis(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str, slowlog: redis.Redis
):
    # The slowlog measures wall time, so on a loaded machine a short step that was
    # descheduled can be logged; a step that is really too long is logged on every attempt.
    for _attempt in range(3):
        for k in range(200):
            rsmq.send_messages(queue, [f"message {k}:{i}" for i in range(1000)])
        for _ in range(3):
            rsmq.receive_messages(queue, 1000, vt=300)
        attributes = r.hmget(f"{ns}:{queue}:Q", *ATTRIBUTE_FIELDS)
        r.slowlog_reset()

        purged = rsmq.purge_queue(queue)

        slow = r.slowlog_get()
        assert purged == 200_000
        assert rsmq.get_queue_attributes(queue).msgs == 0
        assert r.hlen(f"{ns}:{queue}:Q") == len(ATTRIBUTE_FIELDS)
        assert r.hmget(f"{ns}:{queue}:Q", *ATTRIBUTE_FIELDS) == attributes
        assert not r.exists(f"{ns}:{queue}", f"{ns}:{queue}:purge")
        if not slow:
            break
    assert slow == []


# -- move_messages -------------------------------------------------------------------


@pytest.fixture
def dst(rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q2")
    return "q2"


def test_move_messages_by_id_with_keep_counts_moves_them_with_body_rc_and_fr(
    rsmq: RedisSMQ, queue: str, dst: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b", "c"])
    got = rsmq.receive_message(queue)

    assert rsmq.move_messages(queue, dst, ids=ids[:2], keep_counts=True) == 2

    h = r.hgetall(f"{ns}:{dst}:Q")
    assert (h[ids[0]], h[f"{ids[0]}:rc"], h[f"{ids[0]}:fr"]) == ("a", "1", str(got.fr))
    assert h[ids[1]] == "b"
    assert f"{ids[1]}:rc" not in h and f"{ids[1]}:fr" not in h
    assert r.zrange(f"{ns}:{queue}", 0, -1) == [ids[2]]
    assert not {ids[0], ids[1], f"{ids[0]}:rc", f"{ids[0]}:fr"} & set(r.hkeys(f"{ns}:{queue}:Q"))


def test_moved_messages_start_with_a_fresh_receive_count_by_default(
    rsmq: RedisSMQ, queue: str, dst: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b"])
    rsmq.receive_messages(queue, 2, vt=0)

    assert rsmq.move_messages(queue, dst, ids=ids[:1]) == 1
    assert rsmq.move_messages(queue, dst) == 1

    h = r.hgetall(f"{ns}:{dst}:Q")
    assert (h[ids[0]], h[ids[1]]) == ("a", "b")
    assert not {f"{i}:{f}" for i in ids for f in ("rc", "fr")} & set(h)
    assert [m.rc for m in rsmq.receive_messages(dst, 2)] == [1, 1]


def test_moved_messages_are_visible_in_the_destination_at_once(
    rsmq: RedisSMQ, queue: str, dst: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b"])
    rsmq.receive_messages(queue, 1, vt=100)
    rsmq.send_message(queue, "later", delay=100)
    before = now_ms(r)

    rsmq.move_messages(queue, dst)

    after = now_ms(r)
    for _, score in r.zrange(f"{ns}:{dst}", 0, -1, withscores=True):
        assert before <= score <= after
    got = rsmq.receive_messages(dst, 10)
    assert [m.id for m in got][:2] == ids
    assert [m.rc for m in got] == [1, 1, 1]  # a fresh receive count: this receive


def test_move_messages_changes_neither_queues_totals(
    rsmq: RedisSMQ, queue: str, dst: str, r: redis.Redis, ns: str
):
    rsmq.send_messages(queue, ["a", "b"])
    rsmq.receive_message(queue)
    src_totals = r.hmget(f"{ns}:{queue}:Q", "totalsent", "totalrecv")

    rsmq.move_messages(queue, dst)

    assert r.hmget(f"{ns}:{queue}:Q", "totalsent", "totalrecv") == src_totals
    assert r.hmget(f"{ns}:{dst}:Q", "totalsent", "totalrecv") == [None, None]


def test_move_messages_without_ids_moves_all_of_them(rsmq: RedisSMQ, queue: str, dst: str):
    ids = rsmq.send_messages(queue, [f"m{i}" for i in range(2345)])

    assert rsmq.move_messages(queue, dst) == 2345

    assert rsmq.get_queue_attributes(queue).msgs == 0
    assert [m.id for m in rsmq.list_messages(dst, limit=1000).items] == ids[:1000]
    assert rsmq.get_queue_attributes(dst).msgs == 2345


def test_move_messages_counts_only_ids_in_the_source(rsmq: RedisSMQ, queue: str, dst: str):
    ids = rsmq.send_messages(queue, ["a", "b"])
    rsmq.delete_message(queue, ids[1])

    assert rsmq.move_messages(queue, dst, ids=[ids[0], ids[1], ABSENT_ID]) == 1
    assert rsmq.get_queue_attributes(dst).msgs == 1


def test_move_messages_of_an_empty_queue_moves_nothing(
    rsmq: RedisSMQ, queue: str, dst: str, ns_state
):
    before = ns_state()

    assert rsmq.move_messages(queue, dst) == 0
    assert ns_state() == before


def test_move_messages_leaves_a_message_over_the_destination_maxsize_in_the_source(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    rsmq.create_queue("big", maxsize=-1)
    rsmq.create_queue("small", maxsize=1024)
    fits, too_big, fits_exactly = rsmq.send_messages("big", ["a", "é" * 513, "é" * 512])

    assert rsmq.move_messages("big", "small", ids=[fits, too_big, fits_exactly]) == 2

    assert r.zrange(f"{ns}:big", 0, -1) == [too_big]
    assert r.hget(f"{ns}:big:Q", too_big) == "é" * 513
    assert r.zrange(f"{ns}:small", 0, -1) == [fits, fits_exactly]


def test_move_all_skips_oversized_messages_across_chunks(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("big", maxsize=-1)
    rsmq.create_queue("small", maxsize=1024)
    bodies = ["x" * 2000 if i % 7 == 0 else f"m{i}" for i in range(2500)]
    ids = rsmq.send_messages("big", bodies)
    oversized = [mid for mid, body in zip(ids, bodies, strict=True) if len(body) > 1024]

    moved = rsmq.move_messages("big", "small")

    assert moved == 2500 - len(oversized)
    assert r.zrange(f"{ns}:big", 0, -1) == oversized
    assert sorted(r.zrange(f"{ns}:small", 0, -1)) == sorted(set(ids) - set(oversized))


def test_move_messages_to_the_same_queue_raises_invalid_argument(
    rsmq: RedisSMQ, queue: str, ns_state
):
    ids = rsmq.send_messages(queue, ["a"])
    before = ns_state()

    with pytest.raises(InvalidArgument) as exc:
        rsmq.move_messages(queue, queue, ids=ids)

    assert exc.value.field == "dst"
    assert ns_state() == before


@pytest.mark.parametrize(
    ("src", "dst", "missing"), [("nope", "q1", "nope"), ("q1", "nope", "nope")]
)
def test_move_messages_with_a_missing_queue_names_it_in_queue_not_found(
    rsmq: RedisSMQ, queue: str, src: str, dst: str, missing: str
):
    rsmq.send_message(queue, "a")

    with pytest.raises(QueueNotFound) as exc:
        rsmq.move_messages(src, dst)

    assert exc.value.qname == missing
    assert rsmq.get_queue_attributes(queue).msgs == 1
