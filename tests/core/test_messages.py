"""Single messages: send, receive, pop, change visibility, delete, and their layout in Redis."""

from __future__ import annotations

import re
import time

import redis

from queues import Message, RedisSMQ

ID_SUFFIX = re.compile(r"[A-Za-z0-9]{22}")
ABSENT_ID = "a" * 32


def now_us(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1_000_000 + usec


def now_ms(r: redis.Redis) -> int:
    return now_us(r) // 1000


def id_us(message_id: str) -> int:
    return int(message_id[:10], 36)


# -- send ---------------------------------------------------------------------------


def test_send_message_returns_a_32_char_id_of_time_prefix_and_random_suffix(
    rsmq: RedisSMQ, queue: str
):
    mid = rsmq.send_message(queue, "hello")

    assert len(mid) == 32
    assert re.fullmatch(r"[0-9a-z]{10}", mid[:10])
    assert ID_SUFFIX.fullmatch(mid[10:])


def test_send_message_id_prefix_is_base36_of_the_server_microseconds(
    rsmq: RedisSMQ, queue: str, r: redis.Redis
):
    before = now_us(r)
    mid = rsmq.send_message(queue, "hello")
    after = now_us(r)

    assert before <= id_us(mid) <= after


def test_send_message_ids_differ_in_their_random_suffix(rsmq: RedisSMQ, queue: str):
    ids = [rsmq.send_message(queue, "m") for _ in range(20)]

    assert len({mid[10:] for mid in ids}) == 20


def test_send_message_stores_the_body_in_the_queue_hash(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello wörld")

    assert r.hget(f"{ns}:{queue}:Q", mid) == "hello wörld"


def test_send_message_writes_no_rc_or_fr_field(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str):
    mid = rsmq.send_message(queue, "hello")

    assert not r.hexists(f"{ns}:{queue}:Q", f"{mid}:rc")
    assert not r.hexists(f"{ns}:{queue}:Q", f"{mid}:fr")


def test_send_message_scores_the_zset_member_at_the_send_millisecond(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")

    assert r.zscore(f"{ns}:{queue}", mid) == id_us(mid) // 1000


def test_send_message_with_delay_scores_send_time_plus_delay(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello", delay=25)

    assert r.zscore(f"{ns}:{queue}", mid) == id_us(mid) // 1000 + 25_000


def test_send_message_uses_the_queue_delay_by_default(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("slow", delay=40)

    mid = rsmq.send_message("slow", "hello")

    assert r.zscore(f"{ns}:slow", mid) == id_us(mid) // 1000 + 40_000


def test_send_message_delay_zero_overrides_the_queue_delay(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("slow", delay=40)

    mid = rsmq.send_message("slow", "hello", delay=0)

    assert r.zscore(f"{ns}:slow", mid) == id_us(mid) // 1000


def test_send_message_increments_totalsent(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str):
    rsmq.send_message(queue, "a")
    rsmq.send_message(queue, "b")

    assert r.hget(f"{ns}:{queue}:Q", "totalsent") == "2"


def test_send_message_accepts_utf8_bytes_and_stores_them_unchanged(
    rsmq: RedisSMQ, queue: str, redis_url: str, ns: str
):
    body = "naïve ☃".encode()
    mid = rsmq.send_message(queue, body)

    raw = redis.Redis.from_url(redis_url)
    try:
        assert raw.hget(f"{ns}:{queue}:Q", mid) == body
    finally:
        raw.close()


def test_send_message_accepts_an_empty_body(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "")

    assert rsmq.receive_message(queue).message == ""


def test_send_message_accepts_a_body_of_exactly_maxsize_bytes(rsmq: RedisSMQ):
    rsmq.create_queue("small", maxsize=1024)

    rsmq.send_message("small", "é" * 512)

    assert rsmq.receive_message("small").message == "é" * 512


def test_send_message_to_an_unlimited_queue_accepts_a_body_over_65536_bytes(rsmq: RedisSMQ):
    rsmq.create_queue("big", maxsize=-1)
    body = "x" * 100_000

    rsmq.send_message("big", body)

    assert rsmq.receive_message("big").message == body


def test_sent_is_the_id_time_in_milliseconds(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")

    assert rsmq.receive_message(queue).sent == int(mid[:10], 36) / 1000


# -- receive -------------------------------------------------------------------------


def test_receive_message_returns_id_body_rc_fr_and_sent(rsmq: RedisSMQ, queue: str, r: redis.Redis):
    mid = rsmq.send_message(queue, "hello")
    before = now_ms(r)

    msg = rsmq.receive_message(queue)

    assert isinstance(msg, Message)
    assert (msg.id, msg.message, msg.rc) == (mid, "hello", 1)
    assert before <= msg.fr <= now_ms(r)
    assert msg.sent == id_us(mid) / 1000


def test_receive_message_of_an_empty_queue_returns_none(rsmq: RedisSMQ, queue: str):
    assert rsmq.receive_message(queue) is None


def test_receive_message_rescores_to_receive_time_plus_vt(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")

    msg = rsmq.receive_message(queue)

    assert r.zscore(f"{ns}:{queue}", mid) == msg.fr + 30_000


def test_receive_message_vt_argument_overrides_the_queue_vt(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")

    msg = rsmq.receive_message(queue, vt=7)

    assert r.zscore(f"{ns}:{queue}", mid) == msg.fr + 7_000


def test_receive_message_with_vt_zero_leaves_the_message_visible(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")
    rsmq.receive_message(queue, vt=0)

    again = rsmq.receive_message(queue)

    assert (again.id, again.rc) == (mid, 2)


def test_receive_message_writes_rc_and_fr_into_the_queue_hash(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")

    msg = rsmq.receive_message(queue)

    h = r.hgetall(f"{ns}:{queue}:Q")
    assert h[f"{mid}:rc"] == "1"
    assert h[f"{mid}:fr"] == str(msg.fr)


def test_receive_message_increments_totalrecv(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str):
    rsmq.send_messages(queue, ["a", "b"])
    rsmq.receive_message(queue)
    rsmq.receive_message(queue)
    rsmq.receive_message(queue)

    assert r.hget(f"{ns}:{queue}:Q", "totalrecv") == "2"


def test_receive_message_hides_message_for_vt_seconds(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")
    rsmq.receive_message(queue, vt=1)

    assert rsmq.receive_message(queue) is None
    time.sleep(1.05)
    assert rsmq.receive_message(queue).id == mid


def test_a_message_reappearing_after_vt_has_rc_2_and_the_same_fr(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "hello")
    first = rsmq.receive_message(queue, vt=1)
    time.sleep(1.05)

    second = rsmq.receive_message(queue)

    assert (second.id, second.message, second.rc) == (first.id, "hello", 2)
    assert second.fr == first.fr


def test_a_message_received_again_keeps_fr_in_the_hash(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")
    first = rsmq.receive_message(queue, vt=0)
    time.sleep(0.01)

    rsmq.receive_message(queue, vt=0)

    assert r.hmget(f"{ns}:{queue}:Q", f"{mid}:rc", f"{mid}:fr") == ["2", str(first.fr)]


def test_a_delayed_message_is_invisible_until_the_delay_passes(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "later", delay=1)

    assert rsmq.receive_message(queue) is None
    time.sleep(1.05)
    assert rsmq.receive_message(queue).id == mid


def test_receive_message_delivers_single_sends_first_in_first_out(rsmq: RedisSMQ, queue: str):
    ids = [rsmq.send_message(queue, f"m{i}") for i in range(10)]

    received = [rsmq.receive_message(queue) for _ in range(10)]

    assert [m.id for m in received] == ids
    assert [m.message for m in received] == [f"m{i}" for i in range(10)]


def test_receive_message_skips_a_delayed_message_sent_first(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "later", delay=100)
    now = rsmq.send_message(queue, "now")

    assert rsmq.receive_message(queue).id == now
    assert rsmq.receive_message(queue) is None


def test_receive_message_returns_utf8_bytes_as_text(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "naïve ☃ 🎉".encode())

    assert rsmq.receive_message(queue).message == "naïve ☃ 🎉"


# -- pop -----------------------------------------------------------------------------


def test_pop_message_returns_the_message_with_rc_1(rsmq: RedisSMQ, queue: str, r: redis.Redis):
    mid = rsmq.send_message(queue, "hello")
    before = now_ms(r)

    msg = rsmq.pop_message(queue)

    assert (msg.id, msg.message, msg.rc) == (mid, "hello", 1)
    assert before <= msg.fr <= now_ms(r)
    assert msg.sent == id_us(mid) / 1000


def test_pop_message_removes_the_message_and_its_fields(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")
    rsmq.receive_message(queue, vt=0)

    rsmq.pop_message(queue)

    assert r.zcard(f"{ns}:{queue}") == 0
    assert not r.hexists(f"{ns}:{queue}:Q", mid)
    assert not r.hexists(f"{ns}:{queue}:Q", f"{mid}:rc")
    assert not r.hexists(f"{ns}:{queue}:Q", f"{mid}:fr")


def test_pop_message_counts_in_totalrecv(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "hello")

    rsmq.pop_message(queue)

    assert rsmq.get_queue_attributes(queue).totalrecv == 1


def test_pop_message_of_a_received_message_reports_rc_2_and_the_first_fr(
    rsmq: RedisSMQ, queue: str
):
    rsmq.send_message(queue, "hello")
    first = rsmq.receive_message(queue, vt=0)

    popped = rsmq.pop_message(queue)

    assert (popped.id, popped.rc, popped.fr) == (first.id, 2, first.fr)


def test_pop_message_of_an_empty_queue_returns_none_and_counts_nothing(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "later", delay=100)

    assert rsmq.pop_message(queue) is None
    assert rsmq.get_queue_attributes(queue).totalrecv == 0


def test_pop_message_takes_the_oldest_visible_message(rsmq: RedisSMQ, queue: str):
    first = rsmq.send_message(queue, "a")
    rsmq.send_message(queue, "b")

    assert rsmq.pop_message(queue).id == first


# -- change visibility ---------------------------------------------------------------


def test_change_message_visibility_rescores_to_now_plus_vt(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")
    before = now_ms(r)

    assert rsmq.change_message_visibility(queue, mid, 50) is True

    score = r.zscore(f"{ns}:{queue}", mid)
    assert before + 50_000 <= score <= now_ms(r) + 50_000


def test_change_message_visibility_hides_a_visible_message(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")

    rsmq.change_message_visibility(queue, mid, 60)

    assert rsmq.receive_message(queue) is None


def test_change_message_visibility_zero_makes_an_in_flight_message_visible(
    rsmq: RedisSMQ, queue: str
):
    mid = rsmq.send_message(queue, "hello")
    rsmq.receive_message(queue)

    rsmq.change_message_visibility(queue, mid, 0)

    again = rsmq.receive_message(queue)
    assert (again.id, again.rc) == (mid, 2)


def test_change_message_visibility_keeps_rc_fr_and_totalrecv(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")
    rsmq.receive_message(queue)
    before = r.hgetall(f"{ns}:{queue}:Q")

    rsmq.change_message_visibility(queue, mid, 5)

    assert r.hgetall(f"{ns}:{queue}:Q") == before


def test_change_message_visibility_of_an_absent_message_returns_false(
    rsmq: RedisSMQ, queue: str, ns_state
):
    rsmq.send_message(queue, "hello")
    before = ns_state()

    assert rsmq.change_message_visibility(queue, ABSENT_ID, 5) is False
    assert ns_state() == before


# -- delete --------------------------------------------------------------------------


def test_delete_message_removes_the_member_and_its_three_hash_fields(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "hello")
    other = rsmq.send_message(queue, "other")
    rsmq.receive_message(queue)

    assert rsmq.delete_message(queue, mid) is True

    assert r.zrange(f"{ns}:{queue}", 0, -1) == [other]
    fields = r.hkeys(f"{ns}:{queue}:Q")
    assert not {mid, f"{mid}:rc", f"{mid}:fr"} & set(fields)
    assert other in fields


def test_delete_message_keeps_totalsent_and_totalrecv(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")
    rsmq.receive_message(queue)

    rsmq.delete_message(queue, mid)

    attrs = rsmq.get_queue_attributes(queue)
    assert (attrs.totalsent, attrs.totalrecv, attrs.msgs) == (1, 1, 0)


def test_delete_message_of_an_absent_message_returns_false(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "hello")

    assert rsmq.delete_message(queue, ABSENT_ID) is False
    assert rsmq.get_queue_attributes(queue).msgs == 1


def test_delete_message_twice_returns_false_the_second_time(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")

    assert rsmq.delete_message(queue, mid) is True
    assert rsmq.delete_message(queue, mid) is False
