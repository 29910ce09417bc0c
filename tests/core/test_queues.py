"""Queues: create, list, describe, edit and delete, and how they look in Redis (SPEC §3, §4)."""

from __future__ import annotations

import pytest
import redis

from queues import QueueAttributes, QueueExists, QueueNotFound, RedisSMQ


def server_seconds(r: redis.Redis) -> int:
    return r.time()[0]


def test_create_queue_adds_the_name_to_the_queues_set(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("jobs")

    assert r.smembers(f"{ns}:QUEUES") == {"jobs"}


def test_create_queue_writes_exactly_the_five_original_hash_fields(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    before = server_seconds(r)
    rsmq.create_queue("jobs", vt=45, delay=3, maxsize=2048)
    after = server_seconds(r)

    h = r.hgetall(f"{ns}:jobs:Q")
    assert set(h) == {"vt", "delay", "maxsize", "created", "modified"}
    assert (h["vt"], h["delay"], h["maxsize"]) == ("45", "3", "2048")
    assert before <= int(h["created"]) <= after
    assert h["modified"] == h["created"]


def test_create_queue_uses_the_original_defaults(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("jobs")

    assert r.hmget(f"{ns}:jobs:Q", "vt", "delay", "maxsize") == ["30", "0", "65536"]


def test_create_queue_creates_no_zset_until_a_message_is_sent(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    rsmq.create_queue("jobs")

    assert sorted(r.keys(f"{ns}:*")) == [f"{ns}:QUEUES", f"{ns}:jobs:Q"]


def test_create_queue_accepts_unlimited_maxsize(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("jobs", maxsize=-1)

    assert r.hget(f"{ns}:jobs:Q", "maxsize") == "-1"


@pytest.mark.parametrize("maxsize", [1024, 65536])
def test_create_queue_accepts_maxsize_at_both_bounds(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, maxsize: int
):
    rsmq.create_queue("jobs", maxsize=maxsize)

    assert r.hget(f"{ns}:jobs:Q", "maxsize") == str(maxsize)


@pytest.mark.parametrize("seconds", [0, 9_999_999])
def test_create_queue_accepts_vt_and_delay_at_both_bounds(
    rsmq: RedisSMQ, r: redis.Redis, ns: str, seconds: int
):
    rsmq.create_queue("jobs", vt=seconds, delay=seconds)

    assert r.hmget(f"{ns}:jobs:Q", "vt", "delay") == [str(seconds), str(seconds)]


@pytest.mark.parametrize("qname", ["a", "A-z_0-9", "x" * 160])
def test_create_queue_accepts_every_allowed_name_shape(rsmq: RedisSMQ, qname: str):
    rsmq.create_queue(qname)

    assert rsmq.list_queues() == [qname]


def test_create_queue_refuses_an_existing_queue_and_keeps_its_attributes(
    rsmq: RedisSMQ, queue: str, ns_state
):
    before = ns_state()

    with pytest.raises(QueueExists) as exc:
        rsmq.create_queue(queue, vt=99, delay=5, maxsize=1024)

    assert exc.value.qname == queue
    assert queue in str(exc.value)
    assert ns_state() == before


def test_list_queues_is_empty_in_a_new_namespace(rsmq: RedisSMQ):
    assert rsmq.list_queues() == []


def test_list_queues_returns_every_name_sorted(rsmq: RedisSMQ):
    for name in ["zeta", "alpha", "Mid", "b-2"]:
        rsmq.create_queue(name)

    assert rsmq.list_queues() == ["Mid", "alpha", "b-2", "zeta"]


def test_list_queues_sees_queues_only_of_its_own_namespace(rsmq: RedisSMQ, redis_url: str, ns: str):
    rsmq.create_queue("mine")
    with RedisSMQ(url=redis_url, ns=ns + "other") as other:
        other.create_queue("theirs")

        assert rsmq.list_queues() == ["mine"]
        assert other.list_queues() == ["theirs"]


def test_delete_queue_removes_both_keys_and_the_set_member(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.create_queue("other")
    rsmq.send_messages(queue, ["a", "b"])
    rsmq.receive_message(queue)

    rsmq.delete_queue(queue)

    assert not r.exists(f"{ns}:{queue}", f"{ns}:{queue}:Q")
    assert r.smembers(f"{ns}:QUEUES") == {"other"}
    assert rsmq.list_queues() == ["other"]


def test_delete_queue_of_a_missing_queue_raises_queue_not_found(rsmq: RedisSMQ):
    with pytest.raises(QueueNotFound) as exc:
        rsmq.delete_queue("nope")

    assert exc.value.qname == "nope"


def test_a_deleted_queue_can_be_created_again_empty(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "old")
    rsmq.delete_queue(queue)

    rsmq.create_queue(queue)

    attrs = rsmq.get_queue_attributes(queue)
    assert (attrs.msgs, attrs.totalsent, attrs.totalrecv) == (0, 0, 0)


def test_get_queue_attributes_of_a_new_queue(rsmq: RedisSMQ, r: redis.Redis):
    before = server_seconds(r)
    rsmq.create_queue("jobs", vt=45, delay=3, maxsize=2048)

    attrs = rsmq.get_queue_attributes("jobs")

    assert isinstance(attrs, QueueAttributes)
    assert (attrs.vt, attrs.delay, attrs.maxsize) == (45, 3, 2048)
    assert (attrs.totalsent, attrs.totalrecv, attrs.msgs, attrs.hiddenmsgs) == (0, 0, 0, 0)
    assert before <= attrs.created <= server_seconds(r)
    assert attrs.modified == attrs.created


def test_get_queue_attributes_counts_messages_and_hidden_ones(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["a", "b", "c", "d"])
    rsmq.send_message(queue, "later", delay=100)
    rsmq.receive_messages(queue, 2)

    attrs = rsmq.get_queue_attributes(queue)

    assert (attrs.msgs, attrs.hiddenmsgs) == (5, 3)
    assert (attrs.totalsent, attrs.totalrecv) == (5, 2)


def test_get_queue_attributes_matches_the_raw_hash(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.send_messages(queue, ["a", "b"])
    rsmq.receive_message(queue)

    attrs = rsmq.get_queue_attributes(queue)

    h = r.hgetall(f"{ns}:{queue}:Q")
    assert attrs.vt == int(h["vt"])
    assert attrs.delay == int(h["delay"])
    assert attrs.maxsize == int(h["maxsize"])
    assert attrs.created == int(h["created"])
    assert attrs.modified == int(h["modified"])
    assert attrs.totalsent == int(h["totalsent"]) == 2
    assert attrs.totalrecv == int(h["totalrecv"]) == 1
    assert attrs.msgs == r.zcard(f"{ns}:{queue}")


def test_set_queue_attributes_changes_only_the_fields_given(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    rsmq.create_queue("jobs", vt=45, delay=3, maxsize=2048)

    rsmq.set_queue_attributes("jobs", delay=7)

    assert r.hmget(f"{ns}:jobs:Q", "vt", "delay", "maxsize") == ["45", "7", "2048"]


def test_set_queue_attributes_returns_the_new_attributes(rsmq: RedisSMQ, queue: str):
    attrs = rsmq.set_queue_attributes(queue, vt=5, delay=2, maxsize=-1)

    assert attrs == rsmq.get_queue_attributes(queue)
    assert (attrs.vt, attrs.delay, attrs.maxsize) == (5, 2, -1)


def test_set_queue_attributes_sets_modified_from_the_server_clock(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    r.hset(f"{ns}:{queue}:Q", "modified", "1000")
    before = server_seconds(r)

    attrs = rsmq.set_queue_attributes(queue, vt=5)

    assert before <= attrs.modified <= server_seconds(r)
    assert r.hget(f"{ns}:{queue}:Q", "modified") == str(attrs.modified)


def test_set_queue_attributes_keeps_created(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str):
    r.hset(f"{ns}:{queue}:Q", "created", "1000")

    attrs = rsmq.set_queue_attributes(queue, vt=5)

    assert attrs.created == 1000


def test_set_queue_attributes_vt_is_the_next_receives_default(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.set_queue_attributes(queue, vt=120)
    rsmq.send_message(queue, "m")

    msg = rsmq.receive_message(queue)

    assert r.zscore(f"{ns}:{queue}", msg.id) == msg.fr + 120_000


def test_set_queue_attributes_delay_is_the_next_sends_default(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.set_queue_attributes(queue, delay=60)

    mid = rsmq.send_message(queue, "m")

    assert r.zscore(f"{ns}:{queue}", mid) == int(mid[:10], 36) // 1000 + 60_000


def test_ping_answers_true(rsmq: RedisSMQ):
    assert rsmq.ping() is True


def test_realtime_channel_is_the_namespaced_rt_key(rsmq: RedisSMQ, ns: str):
    assert rsmq.realtime_channel("jobs") == f"{ns}:rt:jobs"


def test_default_namespace_is_rsmq(redis_url: str):
    with RedisSMQ(url=redis_url) as client:
        assert client.queues_key == "rsmq:QUEUES"


def test_a_client_built_from_a_redis_connection_uses_it(redis_url: str, ns: str, r: redis.Redis):
    with RedisSMQ(client=redis.Redis.from_url(redis_url), ns=ns) as client:
        client.create_queue("jobs")

    assert r.sismember(f"{ns}:QUEUES", "jobs")
