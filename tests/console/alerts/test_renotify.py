"""Re-notify: a rule with ``renotify_seconds`` tells a firing alert again that often
(by the snapshots' clock) until someone acknowledges it, or it resolves."""

from __future__ import annotations

import pytest

from dashboard.alerting.evaluate import evaluate
from dashboard.models import Alert, Notification

pytestmark = pytest.mark.django_db


def told() -> list[tuple[str, str]]:
    rows = Notification.objects.order_by("id")
    return [(n.payload["evaluated_at"], n.payload["alerts"][0]["state"]) for n in rows]


def test_a_firing_alert_is_told_again_every_interval(rule_of, add_snapshot, redis_now) -> None:
    rule_of(renotify_seconds=20)
    t0 = redis_now() - 40_000  # (a run older than a minute is no recent run)
    for s in (0, 10, 19):
        add_snapshot("q1", t0 + s * 1000, msgs=10)
        evaluate()
    assert Notification.objects.count() == 1
    add_snapshot("q1", t0 + 20_000, msgs=10)
    evaluate()
    assert Notification.objects.count() == 2  # 20 s after the last one
    for s in (30, 39):
        add_snapshot("q1", t0 + s * 1000, msgs=10)
        evaluate()
    assert Notification.objects.count() == 2
    add_snapshot("q1", t0 + 40_000, msgs=10)
    evaluate()
    assert [state for _, state in told()] == ["firing", "firing", "firing"]
    assert Alert.objects.get().notified == t0 + 40_000


def test_without_an_interval_it_is_told_once(rule_of, add_snapshot, redis_now) -> None:
    rule_of()
    t0 = redis_now() - 40_000
    for s in (0, 20, 40):
        add_snapshot("q1", t0 + s * 1000, msgs=10)
        evaluate()
    assert Notification.objects.count() == 1


def test_an_acknowledged_alert_is_not_told_again(rule_of, add_snapshot, redis_now) -> None:
    rule_of(renotify_seconds=20)
    t0 = redis_now() - 40_000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    Alert.objects.update(acked=t0 + 1, acked_by="otto")
    add_snapshot("q1", t0 + 40_000, msgs=10)
    evaluate()
    assert Notification.objects.count() == 1


def test_a_re_notification_under_a_silence_is_held(rule_of, add_snapshot, redis_now, ns) -> None:
    import datetime as dt

    from django.utils import timezone

    from dashboard.models import Silence

    rule_of(renotify_seconds=20)
    t0 = redis_now() - 40_000
    add_snapshot("q1", t0, msgs=10)
    evaluate()
    Silence.objects.create(
        connection="default", namespace=ns, pattern="*", reason="on it", created_by="otto",
        ends=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    for s in (20, 40):
        add_snapshot("q1", t0 + s * 1000, msgs=10)
        evaluate()
    assert [bool(n.held) for n in Notification.objects.order_by("id")] == [False, True]
