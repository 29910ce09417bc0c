"""The conditions' history (ConditionChange) goes back as far as the snapshots: the
retention task deletes its rows before RSMQ_SNAPSHOT_RETENTION days, but keeps each
judged queue's last one before the cutoff (its condition at the oldest snapshot kept)."""

from __future__ import annotations

import datetime as dt

import pytest

from dashboard.models import ConditionChange, QueueCondition
from dashboard.triage import as_of

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def _ms(days: float) -> int:
    return round((NOW - dt.timedelta(days=days)).timestamp() * 1000)


def _change(queue: str, days: float, state: str = "healthy") -> None:
    ConditionChange.objects.create(
        connection="c", namespace="n", queue=queue, at=_ms(days), state=state
    )


def _judged(queue: str) -> None:
    QueueCondition.objects.create(
        connection="c", namespace="n", queue=queue, taken_at=_ms(0), created=1, msgs=0,
        totalsent=0, totalrecv=0, recv_since=0, state="healthy",
    )  # fmt: skip


def test_it_keeps_a_judged_queues_last_change_before_the_cutoff(settings) -> None:
    settings.RSMQ_SNAPSHOT_RETENTION = 7
    _judged("q1")
    _change("q1", 10, "no_consumers")
    _change("q1", 9, "healthy")  # its condition at the cutoff: kept
    _change("q1", 1, "idle")
    assert as_of.prune(NOW) == 1
    kept = ConditionChange.objects.filter(queue="q1").order_by("at")
    assert [(c.state, c.at) for c in kept] == [("healthy", _ms(9)), ("idle", _ms(1))]


def test_it_deletes_the_old_changes_of_a_queue_no_longer_judged(settings) -> None:
    settings.RSMQ_SNAPSHOT_RETENTION = 7
    _change("gone", 9)
    _change("gone", 8)
    assert as_of.prune(NOW) == 2
    assert not ConditionChange.objects.exists()


def test_it_leaves_what_is_within_retention(settings) -> None:
    settings.RSMQ_SNAPSHOT_RETENTION = 7
    _change("gone", 6)
    _change("gone", 1)
    assert as_of.prune(NOW) == 0
    assert ConditionChange.objects.count() == 2
