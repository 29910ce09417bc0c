"""Alert evaluation (dashboard/alerting/evaluate.py) over snapshot rows as the snapshot
task writes them: pending → firing → resolved, and the outbox rows that tell of it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dashboard.alerting.evaluate import evaluate
from dashboard.models import Alert, AlertEvent, AlertRule, AnomalyFlag, Notification
from queues import RedisSMQ

State = Alert.State


@pytest.fixture
def make_rule(console, lake, ns: str) -> Callable[..., AlertRule]:
    def make(**fields: object) -> AlertRule:
        values: dict[str, object] = dict(
            name="backlog", connection="default", namespace=ns, queue="q1",
            metric=AlertRule.Metric.VISIBLE, threshold=5, for_seconds=0,
            webhook_url="http://127.0.0.1:9/hook", webhook_secret="k",
        )  # fmt: skip
        values.update(fields)
        return AlertRule.objects.create(**values)

    return make


def states(rule: AlertRule) -> dict[str, str]:
    return dict(rule.alerts.values_list("queue", "state"))


def told(rule: AlertRule) -> list[list[tuple[str, str]]]:
    """What each notification of the rule tells, oldest first: [(queue, state), ...]."""
    rows = Notification.objects.filter(rule=rule).order_by("id")
    return [[(a["queue"], a["state"]) for a in n.payload["alerts"]] for n in rows]


def test_it_fires_at_once_without_a_for_duration(make_rule, add_snapshot, redis_now) -> None:
    rule = make_rule()
    add_snapshot("q1", redis_now(), msgs=10, hiddenmsgs=2)
    ev = evaluate()
    assert states(rule) == {"q1": State.FIRING}
    assert Alert.objects.get().value == 8.0
    assert ev.changes == [("backlog", "q1", State.FIRING)]
    assert told(rule) == [[("q1", "firing")]]
    n = Notification.objects.get()
    assert (n.channel, n.target, n.secret) == ("webhook", "http://127.0.0.1:9/hook", "k")
    assert n.payload["rule"]["condition"] == "visible messages above 5"
    assert n.payload["id"] == n.key


def test_it_stays_pending_until_the_condition_held_for_long_enough(
    make_rule, add_snapshot, redis_now
) -> None:
    rule = make_rule(for_seconds=2)
    t0 = redis_now() - 3000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    assert states(rule) == {"q1": State.PENDING}
    add_snapshot("q1", t0 + 1000, msgs=11)
    evaluate()
    assert states(rule) == {"q1": State.PENDING}
    assert told(rule) == []
    add_snapshot("q1", t0 + 2000, msgs=12)
    evaluate()
    assert states(rule) == {"q1": State.FIRING}
    assert told(rule) == [[("q1", "firing")]]
    history = list(AlertEvent.objects.order_by("at").values_list("state", "at"))
    assert history == [("pending", t0), ("firing", t0 + 2000)]


def test_it_resolves_once_and_tells_each_change_once(make_rule, add_snapshot, redis_now) -> None:
    rule = make_rule()
    t0 = redis_now() - 2000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    evaluate()  # the same run again: nothing new
    add_snapshot("q1", t0 + 1000, msgs=0)
    evaluate()
    evaluate()
    assert states(rule) == {"q1": State.RESOLVED}
    assert told(rule) == [[("q1", "firing")], [("q1", "resolved")]]
    add_snapshot("q1", t0 + 2000, msgs=9)  # and again: the same alert fires anew
    evaluate()
    assert told(rule)[-1] == [("q1", "firing")]
    assert Alert.objects.count() == 1
    assert AlertEvent.objects.count() == 3


def test_a_pending_alert_that_clears_is_never_told(make_rule, add_snapshot, redis_now) -> None:
    rule = make_rule(for_seconds=60)
    t0 = redis_now() - 1000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    add_snapshot("q1", t0 + 1000, msgs=0)
    evaluate()
    assert states(rule) == {"q1": State.RESOLVED}
    assert told(rule) == []


def test_a_pattern_rule_tells_of_its_queues_in_one_notification_per_evaluation(
    make_rule, add_snapshot, redis_now
) -> None:
    rule = make_rule(queue="", pattern="orders-*", slack_url="http://127.0.0.1:9/slack")
    now = redis_now()
    for name in ("orders-eu", "orders-us", "payments"):
        add_snapshot(name, now, msgs=10)
    evaluate()
    assert states(rule) == {"orders-eu": State.FIRING, "orders-us": State.FIRING}
    webhook = Notification.objects.get(channel="webhook")
    slack = Notification.objects.get(channel="slack")
    for n in (webhook, slack):
        assert [a["queue"] for a in n.payload["alerts"]] == ["orders-eu", "orders-us"]
        assert n.payload["firing"] == 2


def test_a_queue_that_is_gone_resolves_its_alert(make_rule, add_snapshot, redis_now) -> None:
    rule = make_rule(queue="", pattern="*")
    t0 = redis_now() - 1000
    add_snapshot("q1", t0, msgs=10)
    add_snapshot("q2", t0, msgs=10)
    evaluate()
    add_snapshot("q2", t0 + 1000, msgs=10)  # q1 deleted
    evaluate()
    assert states(rule) == {"q1": State.RESOLVED, "q2": State.FIRING}


def test_a_rate_rule_compares_the_runs_counters_over_their_time(
    make_rule, add_snapshot, redis_now
) -> None:
    rule = make_rule(metric=AlertRule.Metric.RECEIVE_RATE, op=AlertRule.Op.BELOW, threshold=0.5)
    t0 = redis_now() - 20_000
    add_snapshot("q1", t0, msgs=5, totalrecv=100)
    evaluate()  # no run before: no rate, no alert
    assert states(rule) == {}
    add_snapshot("q1", t0 + 10_000, msgs=5, totalrecv=150)  # 5/s
    evaluate()
    assert states(rule) == {}
    add_snapshot("q1", t0 + 20_000, msgs=5, totalrecv=152)  # 0.2/s
    evaluate()
    assert states(rule) == {"q1": State.FIRING}
    assert Alert.objects.get().value == pytest.approx(0.2)


def test_a_flag_rule_fires_while_the_pipelines_flag_is_open(
    make_rule, add_snapshot, redis_now, ns: str
) -> None:
    rule = make_rule(metric=AlertRule.Metric.CONSUMERS_STALLED, threshold=0)
    t0 = redis_now() - 1000
    add_snapshot("q1", t0, msgs=3)
    flag = AnomalyFlag.objects.create(
        connection="default", namespace=ns, queue="q1", kind="consumers_stalled",
        start=t0 - 600_000, intervals=10, figures={"visible_max": 3, "received": 0},
    )  # fmt: skip
    evaluate()
    assert states(rule) == {"q1": State.FIRING}
    flag.end = t0
    flag.save()
    add_snapshot("q1", t0 + 1000, msgs=3)
    evaluate()
    assert states(rule) == {"q1": State.RESOLVED}


def test_a_dead_letter_rule_counts_the_messages_dead_lettered_since_the_last_evaluation(
    make_rule, add_snapshot, redis_now, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("work")
    rsmq.create_queue("work-dlq")
    rsmq.set_dead_letter_policy("work", "work-dlq", 1)
    rsmq.send_messages("work", ["a", "b", "c"])
    rule = make_rule(queue="work", metric=AlertRule.Metric.DEAD_LETTERS, threshold=1)
    t0 = redis_now() - 2000
    add_snapshot("work", t0, msgs=3)
    evaluate()  # first sight: the counter is kept, no value yet
    assert states(rule) == {}
    rsmq.receive_messages("work", 3, vt=0)
    rsmq.receive_messages("work", 3, vt=0)  # the second receive dead-letters all three
    add_snapshot("work", t0 + 1000, msgs=0)
    evaluate()
    assert states(rule) == {"work": State.FIRING}
    assert Alert.objects.get().value == 3.0
    add_snapshot("work", t0 + 2000, msgs=0)
    evaluate()  # none added since
    assert states(rule) == {"work": State.RESOLVED}


def test_without_a_recent_snapshot_alerts_keep_their_state(
    make_rule, add_snapshot, redis_now, ns: str
) -> None:
    rule = make_rule()
    add_snapshot("q1", redis_now() - 600_000, msgs=10)
    ev = evaluate()
    assert ev.skipped == [f"default/{ns}"]
    assert states(rule) == {}


def test_a_disabled_rule_is_not_evaluated(make_rule, add_snapshot, redis_now) -> None:
    rule = make_rule(enabled=False)
    add_snapshot("q1", redis_now(), msgs=10)
    assert evaluate().rules == 0
    assert states(rule) == {}


def test_a_pattern_that_moves_many_queues_tells_them_in_parts(
    make_rule, add_snapshot, redis_now, monkeypatch
) -> None:
    monkeypatch.setattr("dashboard.alerting.evaluate.PER_NOTIFICATION", 2)
    rule = make_rule(queue="", pattern="q*")
    now = redis_now()
    for i in range(5):
        add_snapshot(f"q{i}", now, msgs=10)
    evaluate()
    assert told(rule) == [
        [("q0", "firing"), ("q1", "firing")],
        [("q2", "firing"), ("q3", "firing")],
        [("q4", "firing")],
    ]


def test_a_rule_that_fails_does_not_keep_the_others_from_being_evaluated(
    make_rule, add_snapshot, redis_now, settings, redis_url: str, ns: str
) -> None:
    # Its connection's Redis does not answer: its dead-letter counters can't be read.
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": "redis://127.0.0.1:1/0", "namespaces": [ns]},
    ]
    make_rule(name="dead letters", metric=AlertRule.Metric.DEAD_LETTERS, threshold=0)
    fine = make_rule(name="backlog")
    add_snapshot("q1", redis_now(), msgs=10)
    ev = evaluate()
    assert ev.failed == ["dead letters"]
    assert states(fine) == {"q1": State.FIRING}
