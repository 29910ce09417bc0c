"""An operator acknowledges or snoozes a queue's open flags (views/triage.py): audited;
the flag stays open (and on the timeline) but is quiet — folded on the overview, no longer
counted in the queue's score — until it closes (an acknowledgement: a flag opened after it
is news again) or the snooze ends. A viewer may not."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.test import Client

from dashboard.models import AnomalyFlag, AuditEntry, FlagAck, QueueCondition
from dashboard.triage import flags
from dashboard.triage.conditions import take_snapshot

pytestmark = pytest.mark.django_db


def triage(console, qname: str = "q1") -> str:
    return f"{console.queue(qname)}triage/"


FIGURES = {
    "redelivery_storm": {"received": 90.0, "sent": 10.0, "receive_rate_max": 2.0},
    "oldest_age": {"oldest_age_max": 900.0, "slo": 300.0},
    "backlog_growing": {"backlog_from": 10.0, "backlog_to": 400.0},
}


def open_flag(console, queue: str = "q1", kind: str = "redelivery_storm", start: int = 0):
    return AnomalyFlag.objects.create(
        connection="default", namespace=console.ns, queue=queue, kind=kind,
        start=start or round(time.time() * 1000) - 60_000, end=None, intervals=1,
        figures=FIGURES[kind],
    )  # fmt: skip


@pytest.fixture
def q1(console, rsmq) -> str:
    rsmq.create_queue("q1")
    return "q1"


def test_an_operator_acknowledges_a_queues_open_flags(console, q1, operator: Client) -> None:
    open_flag(console)
    open_flag(console, kind="oldest_age")
    r = operator.post(triage(console), {"action": "ack", "next": console.queue()})
    assert r.status_code == 302 and r["Location"] == console.queue()
    assert set(FlagAck.objects.values_list("kind", "until", "by")) == {
        ("redelivery_storm", None, "otto"), ("oldest_age", None, "otto"),
    }  # fmt: skip
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.queue, row.count) == ("flag_ack", "ok", "q1", 2)
    page = operator.get(console.queue()).content.decode()
    assert page.count("data-flag-quiet") == 2 and "acknowledged by otto" in page


def test_one_kind_may_be_snoozed_for_a_while(console, q1, operator: Client) -> None:
    open_flag(console)
    open_flag(console, kind="oldest_age")
    before = round(time.time() * 1000)
    operator.post(triage(console), {"action": "snooze", "kind": "oldest_age", "for": "4h"})
    (ack,) = FlagAck.objects.all()
    assert (
        ack.kind == "oldest_age"
        and before + 4 * 3_600_000 <= ack.until <= before + 4 * 3_600_000 + 5_000
    )
    assert AuditEntry.objects.get().action == "flag_snooze"
    now = round(time.time() * 1000)
    assert flags.quiet_keys("default", console.ns, now) == {("q1", "oldest_age")}
    assert flags.quiet_keys("default", console.ns, ack.until) == set()  # the snooze ended


def test_a_flag_opened_after_its_acknowledgement_is_news_again(console, q1, operator) -> None:
    first = open_flag(console)
    operator.post(triage(console), {"action": "ack"})
    now = round(time.time() * 1000)
    assert flags.quiet_keys("default", console.ns, now) == {("q1", "redelivery_storm")}
    first.end = now
    first.save()
    open_flag(console, start=now + 10)  # the storm is back
    assert flags.quiet_keys("default", console.ns, now + 20) == set()


def test_taking_it_back_makes_it_news(console, q1, operator: Client) -> None:
    open_flag(console)
    operator.post(triage(console), {"action": "ack"})
    operator.post(triage(console), {"action": "unack", "kind": "redelivery_storm"})
    assert not FlagAck.objects.exists()
    assert [a.action for a in AuditEntry.objects.order_by("id")] == ["flag_ack", "flag_unack"]


def test_nothing_to_acknowledge_is_said_and_audited(console, q1, operator: Client) -> None:
    r = operator.post(triage(console), {"action": "ack"}, follow=True)
    assert "q1 has no open flag to acknowledge." in console.flashes(r)
    assert AuditEntry.objects.get().outcome == "invalid"


def test_a_viewer_may_not_acknowledge(console, q1, viewer: Client) -> None:
    open_flag(console)
    assert viewer.post(triage(console), {"action": "ack"}).status_code == 403
    assert not FlagAck.objects.exists()
    assert AuditEntry.objects.get().outcome == "denied"


def test_a_quiet_pipeline_flag_no_longer_counts_in_the_score(
    console, q1, operator: Client, lake: Path
) -> None:
    open_flag(console, kind="backlog_growing")  # the pipeline's: 5 points
    take_snapshot()
    assert QueueCondition.objects.get(queue="q1").score > 0
    operator.post(triage(console), {"action": "ack"})
    take_snapshot()
    assert QueueCondition.objects.get(queue="q1").score == 0
    assert AnomalyFlag.objects.get().open  # still open: the timeline keeps it
