"""Rescheduling the delayed messages of a window, paced (queues/pacing.py ``When``):
deliver now, shift, spread — each with an Undo that puts every score back exactly."""

from __future__ import annotations

import time

import pytest
import redis

from queues import InvalidArgument, RedisSMQ, pacing

HOUR = 3_600_000
DELAYED = {"state": "delayed"}


def server_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) // 1000


def delayed(rsmq: RedisSMQ, r: redis.Redis, ns: str, q: str, at: list[int]) -> list[str]:
    ids: list[str] = []
    for k in range(0, len(at), 1000):
        part = at[k : k + 1000]
        got = rsmq.send_messages(q, ["m"] * len(part), delay=3600)
        r.zadd(f"{ns}:{q}", dict(zip(got, part, strict=True)))
        ids += got
    return ids


def scores(r: redis.Redis, ns: str, q: str) -> dict[str, float]:
    return dict(r.zrange(f"{ns}:{q}", 0, -1, withscores=True))


def plan(action: str, when: pacing.When, rate: float | None = None) -> pacing.Plan:
    return pacing.Plan("q", action, DELAYED, pace=pacing.Pace(rate), when=when)


def test_deliver_now_makes_the_window_visible_and_nothing_else(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    now = server_ms(r)
    before = delayed(rsmq, r, ns, "q", [now + HOUR + i for i in range(10)])
    inside = delayed(rsmq, r, ns, "q", [now + 2 * HOUR + i for i in range(30)])
    after = delayed(rsmq, r, ns, "q", [now + 3 * HOUR + i for i in range(10)])
    when = pacing.When(now + 2 * HOUR, now + 3 * HOUR)
    n = pacing.count_matches(rsmq, "q", DELAYED, when=when).matched
    assert n == 30
    p = pacing.run(rsmq, plan("deliver", when), n)
    assert (p.phase, p.done, p.changed) == ("done", 30, 0)
    s = scores(r, ns, "q")
    assert all(s[i] <= server_ms(r) for i in inside)
    assert all(s[i] >= now + HOUR for i in before + after)


def test_a_later_shift_moves_each_by_the_duration_once(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    now = server_ms(r)
    ids = delayed(rsmq, r, ns, "q", [now + HOUR + 1000 * i for i in range(500)])
    was = scores(r, ns, "q")
    when = pacing.When(now, now + 10 * HOUR)
    token = rsmq.open_undo("shift_matches", "q")
    p = pacing.run(rsmq, plan("shift", pacing.When(now, now + 10 * HOUR, shift_ms=600_000)), 500,
                   keep=token)  # fmt: skip
    assert p.done == 500
    s = scores(r, ns, "q")
    assert all(s[i] == was[i] + 600_000 for i in ids)
    assert when.holds(now + HOUR)
    assert rsmq.undo(token).restored == 500
    assert scores(r, ns, "q") == was


@pytest.mark.slow
def test_spread_moves_100000_delayed_messages_over_a_window_at_its_rate_and_undo_restores_them(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    now = server_ms(r)
    spike = now + HOUR
    n = 100_000
    # a spike: 100,000 due within the same second
    ids = delayed(rsmq, r, ns, "q", [spike + i % 1000 for i in range(n)])
    was = scores(r, ns, "q")
    when = pacing.When(spike, spike + 1000, spread_from=now + 2 * HOUR, spread_until=now + 3 * HOUR)
    assert pacing.count_matches(rsmq, "q", DELAYED, when=when).matched == n
    token = rsmq.open_undo("spread_matches", "q")
    rate = 5_000
    started = time.monotonic()
    p = pacing.run(rsmq, plan("spread", when, rate=rate), n, keep=token)
    took = time.monotonic() - started
    print(f"spread of {n:,} at {rate:,}/s: {took:.2f} s ({n / took:,.0f}/s)")
    assert (p.phase, p.done, p.changed) == ("done", n, 0)
    assert n / rate * 0.95 <= took <= n / rate * 1.15  # at its rate
    s = scores(r, ns, "q")
    new = sorted(s[i] for i in ids)
    assert new[0] == now + 2 * HOUR and new[-1] < now + 3 * HOUR
    # evenly: one every 36 ms (an hour over 100,000), in their order
    gaps = {new[k + 1] - new[k] for k in range(n - 1)}
    assert gaps <= {35.0, 36.0, 37.0}
    in_order = sorted(ids, key=lambda i: (was[i], i))
    assert [s[i] for i in in_order] == sorted(s[i] for i in in_order)
    undone = rsmq.undo(token)
    assert (undone.restored, undone.taken, undone.gone) == (n, 0, 0)
    assert scores(r, ns, "q") == was


def test_a_cancel_stops_it_after_the_current_step(rsmq: RedisSMQ, r: redis.Redis, ns: str) -> None:
    rsmq.create_queue("q")
    now = server_ms(r)
    delayed(rsmq, r, ns, "q", [now + HOUR + i for i in range(5)])
    when = pacing.When(now, now + 2 * HOUR)
    p = pacing.run(rsmq, plan("deliver", when, rate=4), 5, lambda p: pacing.CANCEL)
    assert (p.phase, p.done) == ("cancelled", 1)  # a step of one at 4 a second


@pytest.mark.parametrize(
    ("action", "when", "field"),
    [
        ("shift", pacing.When(0, 10), "shift"),
        ("spread", pacing.When(0, 10, spread_from=5, spread_until=5), "spread_until"),
        ("deliver", pacing.When(10, 10), "due_until"),
    ],
)
def test_it_refuses_a_bad_window_naming_the_field(
    rsmq: RedisSMQ, action: str, when: pacing.When, field: str
) -> None:
    rsmq.create_queue("q")
    with pytest.raises(InvalidArgument) as e:
        pacing.run(rsmq, plan(action, when), 1)
    assert e.value.field == field


def test_it_acts_on_delayed_messages_only(rsmq: RedisSMQ) -> None:
    with pytest.raises(InvalidArgument) as e:
        pacing.Plan("q", "deliver", {"state": "hidden"}, when=pacing.When()).check()
    assert e.value.field == "state"
