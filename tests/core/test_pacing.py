"""queues/pacing.py against the test Redis: count then act on every match, a message
changed since it was read left alone, the rate cap in time bounds, the canary that
stops on bounce-back (a real consumer failing the redriven messages back to the
dead-letter queue) and the one that goes on, fresh receive counts, bad input refused
naming the field."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from queues import RedisSMQ
from queues.errors import InvalidArgument
from queues.pacing import CANCEL, PAUSE, RUN, Pace, Plan, Progress, checked_pace, count_matches, run


def test_count_then_delete_every_match_and_only_those(rsmq: RedisSMQ, queue: str) -> None:
    bodies = [f"order {i} {'poison' if i % 3 == 0 else 'fine'}" for i in range(2500)]
    for k in range(0, len(bodies), 1000):
        rsmq.send_messages(queue, bodies[k : k + 1000])
    match = {"state": "all", "min_rc": 0, "contains": "poison"}

    counted = count_matches(rsmq, queue, match)
    assert (counted.phase, counted.matched) == ("counted", 834)

    done = run(rsmq, Plan(queue, "delete", match), counted.matched)
    assert (done.phase, done.done, done.changed) == ("done", 834, 0)
    left = rsmq.browse(queue, limit=1000, preview=1, contains="poison")
    assert left.items == []
    assert rsmq.get_queue_attributes(queue).msgs == 2500 - 834


def test_never_more_than_the_confirmed_count(rsmq: RedisSMQ, queue: str) -> None:
    rsmq.send_messages(queue, [f"m{i}" for i in range(50)])
    got = run(rsmq, Plan(queue, "delete", {"state": "all"}), 20)
    assert got.done == 20
    assert rsmq.get_queue_attributes(queue).msgs == 30


def test_a_message_changed_since_it_was_read_is_left_alone(rsmq: RedisSMQ, queue: str) -> None:
    ids = rsmq.send_messages(queue, ["a", "b", "c"])
    page = rsmq.browse(queue, limit=10)
    received = rsmq.receive_message(queue, vt=60)  # a consumer takes "a" meanwhile
    assert received is not None and received.id == ids[0]

    acted = rsmq.act_checked(queue, "delete", [(m.id, m.visible_at) for m in page.items])

    assert (acted.done, acted.changed, sorted(acted.ids)) == (2, 1, sorted(ids[1:]))
    assert rsmq.get_message(queue, ids[0]) is not None  # in flight, untouched


def test_requeue_and_visibility_of_every_match(rsmq: RedisSMQ, queue: str, r: redis.Redis) -> None:
    rsmq.send_messages(queue, [f"m{i}" for i in range(30)])
    rsmq.receive_messages(queue, 10, vt=300)
    got = run(rsmq, Plan(queue, "requeue", {"state": "inflight"}), 10)
    assert got.done == 10
    assert rsmq.get_queue_attributes(queue).hiddenmsgs == 0

    got = run(rsmq, Plan(queue, "visibility", {"state": "all"}, vt=600), 30)
    assert got.done == 30  # each once: pushed later, behind the walk from the end
    assert rsmq.get_queue_attributes(queue).hiddenmsgs == 30


@pytest.fixture
def dlq(rsmq: RedisSMQ, queue: str) -> str:
    """``queue`` dead-letters into "dead" after one receive."""
    rsmq.create_queue("dead")
    rsmq.set_dead_letter_policy(queue, "dead", 1)
    return "dead"


def _dead_letter(rsmq: RedisSMQ, queue: str, n: int) -> list[str]:
    ids: list[str] = []
    for k in range(0, n, 1000):
        ids += rsmq.send_messages(queue, [f"job {i}" for i in range(k, min(n, k + 1000))])
    for k in range(0, n, 1000):
        rsmq.receive_messages(queue, min(1000, n - k), vt=0)
    while rsmq.receive_messages(queue, 1000, vt=0):  # the policy moves them
        pass
    return ids


def test_redrive_and_move_start_with_a_fresh_receive_count(
    rsmq: RedisSMQ, queue: str, dlq: str, r: redis.Redis, ns: str
) -> None:
    ids = _dead_letter(rsmq, queue, 4)
    assert rsmq.get_message(dlq, ids[0]).rc == 1  # type: ignore[union-attr]
    got = run(rsmq, Plan(dlq, "redrive", {"state": "visible"}), 2)
    assert got.done == 2
    assert [rsmq.get_message(queue, i).rc for i in ids[:2]] == [0, 0]  # type: ignore[union-attr]
    assert not r.hexists(f"{ns}:{queue}:Q", f"{ids[0]}:fr")

    rsmq.create_queue("other")
    kept = run(rsmq, Plan(dlq, "move", {"state": "all"}, to="other", keep_counts=True), 1)
    fresh = run(rsmq, Plan(dlq, "move", {"state": "all"}, to="other"), 1)
    assert (kept.done, fresh.done) == (1, 1)
    assert rsmq.get_message("other", ids[2]).rc == 1  # type: ignore[union-attr]
    assert rsmq.get_message("other", ids[3]).rc == 0  # type: ignore[union-attr]


def test_the_rate_cap_is_honoured(rsmq: RedisSMQ, queue: str) -> None:
    rsmq.send_messages(queue, [f"m{i}" for i in range(60)])
    rsmq.create_queue("slow")
    start = time.monotonic()
    got = run(rsmq, Plan(queue, "move", {"state": "all"}, to="slow", pace=Pace(rate=40)), 60)
    took = time.monotonic() - start
    assert got.done == 60
    # steps of 10 at 40 a second: the last starts 50 / 40 s after the first
    assert 1.2 <= took < 6, took


class FailingConsumer:
    """A real consumer of ``queue`` that fails every message it receives (never deletes
    it): with the policy's maxrc of 1, each goes back to the dead-letter queue on its
    next receive."""

    def __init__(self, redis_url: str, ns: str, queue: str) -> None:
        self.rsmq = RedisSMQ(url=redis_url, ns=ns)
        self.queue = queue
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        while not self.stop.is_set():
            if not self.rsmq.receive_messages(self.queue, 100, vt=0):
                time.sleep(0.05)


def test_a_canary_that_comes_back_stops_the_redrive(
    rsmq: RedisSMQ, queue: str, dlq: str, redis_url: str, ns: str
) -> None:
    _dead_letter(rsmq, queue, 200)
    c = FailingConsumer(redis_url, ns, queue)
    c.thread.start()
    try:
        plan = Plan(dlq, "redrive", {"state": "visible"}, pace=Pace(50, 20, 5, 10))
        got = run(rsmq, plan, 200)
    finally:
        c.stop.set()
        c.thread.join(5)
        c.rsmq.close()
    assert got.phase == "stopped", got
    assert got.done == 20 and len(got.canary_ids) == 20
    assert got.bounced > 2
    assert "canary messages came back to dead" in got.note
    # nothing past the canary left the dead-letter queue
    assert rsmq.get_queue_attributes(dlq).msgs >= 180


def test_a_canary_that_stays_goes_on_at_the_cap(rsmq: RedisSMQ, queue: str, dlq: str) -> None:
    _dead_letter(rsmq, queue, 100)
    plan = Plan(dlq, "redrive", {"state": "visible"}, pace=Pace(200, 10, 1, 10))
    start = time.monotonic()
    got = run(rsmq, plan, 100)
    assert (got.phase, got.done, got.bounced) == ("done", 100, 0)
    assert time.monotonic() - start >= 1  # watched the canary
    assert "going on" in got.note
    assert rsmq.get_queue_attributes(queue).msgs == 100


def test_pause_resume_and_cancel(rsmq: RedisSMQ, queue: str) -> None:
    rsmq.send_messages(queue, [f"m{i}" for i in range(100)])
    said: list[str] = []
    words = iter([RUN, PAUSE, PAUSE, PAUSE, RUN, RUN, CANCEL])

    def control(p: Progress) -> str:
        said.append(p.phase)
        return next(words, CANCEL)

    got = run(rsmq, Plan(queue, "delete", {"state": "all"}, pace=Pace(rate=40)), 100, control)
    assert got.phase == "cancelled"
    assert "paused" in said
    assert 0 < got.done < 100
    assert rsmq.get_queue_attributes(queue).msgs == 100 - got.done


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"rate": 0}, "rate"),
        ({"rate": "-3"}, "rate"),
        ({"rate": "fast"}, "rate"),
        ({"canary": 11, "watch": 5, "count": 10}, "canary"),
        ({"canary": 5, "watch": 0}, "watch"),
        ({"max_bounce": 101}, "max_bounce"),
        ({"watch": 99999}, "watch"),
    ],
)
def test_bad_pacing_is_refused_naming_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        checked_pace(**kwargs)
    assert e.value.field == field


def test_bad_plans_are_refused_naming_the_field_and_change_nothing(
    rsmq: RedisSMQ, queue: str, ns_state
) -> None:
    rsmq.send_messages(queue, ["a", "b"])
    before = ns_state()
    bad = [
        (Plan(queue, "explode", {}), "action"),
        (Plan(queue, "move", {}), "to"),
        (Plan(queue, "move", {}, to=queue), "to"),
        (Plan(queue, "requeue", {"state": "all"}), "state"),
        (Plan(queue, "visibility", {}, vt=-1), "vt"),
        (Plan(queue, "delete", {}, pace=Pace(canary=1, watch=1)), "canary"),
    ]
    for plan, field in bad:
        with pytest.raises(InvalidArgument) as e:
            run(rsmq, plan, 2)
        assert e.value.field == field, plan
    assert ns_state() == before


def test_no_burst_after_a_pause(rsmq: RedisSMQ, queue: str) -> None:
    """Paused 1.5 s at 20 a second: what was not moved meanwhile is not made up at once."""
    rsmq.send_messages(queue, [f"m{i}" for i in range(100)])
    rsmq.create_queue("slow")
    pause_until = [0.0]
    done_at: list[tuple[float, int]] = []

    def control(p: Progress) -> str:
        now = time.monotonic()
        done_at.append((now, p.done))
        if p.done >= 10 and not pause_until[0]:
            pause_until[0] = now + 1.5
        return PAUSE if now < pause_until[0] else RUN

    plan = Plan(queue, "move", {"state": "all"}, to="slow", pace=Pace(rate=20))
    start = time.monotonic()
    got = run(rsmq, plan, 40, control)
    took = time.monotonic() - start
    assert got.done == 40
    # 40 at 20 a second is 1.75 s of steps (the last starts 35 / 20 s in), plus 1.5 s paused
    assert took >= 3.0, took
    resumed = pause_until[0]
    soon = [d for t, d in done_at if resumed <= t <= resumed + 0.3]
    assert not soon or max(soon) - min(soon) <= 10  # at most two steps of 5 in 0.3 s
