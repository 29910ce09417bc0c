"""Pause, throttle, resume (queues/ops/flow.py): a flag beside the RSMQ layout that this
client's receive, receive_messages and pop honour atomically in the receive script."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

from queues import AsyncRedisSMQ, InvalidArgument, QueueNotFound, RedisSMQ


def test_a_paused_queue_gives_nothing_to_receive_receive_messages_or_pop(
    rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["a", "b", "c"])
    flow = rsmq.pause_queue(queue, reason="deploy", by="ann")
    assert (flow.state, flow.reason, flow.by, flow.until) == ("paused", "deploy", "ann", None)
    assert rsmq.receive_message(queue) is None
    assert rsmq.receive_messages(queue, 3) == []
    assert rsmq.pop_message(queue) is None
    assert rsmq.pop_messages(queue, 2) == []
    attrs = rsmq.get_queue_attributes(queue)
    assert (attrs.totalrecv, attrs.msgs, attrs.hiddenmsgs) == (0, 3, 0)


def test_a_held_receive_is_counted_on_the_flag_not_on_the_queue(rsmq: RedisSMQ, queue: str) -> None:
    rsmq.send_message(queue, "a")
    rsmq.pause_queue(queue)
    rsmq.receive_message(queue)
    rsmq.receive_messages(queue, 5)
    flow = rsmq.queue_flow(queue)
    assert flow is not None
    assert (flow.held, flow.received, flow.granted, flow.bypassed) == (2, 0, 0, 0)
    assert flow.last_held is not None and flow.last_held >= flow.since


def test_resume_gives_the_messages_out_again_and_says_what_the_flag_was(
    rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_message(queue, "a")
    rsmq.pause_queue(queue, reason="why")
    was = rsmq.resume_queue(queue)
    assert was is not None and was.reason == "why"
    assert rsmq.queue_flow(queue) is None
    assert rsmq.resume_queue(queue) is None  # nothing to resume
    m = rsmq.receive_message(queue)
    assert m is not None and m.message == "a"


def test_the_async_client_honours_the_pause_too(redis_url: str, ns: str) -> None:
    async def go() -> tuple[object, object]:
        async with AsyncRedisSMQ(url=redis_url, ns=ns) as a:
            await a.create_queue("q")
            await a.send_message("q", "x")
            await a.pause_queue("q")
            held = await a.receive_message("q")
            await a.resume_queue("q")
            return held, await a.receive_message("q")

    held, got = asyncio.run(go())
    assert held is None and got is not None


def test_a_pause_for_a_while_resumes_by_itself(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    rsmq.send_message(queue, "a")
    flow = rsmq.pause_queue(queue, seconds=0.3)
    assert flow.until == flow.since + 300
    assert 0 < r.pttl(f"{ns}:{queue}:x:flow") <= 300
    assert rsmq.receive_message(queue) is None
    time.sleep(0.35)
    assert rsmq.queue_flow(queue) is None
    assert rsmq.receive_message(queue) is not None
    assert rsmq.flows() == {}


def test_receive_flow_says_why_it_was_held_and_how_long_to_wait(rsmq: RedisSMQ, queue: str) -> None:
    rsmq.send_messages(queue, [str(i) for i in range(10)])
    rsmq.pause_queue(queue)
    got = rsmq.receive_flow(queue, 5)
    assert (got.messages, got.held, got.wait) == ([], "paused", 0.0)
    rsmq.throttle_queue(queue, 2)  # a full bucket: 2
    got = rsmq.receive_flow(queue, 5)
    assert len(got.messages) == 2 and got.held == "throttled"
    assert 0 < got.wait <= 0.5
    got = rsmq.receive_flow(queue, 5)
    assert got.messages == [] and got.held == "throttled" and 0 < got.wait <= 0.5
    rsmq.resume_queue(queue)
    got = rsmq.receive_flow(queue, 5)
    assert len(got.messages) == 5 and got.held == ""


def test_a_throttle_lets_its_rate_through_and_counts_what_it_granted(
    rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.send_messages(queue, ["m"] * 100)
    rsmq.throttle_queue(queue, 20, reason="slow downstream")
    started = time.monotonic()
    got = 0
    while time.monotonic() - started < 1.0:
        got += len(rsmq.receive_messages(queue, 10))
        time.sleep(0.005)
    # a full bucket (20) and a second's refill (20)
    assert 36 <= got <= 42
    flow = rsmq.queue_flow(queue)
    assert flow is not None and flow.rate == 20
    assert flow.granted == got and flow.received == got and flow.bypassed == 0


def test_receives_that_ignore_the_flag_show_as_bypassed(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    rsmq.send_messages(queue, ["a", "b"])
    rsmq.pause_queue(queue)
    r.hincrby(f"{ns}:{queue}:Q", "totalrecv", 2)  # what another client's receives do
    flow = rsmq.queue_flow(queue)
    assert flow is not None and (flow.received, flow.bypassed) == (2, 2)


def test_the_flag_lives_beside_the_rsmq_layout(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    rsmq.throttle_queue(queue, 5, reason="r")
    assert r.type(f"{ns}:{queue}:x:flow") == "hash"
    assert r.hget(f"{ns}:{queue}:x:flow", "state") == "throttled"
    assert r.hkeys(f"{ns}:{queue}:Q") == ["vt", "delay", "maxsize", "created", "modified"]
    assert set(r.hkeys(f"{ns}:@flow")) == {queue}


def test_flows_lists_the_flagged_queues_of_the_namespace(rsmq: RedisSMQ) -> None:
    for q in ("a", "b", "c"):
        rsmq.create_queue(q)
    rsmq.pause_queue("a", reason="incident 7", seconds=60)
    rsmq.throttle_queue("b", 3.5)
    flows = rsmq.flows()
    assert set(flows) == {"a", "b"}
    assert flows["a"].paused and flows["a"].reason == "incident 7" and flows["a"].until
    assert flows["b"].state == "throttled" and flows["b"].rate == 3.5
    rsmq.resume_queue("a")
    assert set(rsmq.flows()) == {"b"}


def test_deleting_the_queue_takes_its_flag_along(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    rsmq.pause_queue(queue)
    rsmq.delete_queue(queue)
    assert not r.exists(f"{ns}:{queue}:x:flow")
    assert rsmq.flows() == {}
    rsmq.create_queue(queue)
    rsmq.send_message(queue, "x")
    assert rsmq.receive_message(queue) is not None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"rate": 0}, "rate"),
        ({"rate": -1}, "rate"),
        ({"rate": 1e9}, "rate"),
        ({"rate": True}, "rate"),
        ({"rate": 1, "seconds": 0}, "seconds"),
        ({"rate": 1, "seconds": 31 * 86400}, "seconds"),
        ({"rate": 1, "reason": "x" * 501}, "reason"),
    ],
)
def test_it_refuses_a_bad_throttle_naming_the_field(
    rsmq: RedisSMQ, queue: str, kwargs: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidArgument) as e:
        rsmq.throttle_queue(queue, **kwargs)  # type: ignore[arg-type]
    assert e.value.field == field
    assert rsmq.queue_flow(queue) is None


def test_it_refuses_to_flag_a_missing_queue(rsmq: RedisSMQ) -> None:
    with pytest.raises(QueueNotFound):
        rsmq.pause_queue("nope")
    with pytest.raises(QueueNotFound):
        rsmq.queue_flow("nope")


def test_flow_view_reads_the_flag_the_workers_and_what_is_due_in_one_round_trip(
    rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.register_worker("w1", "host", 1, {queue: 2}, 0, 30)
    rsmq.register_worker("w2", "host", 2, {"other": 1}, 0, 30)
    rsmq.send_messages(queue, ["a", "b"], delay=120)
    rsmq.pause_queue(queue, reason="r")
    view = rsmq.flow_view(queue, "minute")
    assert view.flow is not None and view.flow.reason == "r"
    assert [w.id for w in view.workers] == ["w1"] and view.workers[0].flow
    assert view.due.scale == "minute" and view.due.ahead == 2


def test_queue_stats_flagged_reads_the_flags_and_stored_peaks_with_the_stats(
    rsmq: RedisSMQ,
) -> None:
    for q in ("a", "b"):
        rsmq.create_queue(q)
    rsmq.send_messages("a", ["x"] * 3, delay=7200)
    rsmq.throttle_queue("b", 4)
    assert rsmq.store_due_peaks(rsmq.due_peaks(["a", "b"]), keep=60) == 1
    got = rsmq.queue_stats_flagged(["a", "b", "bad name"])
    assert [s.qname for s in got.stats] == ["a", "b", "bad name"]
    assert got.stats[2].unreadable and got.stats[0].delayed == 3
    assert set(got.flows) == {"b"} and got.flows["b"].rate == 4
    assert set(got.peaks) == {"a"} and got.peaks["a"].peak.count == 3
    assert rsmq.store_due_peaks({}, keep=60) == 0
    assert rsmq.queue_stats_flagged(["a"]).peaks == {}
