"""Consumers, named (issue 21): real `rsmq worker` processes on the test Redis put a queue
in each state (stopped, failing every message, dying mid-message, too slow for its
traffic, keeping up; quiet and scheduled queues idle) and
the console names it within two snapshot intervals, the snapshots taken by the real
Celery task in an in-process worker, the clock the Redis server's TIME: on the queue page,
on the overview (its reasons leading the order), in /metrics and in an alert rule that
notifies nobody but the console."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from celery.contrib.testing.worker import start_worker
from django.db.models import Max
from django.test import Client
from support.workers.harness import WorkerProcess, wait_for

from dashboard import tasks
from dashboard.celery import app
from dashboard.models import Alert, AlertRule, QueueCondition
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

INTERVAL = 1.2  # s between the snapshots the test forces


@pytest.fixture
def celery_worker(lake: Path, broker_url: str, settings) -> Iterator[None]:
    settings.RSMQ_SNAPSHOT_INTERVAL = INTERVAL
    settings.RSMQ_BACKLOG_WINDOW = INTERVAL
    settings.RSMQ_NO_CONSUMER_AFTER = 1
    settings.RSMQ_CRASH_LOOP_RECEIVES = 3
    settings.RSMQ_BACKLOG_GROWTH_MIN = 5
    before = app.conf.broker_url
    app.conf.broker_url = broker_url
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    finally:
        app.conf.broker_url = before


def snapshot() -> int:
    """The snapshot task, sent to the Celery worker; returns once its conditions (judged
    in the same task, right after the rows) are stored: their Redis time."""
    last = QueueCondition.objects.aggregate(t=Max("taken_at"))["t"] or 0
    tasks.snapshot.delay()
    return wait_for(
        lambda: (
            (QueueCondition.objects.aggregate(t=Max("taken_at"))["t"] or 0) > last
            and QueueCondition.objects.aggregate(t=Max("taken_at"))["t"]
        ),
        30,
        "a snapshot's conditions",
        every=0.05,
    )


class Sender:
    """Sends ``body`` to ``queue`` ``per_second`` times a second until stopped."""

    def __init__(self, url: str, ns: str, queue: str, body: dict, per_second: float) -> None:
        self.stop = threading.Event()
        self.rsmq = RedisSMQ(url=url, ns=ns, realtime=True)
        self.thread = threading.Thread(
            target=self.run, args=(queue, json.dumps(body), 1 / per_second), daemon=True
        )
        self.thread.start()

    def run(self, queue: str, body: str, every: float) -> None:
        while not self.stop.wait(every):
            self.rsmq.send_message(queue, body)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


@pytest.fixture
def scenario(console, celery_worker, redis_url: str, rsmq: RedisSMQ, tmp_path: Path):
    """stopped: its worker stopped, then messages came; crashing: its handler raises on
    every message (vt 1 s, backoff 50 ms); slow: 0.5 s a message, one at a time, 10 sent
    a second; healthy: a handler that keeps up with 5 a second; quiet: nothing at all;
    scheduled: only delayed messages."""
    for q in ("stopped", "crashing", "dying", "slow", "healthy", "quiet", "scheduled", "results"):
        rsmq.create_queue(q)
    rsmq.send_message("scheduled", "later", delay=3600)
    for state in ("no_consumers", "crash_looping", "falling_behind"):
        AlertRule.objects.create(
            name=f"consumers {state}", connection="default", namespace=console.ns,
            pattern="*", metric=f"state:{state}",
        )  # fmt: skip
    env = {"WORKER_RESULTS": "results", "WORKER_POLL": "0.05"}
    stopping = WorkerProcess(
        tmp_path / "stopping.log", url=redis_url, ns=console.ns,
        env={**env, "WORKER_QUEUES": "stopped:noop=1"},
    )  # fmt: skip
    others = WorkerProcess(
        tmp_path / "others.log", url=redis_url, ns=console.ns,
        env={**env, "WORKER_QUEUES": "crashing:vt=1:backoff=0.05:max_backoff=0.2,"
                                     "slow:concurrency=1,healthy:noop=1:concurrency=2"},
    )  # fmt: skip
    senders: list[Sender] = []
    stop_dying = threading.Event()
    try:
        stopping.wait_started()
        others.wait_started()
        senders += [
            Sender(redis_url, console.ns, "slow", {"sleep": 0.5}, 10),
            Sender(redis_url, console.ns, "healthy", {}, 5),
        ]
        rsmq.send_messages("crashing", [json.dumps({"fail": True})] * 5)
        # dying: a consumer (any client) that dies mid-message every time: it receives
        # with a vt of 1 s and never deletes; the messages come back as their vt expires.
        rsmq.send_messages("dying", ["x"] * 5)

        def die_mid_message() -> None:
            with RedisSMQ(url=redis_url, ns=console.ns) as consumer:
                while not stop_dying.wait(0.2):
                    consumer.receive_messages("dying", 5, vt=1)

        threading.Thread(target=die_mid_message, daemon=True).start()
        yield {"stopping": stopping, "others": others}
    finally:
        stop_dying.set()
        for s in senders:
            s.close()
        stopping.stop()
        others.stop()


def test_the_console_names_each_consumer_state_within_two_snapshots(
    console, scenario, rsmq: RedisSMQ, viewer: Client
) -> None:
    # The worker of "stopped" is listed on its page while it lives.
    page = viewer.get(console.queue("stopped")).content.decode()
    assert 'data-worker="' in page and str(scenario["stopping"].pid) in page
    snapshot()  # the baseline
    scenario["stopping"].stop()  # it stops: and messages come
    rsmq.send_messages("stopped", ["x"] * 20)
    assert "data-no-workers" in viewer.get(console.queue("stopped")).content.decode()

    want = {
        "stopped": "no_consumers", "crashing": "crash_looping", "dying": "crash_looping",
        "slow": "falling_behind",
        "healthy": "healthy", "quiet": "idle", "scheduled": "idle",
    }  # fmt: skip
    for _ in range(2):  # within two snapshot intervals
        time.sleep(INTERVAL)
        snapshot()
    states = dict(QueueCondition.objects.values_list("queue", "state"))
    assert {q: states[q] for q in want} == want

    # On the queue page, with its reason in words.
    page = viewer.get(console.queue("crashing")).content.decode()
    assert 'data-consumer-state="crash_looping"' in page
    assert re.search(r"crash-looping: \d+ receives, 0 deletes in [^;<]+, messages received up"
                     r" to \d+ times", page)  # fmt: skip
    page = viewer.get(console.queue("stopped")).content.decode()
    assert 'data-consumer-state="no_consumers"' in page and "no consumer for" in page
    page = viewer.get(console.queue("slow")).content.decode()
    assert 'data-consumer-state="falling_behind"' in page and "falling behind:" in page

    # In /metrics: a state set per queue.
    text = viewer.get("/metrics").getvalue().decode()
    for q, state in want.items():
        series = (f'rsmq_queue_consumer_state{{connection="default",namespace="{console.ns}",'
                  f'queue="{q}",state="{state}"}} 1.0')  # fmt: skip
        assert series in text
        assert text.count(f'queue="{q}",state=') == len(QueueCondition.State.values)

    # In an alert: the rules on the states fire (evaluated by Celery after the snapshot).
    def firing() -> set[tuple[str, str]]:
        alerts = Alert.objects.filter(state=Alert.State.FIRING).select_related("rule")
        return {(a.queue, a.rule.metric) for a in alerts}

    wait_for(
        lambda: {("stopped", "state:no_consumers"), ("crashing", "state:crash_looping"),
                 ("dying", "state:crash_looping"), ("slow", "state:falling_behind")} <= firing(),
        15, "the state alerts to fire",
    )  # fmt: skip
    assert not {q for q, _ in firing()} & {"healthy", "quiet", "scheduled"}
    assert ("results", "state:no_consumers") in firing()

    # The incidents lead the overview, with their reasons; the header counts the alerts.
    snapshot()  # the firing alerts weigh in
    overview = viewer.get(console.overview())
    names = [s.qname for s in overview.context["stats"]]
    # "results" (the handlers' records: nothing consumes them) is an incident too.
    assert set(names[:5]) == {"stopped", "crashing", "dying", "slow", "results"}, names
    assert set(names[5:]) == {"healthy", "quiet", "scheduled"}
    body = overview.content.decode()
    assert re.search(r"data-alerts-firing[^>]*>\d+ firing<", body)
    assert body.count("data-firing") == 5
