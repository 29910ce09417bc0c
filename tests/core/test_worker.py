"""The worker runtime, run as real `rsmq worker` processes on the test Redis.

Each test starts ``python -m queues.cli --url URL --ns NS worker support.workers.app:worker``
(tests/support/workers/app.py: what a handler does is said by the message's JSON body) and
reads what the handlers did from the records they send to the "results" queue.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.workers.harness import Monitor, Records, WorkerProcess, wait_for

from queues import RedisSMQ
from queues import scripts as S

Start = Callable[..., WorkerProcess]


@pytest.fixture
def records(rsmq: RedisSMQ) -> Records:
    return Records(rsmq)


@pytest.fixture
def start(redis_url: str, ns: str, tmp_path: Path) -> Iterator[Start]:
    """``start(queues, *cli_args, target=, url=, ns=, env=, poll=, grace=, realtime=)``: a
    worker process of workers/app.py handling ``queues`` (WORKER_QUEUES syntax)."""
    started: list[WorkerProcess] = []

    def start_worker(
        queues: str,
        *args: str,
        target: str = "support.workers.app:worker",
        url: str | None = redis_url,
        ns: str | None = ns,
        env: dict[str, str] | None = None,
        **settings: Any,
    ) -> WorkerProcess:
        env = {"WORKER_QUEUES": queues, **(env or {})}
        env |= {f"WORKER_{k.upper()}": str(v) for k, v in settings.items()}
        log = tmp_path / f"worker-{len(started)}.log"
        worker = WorkerProcess(log, target, url, ns, args, env)
        started.append(worker)
        return worker

    yield start_worker
    for worker in started:
        worker.stop()


def send(rsmq: RedisSMQ, qname: str, **spec: Any) -> str:
    return rsmq.send_message(qname, json.dumps(spec))


def queue_empty(rsmq: RedisSMQ, qname: str) -> bool:
    return rsmq.get_queue_attributes(qname).msgs == 0


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals running at one moment."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    running = most = 0
    for _, step in events:  # at a tie, an end (-1) sorts before a start
        running += step
        most = max(most, running)
    return most


def intervals(records: list[dict[str, Any]]) -> list[tuple[float, float]]:
    return [(r["start"], r["end"]) for r in records]


# -- retries, dead letters ----------------------------------------------------------------


def test_a_handler_that_fails_twice_then_succeeds_runs_three_times_with_backoff(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    start("jobs:backoff=1")

    mid = send(rsmq, "jobs", fail=[True, True, False])

    ends = records.wait(3)
    assert [(e["id"], e["rc"], e["ok"]) for e in ends] == [
        (mid, 1, False), (mid, 2, False), (mid, 3, True),
    ]  # fmt: skip
    # backoff × 2^(rc-1): visible again 1 s after the first failure, 2 s after the second
    assert 0.95 <= ends[1]["start"] - ends[0]["end"] < 1.6
    assert 1.95 <= ends[2]["start"] - ends[1]["end"] < 2.6
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the message deleted")
    assert rsmq.get_queue_attributes("jobs").totalrecv == 3


def test_a_handler_that_always_fails_dead_letters_after_maxrc_and_redrive_brings_it_back(
    rsmq: RedisSMQ, records: Records, start: Start, tmp_path: Path
):
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("jobs", "dlq", 3)
    fixed = tmp_path / "fixed"
    start("jobs:backoff=0")

    mid = send(rsmq, "jobs", fixed_when=str(fixed))

    ends = records.wait(3)
    assert [(e["rc"], e["ok"]) for e in ends] == [(1, False), (2, False), (3, False)]
    wait_for(lambda: rsmq.get_queue_attributes("dlq").msgs == 1, 5, "the dead letter")
    assert [m.id for m in rsmq.list_messages("dlq").items] == [mid]
    assert rsmq.get_dead_letter_policy("jobs").deadlettered == 1
    time.sleep(0.3)
    assert len(records.ends()) == 3  # never a 4th attempt

    fixed.touch()
    assert rsmq.redrive("dlq") == 1

    again = records.wait(4)[3]
    assert (again["id"], again["rc"], again["ok"]) == (mid, 1, True)
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the message deleted")
    assert rsmq.get_queue_attributes("dlq").msgs == 0


# -- dying, stopping ----------------------------------------------------------------------


def test_a_message_of_a_worker_killed_mid_message_goes_to_another_worker_after_vt(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs", vt=2)
    first = start("jobs")
    mid = send(rsmq, "jobs", sleep=[60, 0], record_start=True)
    (started,) = records.wait(1, event="start")
    other = start("jobs")
    other.wait_started()

    first.signal(signal.SIGKILL)
    killed = time.time()
    first.wait(5)

    (end,) = records.wait(1, timeout=10)
    assert (end["id"], end["rc"], end["ok"], end["pid"]) == (mid, 2, True, other.pid)
    assert started["pid"] == first.pid
    # hidden until the vt its last heartbeat set ran out (heartbeats every vt / 3)
    assert 1.1 <= end["start"] - killed < 3
    # (2 s on the Redis server's clock, in whole ms; the workers stamp with their own)
    assert end["start"] - started["start"] >= 2 - 0.01
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the message deleted")


def test_sigterm_lets_a_running_handler_finish_and_delete_its_message_then_exits_0(
    rsmq: RedisSMQ, records: Records, start: Start, tmp_path: Path
):
    rsmq.create_queue("jobs")
    worker = start("jobs:concurrency=2", grace=10)
    done = tmp_path / "done"
    mid = send(rsmq, "jobs", wait_for=str(done), record_start=True)
    records.wait(1, event="start")

    worker.signal(signal.SIGTERM)
    time.sleep(0.3)
    later = send(rsmq, "jobs")  # sent once the worker is stopping: left alone
    time.sleep(0.3)
    assert worker.proc.poll() is None  # still draining
    done.touch()
    finished = time.time()
    code = worker.wait(5)

    assert code == 0
    assert time.time() - finished < 1.5
    (end,) = records.wait(1)
    assert (end["id"], end["ok"]) == (mid, True)
    assert rsmq.get_message("jobs", mid) is None
    info = rsmq.get_message("jobs", later)
    assert info is not None and (info.rc, info.state) == (0, "visible")
    assert "worker stopped" in worker.output()


def test_sigterm_releases_a_handler_still_running_after_the_grace_period(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs", vt=60)
    worker = start("jobs", grace=1)
    mid = send(rsmq, "jobs", sleep=60, record_start=True)
    records.wait(1, event="start")

    worker.signal(signal.SIGTERM)
    stopped = time.time()
    code = worker.wait(5)

    assert code == 0
    assert 0.9 <= time.time() - stopped < 2.5
    info = rsmq.get_message("jobs", mid)
    assert info is not None and (info.state, info.rc) == ("visible", 1)
    assert records.ends() == []


def test_sigterm_under_load_leaves_no_message_in_flight(rsmq: RedisSMQ, start: Start):
    names = [f"q{i}" for i in range(8)]
    for name in names:
        rsmq.create_queue(name, vt=60)
        for _ in range(3):  # enough that each one is still busy when its SIGTERM comes
            rsmq.send_messages(name, ["{}"] * 10_000)
    workers = [start(f"{name}:noop=1:concurrency=16:batch=16") for name in names]
    for worker in workers:
        worker.wait_started()
    time.sleep(0.2)

    for worker in workers:  # each one at a slightly different moment of its work
        worker.signal(signal.SIGTERM)
        time.sleep(0.03)

    assert [worker.wait(10) for worker in workers] == [0] * len(workers)
    in_flight = {name: rsmq.list_messages(name, state="inflight").total for name in names}
    assert in_flight == dict.fromkeys(names, 0)
    assert all(rsmq.get_queue_attributes(name).msgs > 0 for name in names)  # were busy


# -- acks: finished messages are deleted in batches -------------------------------------------


def test_finished_messages_are_deleted_in_batches_of_up_to_ack_batch_each_id_once(
    rsmq: RedisSMQ, ns: str, redis_url: str, start: Start
):
    rsmq.create_queue("jobs")
    ids = rsmq.send_messages("jobs", ["{}"] * 1000) + rsmq.send_messages("jobs", ["{}"] * 1000)
    rsmq.delete_messages("jobs", [])  # the script loaded: MONITOR shows a NOSCRIPT try too

    with Monitor(redis_url) as monitor:
        start("jobs:noop=1:concurrency=16:batch=16", ack_linger=0.05, ack_batch=100)
        wait_for(lambda: queue_empty(rsmq, "jobs"), 30, "every message deleted")

    deletes = [argv for _, argv in monitor.calls(S.DELETE.sha, f"{ns}:jobs")]
    assert sorted(i for argv in deletes for i in argv) == sorted(ids)
    assert max(len(argv) for argv in deletes) <= 100
    assert len(deletes) <= len(ids) / 10  # one call per message before
    assert rsmq.get_queue_attributes("jobs").totalrecv == len(ids)


def test_an_ack_is_held_for_its_linger_but_never_while_its_vt_runs_low(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs", vt=3)
    start("jobs", ack_linger=30)

    send(rsmq, "jobs")

    (end,) = records.wait(1)
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the message deleted")
    deleted = time.time()
    # held, not deleted at once; deleted while a third of its 3 s vt was left
    assert 1.5 <= deleted - end["start"] < 2.5
    time.sleep(1.5)  # past its vt: it was never handed out again
    assert rsmq.get_queue_attributes("jobs").totalrecv == 1
    assert len(records.ends()) == 1


def test_a_worker_killed_holding_acks_loses_nothing_the_messages_run_again(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs", vt=3)
    ids = rsmq.send_messages("jobs", ["{}"] * 100)
    first = start("jobs:concurrency=16", ack_linger=30, ack_batch=1000)
    records.wait(100)

    first.signal(signal.SIGKILL)
    first.wait(5)
    held = rsmq.get_queue_attributes("jobs").msgs
    start("jobs:concurrency=16")

    wait_for(lambda: queue_empty(rsmq, "jobs"), 15, "every message deleted")
    assert held > 0  # the killed worker's acks were never sent ...
    ends = records.ends()
    assert {e["id"] for e in ends} == set(ids)  # ... every message ran and is deleted ...
    assert len([e for e in ends if e["rc"] == 2]) == held  # ... those ran once more
    assert all(e["ok"] for e in ends)
    assert rsmq.get_queue_attributes("jobs").totalrecv == len(ids) + held


def test_sigterm_deletes_the_acks_it_holds_before_it_exits(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs", vt=60)
    worker = start("jobs:concurrency=4", ack_linger=30)
    rsmq.send_messages("jobs", ["{}"] * 10)
    records.wait(10)
    assert rsmq.get_queue_attributes("jobs").msgs == 10  # finished, their acks held

    worker.signal(signal.SIGTERM)
    stopped = time.time()

    assert worker.wait(5) == 0
    assert time.time() - stopped < 1.5
    assert rsmq.get_queue_attributes("jobs").msgs == 0


# -- heartbeat, concurrency, timeout, batches ------------------------------------------------


def test_the_heartbeat_keeps_a_2s_vt_message_hidden_through_a_6s_handler(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs", vt=2)
    start("jobs:concurrency=2")
    start("jobs")

    mid = send(rsmq, "jobs", sleep=6)

    (end,) = records.wait(1, timeout=15)
    time.sleep(0.3)
    assert len(records.fetch()) == 1
    assert (end["id"], end["rc"], end["ok"]) == (mid, 1, True)
    assert end["end"] - end["start"] >= 6
    attrs = rsmq.get_queue_attributes("jobs")
    assert (attrs.totalrecv, attrs.msgs) == (1, 0)


def test_no_more_handlers_run_at_once_than_the_concurrency_and_all_of_them_under_load(
    rsmq: RedisSMQ, ns: str, redis_url: str, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    rsmq.send_messages("jobs", [json.dumps({"sleep": 0.3})] * 12)

    with Monitor(redis_url) as monitor:
        start("jobs:concurrency=3:batch=10")
        ends = records.wait(12)

    assert max_overlap(intervals(ends)) == 3
    asked = [int(argv[0]) for _, argv in monitor.calls(S.RECEIVE.sha, f"{ns}:jobs")]
    assert asked and max(asked) == 3  # never more than the free handler threads


def test_messages_are_received_in_batches_of_up_to_the_free_handler_threads(
    rsmq: RedisSMQ, ns: str, redis_url: str, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    rsmq.send_messages("jobs", [json.dumps({"sleep": 0.3})] * 10)

    with Monitor(redis_url) as monitor:
        start("jobs:concurrency=10:batch=10", poll=30)
        ends = records.wait(10)

    first_start = min(e["start"] for e in ends)
    receives = monitor.calls(S.RECEIVE.sha, f"{ns}:jobs")
    before = [argv for t, argv in receives if t < first_start]
    assert [argv[0] for argv in before] == ["10"]  # one receive asked for all 10 ...
    assert len({e["fr"] for e in ends}) == 1  # ... and got them: one first-receive time
    assert max_overlap(intervals(ends)) == 10
    assert rsmq.get_queue_attributes("jobs").totalrecv == 10


def test_a_handler_past_its_timeout_is_given_up_on_and_its_message_released(
    rsmq: RedisSMQ, records: Records, start: Start, tmp_path: Path
):
    rsmq.create_queue("jobs", vt=60)
    release = tmp_path / "release"
    worker = start("jobs:concurrency=2:timeout=0.5:backoff=0")

    mid = send(rsmq, "jobs", wait_for=[str(release), None], fail=[True, False], record_start=True)

    first, second = records.wait(2, event="start")
    assert (first["rc"], second["rc"]) == (1, 2)
    assert 0.5 <= second["start"] - first["start"] < 1.2
    (end,) = records.wait(1)
    assert (end["rc"], end["ok"]) == (2, True)
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the message deleted")
    release.touch()  # the given-up handler returns at last (failing): ignored
    records.wait(2)
    time.sleep(0.3)
    assert rsmq.get_queue_attributes("jobs").totalrecv == 2
    assert "handler timed out after 0.5 s" in worker.output()
    assert mid == end["id"]


def test_a_timed_out_handler_that_returns_late_does_not_touch_the_next_attempt(
    rsmq: RedisSMQ, records: Records, start: Start, tmp_path: Path
):
    rsmq.create_queue("jobs", vt=60)
    first_done, second_done = tmp_path / "first", tmp_path / "second"
    start("jobs:concurrency=3:timeout=1:backoff=0")
    send(rsmq, "jobs", wait_for=[str(first_done), str(second_done)], fail=[True, False],
         record_start=True)  # fmt: skip
    records.wait(2, event="start")  # the first attempt timed out, the second runs

    first_done.touch()  # the given-up first attempt now fails
    time.sleep(0.4)
    second_done.touch()
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the message deleted")
    time.sleep(0.3)

    assert sorted(r["rc"] for r in records.fetch() if r["event"] == "start") == [1, 2]
    assert rsmq.get_queue_attributes("jobs").totalrecv == 2


# -- realtime -------------------------------------------------------------------------------


def test_a_realtime_send_wakes_the_worker_in_under_100ms_without_polling(
    redis_url: str, ns: str, rsmq: RedisSMQ, r, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    sender = RedisSMQ(url=redis_url, ns=ns, realtime=True)
    sender.ping()
    start("jobs:concurrency=2", poll=30)
    channel = rsmq.realtime_channel("jobs")
    wait_for(lambda: r.pubsub_numsub(channel)[0][1] == 1, 10, "the worker's subscription")
    time.sleep(0.2)  # past the worker's first receive: it now waits 30 s for a wake-up

    quiet = send(rsmq, "jobs")  # no realtime publish: waits for the next poll
    time.sleep(1)
    assert records.fetch() == []
    latencies = []
    for _ in range(5):
        sent = time.time()
        mid = send(sender, "jobs")
        (got,) = wait_for(lambda m=mid: [e for e in records.ends() if e["id"] == m], 5, mid)
        latencies.append(got["start"] - sent)

    assert max(latencies) < 0.1, latencies
    assert quiet in {e["id"] for e in records.ends()}  # woken along with the first
    sender.close()


# -- processes, logs, async handlers -------------------------------------------------------------


def test_processes_2_runs_two_worker_processes_and_sigterm_stops_both(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    worker = start("jobs", "--processes", "2")
    worker.wait_started(2)
    children = worker.worker_children()

    rsmq.send_messages("jobs", [json.dumps({"sleep": 0.2})] * 10)

    ends = records.wait(10)
    assert {e["pid"] for e in ends} == set(children)
    assert len(children) == 2 and worker.pid not in children
    worker.signal(signal.SIGTERM)
    assert worker.wait(10) == 0
    assert worker.output().count("worker stopped") == 2


def test_log_format_json_writes_one_json_object_per_line_with_event_queue_and_msg_id(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    worker = start("jobs:backoff=0", "--log-format", "json", "--log-level", "DEBUG")
    mid = send(rsmq, "jobs", fail=[True, False])
    records.wait(2)
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the message deleted")
    worker.signal(signal.SIGTERM)
    worker.wait(10)

    lines = [json.loads(line) for line in worker.output().splitlines() if line.strip()]

    by_event = {line.get("event"): line for line in lines}
    assert by_event["start"]["queues"] == ["jobs"]
    assert by_event["start"]["pid"] == worker.pid
    failed = by_event["failed"]
    assert (failed["level"], failed["queue"], failed["msg_id"], failed["rc"]) == (
        "warning", "jobs", mid, 1,
    )  # fmt: skip
    assert failed["retry_in"] == 0
    done = by_event["done"]
    assert (done["queue"], done["msg_id"], done["rc"]) == ("jobs", mid, 2)
    assert by_event["stop"]["pid"] == worker.pid
    assert all({"ts", "level", "logger", "msg"} <= set(line) for line in lines)


def test_async_def_handlers_run_concurrently_and_are_retried(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    ids = rsmq.send_messages("jobs", [json.dumps({"sleep": 0.5})] * 4)
    retried = send(rsmq, "jobs", fail=[True, False])
    start("jobs:async=1:concurrency=4:backoff=0")

    ends = records.wait(6)

    ok = {e["id"] for e in ends if e["ok"]}
    assert ok == {*ids, retried}
    assert max_overlap(intervals([e for e in ends if e["id"] in ids])) == 4
    wait_for(lambda: queue_empty(rsmq, "jobs"), 5, "the messages deleted")


# -- bugs -----------------------------------------------------------------------------------


def test_a_worker_made_with_its_own_url_and_ns_keeps_them_without_url_and_ns_options(
    redis_url: str, ns: str, rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    env = {"WORKER_URL": redis_url, "WORKER_NS": ns}
    worker = start("jobs", target="support.workers.app:configured", url=None, ns=None, env=env)
    send(rsmq, "jobs")

    wait_for(lambda: records.ends() or worker.proc.poll() is not None, 10, "a record or exit")
    assert len(records.ends()) == 1, worker.output()


def test_url_given_for_a_worker_made_with_its_own_client_is_no_traceback(
    redis_url: str, ns: str, rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs")
    env = {"WORKER_URL": redis_url, "WORKER_NS": ns}
    worker = start("jobs", target="support.workers.app:with_client", env=env)
    send(rsmq, "jobs")

    wait_for(lambda: records.ends() or worker.proc.poll() is not None, 10, "a record or exit")
    assert "Traceback" not in worker.output()
    if worker.proc.poll() is not None:  # refused: one line saying why
        assert worker.proc.returncode != 0
        assert worker.output().strip().count("\n") == 0


def two_processes_one_killed(rsmq: RedisSMQ, start: Start, which: int) -> WorkerProcess:
    """`rsmq worker --processes 2` whose first (0) or second (1) child was SIGKILLed."""
    rsmq.create_queue("jobs")
    worker = start("jobs", "--processes", "2")
    worker.wait_started(2)
    os.kill(worker.worker_children()[which], signal.SIGKILL)
    time.sleep(0.3)
    return worker


def test_sigterm_stops_the_other_processes_after_the_first_one_died(rsmq: RedisSMQ, start: Start):
    worker = two_processes_one_killed(rsmq, start, 0)

    worker.signal(signal.SIGTERM)

    wait_for(lambda: "worker stopped" in worker.output(), 3, "the other worker to stop")
    assert worker.wait(3) != 0


def test_processes_exit_non_zero_when_a_child_was_killed(rsmq: RedisSMQ, start: Start):
    worker = two_processes_one_killed(rsmq, start, 1)

    worker.signal(signal.SIGTERM)

    assert worker.wait(5) != 0


def test_a_timeout_of_a_message_received_1025_times_leaves_the_heartbeat_running(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("poison")
    rsmq.create_queue("long", vt=2)
    poison = send(rsmq, "poison", sleep=3)
    for _ in range(1025):
        rsmq.receive_message("poison", vt=0)
    long = send(rsmq, "long", sleep=4)
    worker = start("poison:timeout=0.5,long:concurrency=2")

    def settled() -> bool:
        return rsmq.get_queue_attributes("long").totalrecv > 1 or any(
            e["id"] == long for e in records.ends()
        )

    wait_for(settled, 10, "the long message's end or its second receive")
    assert rsmq.get_queue_attributes("long").totalrecv == 1, worker.output()
    assert rsmq.get_message("poison", poison).rc == 1026


def test_a_handler_raising_system_exit_has_its_message_retried(
    rsmq: RedisSMQ, records: Records, start: Start
):
    rsmq.create_queue("jobs", vt=1)
    start("jobs:backoff=0", grace=1)

    mid = send(rsmq, "jobs", exit=[True, False])

    ends = records.wait(2, timeout=3)
    assert [(e["id"], e["rc"], e["ok"]) for e in ends] == [(mid, 1, True), (mid, 2, True)]
