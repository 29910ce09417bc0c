"""A paused queue (queues/ops/flow.py) is held on purpose: never judged "no consumers"
(dashboard/triage/conditions.py), its alerts held with the pause's reason
(dashboard/alerting/evaluate.py)."""

from __future__ import annotations

import pytest

from dashboard.alerting.evaluate import evaluate
from dashboard.models import Alert, AlertRule, Notification, QueueCondition
from dashboard.triage import conditions
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def waiting(console, rsmq: RedisSMQ, settings) -> str:
    """q1: visible messages nobody receives."""
    settings.RSMQ_NO_CONSUMER_AFTER = 0
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a", "b"])
    return "q1"


def judged(console, rsmq: RedisSMQ) -> conditions.Judged:
    stats = rsmq.queue_stats(["q1"])
    conditions.update("default", console.ns, stats, rsmq)
    (j,) = conditions.judge("default", console.ns, stats, {}, {}, (), {}, None,
                            conditions.flows_of(rsmq))  # fmt: skip
    return j


def test_a_queue_nobody_receives_from_has_no_consumers(console, waiting: str, rsmq) -> None:
    assert judged(console, rsmq).state == QueueCondition.State.NO_CONSUMERS


def test_a_paused_one_is_not_judged_no_consumers_and_says_why(
    console, waiting: str, rsmq: RedisSMQ
) -> None:
    rsmq.pause_queue("q1", reason="deploy 42")
    j = judged(console, rsmq)
    assert j.state == QueueCondition.State.HEALTHY
    assert j.parts[0] == "paused: deploy 42"
    row = QueueCondition.objects.get(queue="q1")
    assert (row.state, row.reason.split("; ")[0]) == ("healthy", "paused: deploy 42")


def test_a_throttled_one_says_its_rate(console, waiting: str, rsmq: RedisSMQ) -> None:
    rsmq.throttle_queue("q1", 5)
    j = judged(console, rsmq)
    assert j.state == QueueCondition.State.NO_CONSUMERS  # throttled still receives
    assert "throttled to 5/s" in j.parts


@pytest.fixture
def rule(console, lake, waiting: str) -> AlertRule:
    return AlertRule.objects.create(
        name="backlog", connection="default", namespace=console.ns, queue="q1",
        metric=AlertRule.Metric.VISIBLE, threshold=1, for_seconds=0,
        webhook_url="http://127.0.0.1:9/hook", webhook_secret="k",
    )  # fmt: skip


def test_a_paused_queues_alert_is_held_with_the_reason(
    rule: AlertRule, add_snapshot, redis_now, rsmq: RedisSMQ
) -> None:
    rsmq.pause_queue("q1", reason="deploy 42", by="ann")
    add_snapshot("q1", redis_now(), msgs=10)
    ev = evaluate()
    assert not Alert.objects.exists() and not Notification.objects.exists()
    ((name, queue, why),) = ev.held
    assert (name, queue) == ("backlog", "q1")
    assert why.startswith("paused since") and why.endswith("by ann: deploy 42")
    rsmq.resume_queue("q1")
    add_snapshot("q1", redis_now() + 1, msgs=10)
    ev = evaluate()
    assert ev.held == [] and Alert.objects.get().state == Alert.State.FIRING


def test_an_alert_already_firing_stays_firing_and_may_resolve(
    rule: AlertRule, add_snapshot, redis_now, rsmq: RedisSMQ
) -> None:
    now = redis_now()
    add_snapshot("q1", now, msgs=10)
    evaluate()
    rsmq.pause_queue("q1")
    add_snapshot("q1", now + 1, msgs=12)
    evaluate()
    assert Alert.objects.get().state == Alert.State.FIRING
    add_snapshot("q1", now + 2, msgs=0)
    evaluate()
    assert Alert.objects.get().state == Alert.State.RESOLVED
