"""What is coming due (queues/ops/flow.py ``due``) and rescheduling delayed messages with
an exact undo (``reschedule``)."""

from __future__ import annotations

import pytest
import redis

from queues import InvalidArgument, RedisSMQ

MIN, HOUR, DAY = 60_000, 3_600_000, 86_400_000


def server_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) // 1000


def send_due(rsmq: RedisSMQ, r: redis.Redis, ns: str, q: str, at_ms: list[int]) -> list[str]:
    """Messages made visible at these epoch ms (scores written as a send_at would)."""
    ids = rsmq.send_messages(q, ["m"] * len(at_ms))
    r.zadd(f"{ns}:{q}", dict(zip(ids, at_ms, strict=True)))
    return ids


def test_it_counts_hidden_messages_by_the_hour_they_come_due(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    now = server_ms(r)
    base = now // HOUR * HOUR
    send_due(rsmq, r, ns, queue, [base + 2 * HOUR + 10] * 3 + [base + 5 * HOUR] * 2)
    send_due(rsmq, r, ns, queue, [base + 60 * HOUR])  # past the 48 hours
    rsmq.send_message(queue, "now")
    d = rsmq.due(queue, "hour")
    assert len(d.buckets) == 48
    assert d.buckets[0].start == d.now and d.buckets[0].end == base + HOUR
    assert [b.count for b in d.buckets[:6]] == [0, 0, 3, 0, 0, 2]
    assert (d.ahead, d.later, d.visible, d.hidden) == (5, 1, 1, 6)
    assert d.busiest is not None and d.busiest.start == base + 2 * HOUR


def test_the_peak_is_the_busiest_five_minutes_inside_the_busiest_bucket(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    now = server_ms(r)
    day = now // DAY * DAY + 3 * DAY  # three days ahead, 03:00-03:05 UTC
    spike = [day + 3 * HOUR + i * 1000 for i in range(40)]
    spread = [day + 7 * HOUR + i * MIN for i in range(30)]  # more that day, thinner
    send_due(rsmq, r, ns, queue, spike + spread)
    for scale in ("day", "hour"):
        d = rsmq.due(queue, scale)
        if scale == "hour":
            continue  # 3 days ahead: past the hour view's 48 hours
        assert d.peak is not None
        assert (d.peak.start, d.peak.end, d.peak.count) == (
            day + 3 * HOUR,
            day + 3 * HOUR + 5 * MIN,
            40,
        )


def test_minute_buckets_are_summed_into_the_peak(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    now = server_ms(r)
    five = (now // (5 * MIN) + 2) * 5 * MIN
    send_due(rsmq, r, ns, queue, [five + i * MIN + 5 for i in range(5)] * 2)
    d = rsmq.due(queue, "minute")
    assert len(d.buckets) == 60
    assert d.peak is not None and (d.peak.start, d.peak.count) == (five, 10)


def test_an_empty_queue_has_no_peak(rsmq: RedisSMQ, queue: str) -> None:
    d = rsmq.due(queue, "day")
    assert d.peak is None and d.busiest is None and d.ahead == 0


def test_due_peaks_reads_many_queues_in_one_round_trip(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    now = server_ms(r)
    names = [f"q{i}" for i in range(23)]
    for i, q in enumerate(names):
        rsmq.create_queue(q)
        send_due(rsmq, r, ns, q, [now + (i + 1) * HOUR] * (i + 1))
    peaks = rsmq.due_peaks(names)
    assert set(peaks) == set(names)
    for i, q in enumerate(names):
        p = peaks[q].peak
        assert p is not None and p.count == i + 1


def test_it_refuses_an_unknown_scale(rsmq: RedisSMQ, queue: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        rsmq.due(queue, "week")
    assert e.value.field == "scale"


# -- rescheduling ------------------------------------------------------------------


def scores(r: redis.Redis, ns: str, q: str) -> dict[str, float]:
    return dict(r.zrange(f"{ns}:{q}", 0, -1, withscores=True))


def test_it_reschedules_delayed_messages_still_as_they_were_read(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    now = server_ms(r)
    a, b, c = send_due(rsmq, r, ns, queue, [now + HOUR, now + 2 * HOUR, now + 3 * HOUR])
    acted = rsmq.reschedule(
        queue,
        [(a, now + HOUR, None), (b, now + 2 * HOUR, now + 10 * HOUR), (c, now + 1, now)],
    )
    assert (acted.done, acted.changed, acted.ids) == (2, 1, [a, b])
    s = scores(r, ns, queue)
    assert s[a] <= server_ms(r) and s[b] == now + 10 * HOUR and s[c] == now + 3 * HOUR


def test_it_never_reschedules_a_message_a_consumer_received(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    m = rsmq.send_message(queue, "x")
    got = rsmq.receive_message(queue, vt=3600)
    assert got is not None
    seen = int(scores(r, ns, queue)[m])
    acted = rsmq.reschedule(queue, [(m, seen, None)])
    assert (acted.done, acted.changed) == (0, 1)


def test_its_undo_puts_every_score_back_exactly_unless_changed_since(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    now = server_ms(r)
    ids = send_due(rsmq, r, ns, queue, [now + HOUR + i for i in range(600)])
    before = scores(r, ns, queue)
    token = rsmq.open_undo("spread_matches", queue)
    for k in range(0, 600, 200):
        part = ids[k : k + 200]
        rsmq.reschedule(
            queue, [(i, int(before[i]), now + 5 * HOUR + n) for n, i in enumerate(part)], keep=token
        )
    # met twice (a walk that meets a message it moved): its first score is the one kept
    rsmq.reschedule(queue, [(ids[0], now + 5 * HOUR, now + 6 * HOUR)], keep=token)
    rsmq.change_message_visibility(queue, ids[1], 100)  # changed since
    rsmq.delete_message(queue, ids[2])  # gone since
    info = rsmq.undo_info(token)
    assert info is not None and info.kind == "rescore" and info.count == 600
    done = rsmq.undo(token)
    assert (done.restored, done.taken, done.gone) == (598, 1, 1)
    after = scores(r, ns, queue)
    assert {i: after[i] for i in ids if i not in ids[1:3]} == {
        i: before[i] for i in ids if i not in ids[1:3]
    }
    assert rsmq.undo(token).already
