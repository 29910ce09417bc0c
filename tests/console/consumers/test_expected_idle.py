"""Noise out of the order (dashboard/triage/conditions.py): a dead-letter queue nothing
consumes is expected idle, never "no consumers"; a queue an operator marks so is too
(audited), and one marked "must be consumed" is judged again; a queue left behind with a
few messages and no traffic is stale, not an incident; the dead letters arriving count
on the queue that fails them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.test import Client

from dashboard.models import AuditEntry, QueueCondition, QueueExpectation
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def quiet(settings, lake: Path) -> None:
    """Nothing received for 0.2 s is "no consumers"; the window is 0.3 s."""
    settings.RSMQ_NO_CONSUMER_AFTER = 0.2
    settings.RSMQ_BACKLOG_WINDOW = 0.3
    settings.RSMQ_SNAPSHOT_INTERVAL = 0.1
    settings.RSMQ_BACKLOG_GROWTH_MIN = 100


def states() -> dict[str, str]:
    return dict(QueueCondition.objects.values_list("queue", "state"))


def twice(rsmq: RedisSMQ, qname: str = "") -> None:
    """Two snapshots 0.35 s apart (a window), messages sent to ``qname`` in between."""
    take_snapshot()
    time.sleep(0.35)
    if qname:
        rsmq.send_messages(qname, ["more"] * 3)
    take_snapshot()


def test_a_dead_letter_queue_without_consumers_is_expected_idle(console, quiet, rsmq) -> None:
    rsmq.create_queue("jobs")
    rsmq.create_queue("jobs-dlq")
    rsmq.set_dead_letter_policy("jobs", "jobs-dlq", 3)
    rsmq.send_messages("jobs-dlq", ["dead"] * 500)
    twice(rsmq, "jobs-dlq")
    assert states()["jobs-dlq"] == "expected_idle"
    dlq = QueueCondition.objects.get(queue="jobs-dlq")
    assert dlq.points == 0 and "+3 dead letters in" in dlq.reason
    jobs = QueueCondition.objects.get(queue="jobs")
    assert jobs.points == 10 and "dead-lettering: +3 to jobs-dlq in" in jobs.reason


def test_a_queue_left_behind_with_a_few_messages_is_stale(console, quiet, rsmq) -> None:
    rsmq.create_queue("legacy-export-01")
    rsmq.send_messages("legacy-export-01", ["chunk"] * 3)
    rsmq.create_queue("events")
    rsmq.send_messages("events", ["e"] * 150)
    twice(rsmq, "events")
    assert states() == {"legacy-export-01": "stale", "events": "no_consumers"}
    stale = QueueCondition.objects.get(queue="legacy-export-01")
    assert stale.reason.startswith("stale: 3 messages, nothing sent or received for")
    assert stale.score < QueueCondition.objects.get(queue="events").score


def test_an_operator_marks_a_queue_expected_idle(console, quiet, rsmq, operator: Client) -> None:
    rsmq.create_queue("archive")
    rsmq.send_messages("archive", ["kept"] * 150)
    twice(rsmq)
    assert states()["archive"] == "no_consumers"
    r = operator.post(console.queue("archive") + "triage/", {"action": "expect", "idle": "idle"})
    assert r.status_code == 302
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.params) == ("expected_idle", "ok", {"idle": True})
    take_snapshot()
    assert states()["archive"] == "expected_idle"
    page = operator.get(console.queue("archive")).content.decode()
    assert "marked by otto" in page and 'data-expect="consumed"' in page


def test_a_dead_letter_queue_may_be_told_to_be_consumed(console, quiet, rsmq, operator) -> None:
    rsmq.create_queue("jobs")
    rsmq.create_queue("jobs-dlq")
    rsmq.set_dead_letter_policy("jobs", "jobs-dlq", 3)
    rsmq.send_messages("jobs-dlq", ["dead"] * 150)
    operator.post(console.queue("jobs-dlq") + "triage/", {"action": "expect", "idle": "consumed"})
    assert QueueExpectation.objects.get().idle is False
    twice(rsmq)
    assert states()["jobs-dlq"] == "no_consumers"


def test_a_viewer_may_not_mark_a_queue(console, quiet, rsmq, viewer: Client) -> None:
    rsmq.create_queue("archive")
    r = viewer.post(console.queue("archive") + "triage/", {"action": "expect", "idle": "idle"})
    assert r.status_code == 403 and not QueueExpectation.objects.exists()
