"""One incident, one notification: a queue's alerts of several rules that fire in the
same evaluation go to a receiver they share as one notification. And the daily digest:
a low-severity rule notifies nobody at once; once a day each of its receivers gets the
alerts that fired in the last 24 hours."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from dashboard.alerting import delivery, digest
from dashboard.alerting.evaluate import evaluate
from dashboard.models import AlertRule, Notification, Silence

pytestmark = pytest.mark.django_db
SLACK = "https://hooks.example.com/slack"


def test_a_queues_alerts_of_several_rules_are_one_notification(
    rule_of, add_snapshot, redis_now
) -> None:
    rule_of(name="backlog", webhook_url="", slack_url=SLACK)
    rule_of(name="in flight", metric=AlertRule.Metric.INFLIGHT, threshold=1, webhook_url="",
            slack_url=SLACK)  # fmt: skip
    rule_of(name="other queue", queue="q2", webhook_url="", slack_url=SLACK)
    now = redis_now()
    add_snapshot("q1", now, msgs=10, inflight=5)
    add_snapshot("q2", now, msgs=10)
    evaluate()
    by_group = {n.payload.get("group", ""): n for n in Notification.objects.all()}
    assert set(by_group) == {"q1", ""}
    group = by_group["q1"].payload
    assert [(a["queue"], a["rule"], a["state"]) for a in group["alerts"]] == [
        ("q1", "backlog", "firing"), ("q1", "in flight", "firing"),
    ]  # fmt: skip
    assert group["rule"]["name"] == "q1: 2 alerts (backlog, in flight)"
    lines = delivery.lines(group)
    assert lines[0].startswith("FIRING: backlog on default/") and "in flight" in lines[1]
    assert by_group[""].payload["rule"]["name"] == "other queue"


def test_rules_with_their_own_receivers_are_told_apart(rule_of, add_snapshot, redis_now) -> None:
    rule_of(name="a", webhook_secret="ka")
    rule_of(name="b", metric=AlertRule.Metric.INFLIGHT, threshold=1, webhook_secret="kb")
    add_snapshot("q1", redis_now(), msgs=10, inflight=5)
    evaluate()
    names = sorted(n.payload["rule"]["name"] for n in Notification.objects.all())
    assert names == ["a", "b"]  # another signing key: another receiver


def test_a_low_severity_rule_notifies_nobody_at_once(rule_of, add_snapshot, redis_now) -> None:
    rule_of(severity=AlertRule.Severity.LOW)
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    assert not Notification.objects.exists()


def test_the_daily_digest_tells_each_receiver_its_low_severity_alerts_once(
    rule_of, add_snapshot, redis_now, ns: str
) -> None:
    rule_of(name="low one", severity="low", webhook_url="", slack_url=SLACK)
    rule_of(name="low two", queue="q2", severity="low", webhook_url="", slack_url=SLACK)
    rule_of(name="loud", queue="q3", webhook_url="", slack_url=SLACK)
    now = redis_now()
    for q in ("q1", "q2", "q3"):
        add_snapshot(q, now, msgs=10)
    evaluate()
    assert Notification.objects.count() == 1  # the loud one, at once
    assert digest.send_digest() == 1
    n = Notification.objects.get(payload__digest=True)
    assert [(a["queue"], a["rule"]) for a in n.payload["alerts"]] == [
        ("q1", "low one"), ("q2", "low two"),
    ]  # fmt: skip
    assert n.payload["rule"]["name"] == "daily digest: 2 low-severity alerts"
    assert digest.send_digest() == 0  # the day's digest is written once
    later = timezone.now() + dt.timedelta(days=2)
    assert digest.send_digest(later) == 0  # nothing fired in the 24 hours before


def test_the_digest_leaves_silenced_alerts_out(rule_of, add_snapshot, redis_now, ns) -> None:
    rule_of(severity="low")
    Silence.objects.create(
        connection="default", namespace=ns, pattern="q1", reason="known", created_by="otto",
        ends=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    assert digest.send_digest() == 0


# -- across evaluations: the queue's group interval (RSMQ_ALERT_GROUP_SECONDS) ------------


@pytest.fixture
def two_rules(rule_of, settings) -> None:
    settings.RSMQ_ALERT_GROUP_SECONDS = 20
    rule_of(name="backlog", webhook_url="", slack_url=SLACK)
    rule_of(name="in flight", metric=AlertRule.Metric.INFLIGHT, threshold=1, webhook_url="",
            slack_url=SLACK)  # fmt: skip


def told() -> list[list[tuple[str, str]]]:
    return [
        [(a.get("rule") or n.payload["rule"]["name"], a["state"]) for a in n.payload["alerts"]]
        for n in Notification.objects.order_by("id")
    ]


def test_an_alert_that_joins_a_told_incident_waits_for_the_group_interval(
    two_rules, add_snapshot, redis_now
) -> None:
    t0 = redis_now() - 30_000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    for s in (10, 19):  # in flight fires 10 s later: within the interval, it waits
        add_snapshot("q1", t0 + s * 1000, msgs=10, inflight=5)
        evaluate()
    assert told() == [[("backlog", "firing")]]
    add_snapshot("q1", t0 + 20_000, msgs=10, inflight=5)
    evaluate()
    assert told() == [[("backlog", "firing")], [("in flight", "firing")]]


def test_one_that_resolves_while_it_waits_is_never_told(two_rules, add_snapshot, redis_now):
    t0 = redis_now() - 30_000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    add_snapshot("q1", t0 + 10_000, msgs=10, inflight=5)
    evaluate()
    add_snapshot("q1", t0 + 15_000, msgs=10, inflight=0)
    evaluate()
    add_snapshot("q1", t0 + 25_000, msgs=10, inflight=0)
    evaluate()
    assert told() == [[("backlog", "firing")]]


def test_another_queue_or_no_interval_is_told_at_once(
    two_rules, rule_of, add_snapshot, redis_now, settings
) -> None:
    rule_of(name="q2 backlog", queue="q2", webhook_url="", slack_url=SLACK)
    t0 = redis_now() - 30_000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    add_snapshot("q1", t0 + 10_000, msgs=10)
    add_snapshot("q2", t0 + 10_000, msgs=10)
    evaluate()
    assert told()[-1] == [("q2 backlog", "firing")]
    settings.RSMQ_ALERT_GROUP_SECONDS = 0
    add_snapshot("q1", t0 + 11_000, msgs=10, inflight=5)
    add_snapshot("q2", t0 + 11_000, msgs=10)
    evaluate()
    assert told()[-1] == [("in flight", "firing")]


def test_the_digest_is_on_beats_schedule(settings) -> None:
    from dashboard import tasks

    entry = settings.CELERY_BEAT_SCHEDULE["alert-digest"]
    assert entry["task"] == "dashboard.tasks.alert_digest"
    assert entry["schedule"].hour == {settings.RSMQ_ALERT_DIGEST_HOUR}
    assert tasks.alert_digest() == {"notifications": 0}
