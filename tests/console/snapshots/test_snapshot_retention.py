"""Retention (dashboard/snapshots/runs.py prune): rows older than RSMQ_SNAPSHOT_RETENTION days are
deleted, and the lake's days that lie wholly before that are removed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dashboard.models import Snapshot
from dashboard.snapshots import lake as lake_files
from dashboard.snapshots import runs
from dashboard.tasks import prune_snapshots

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 11, 21, 12, 0, tzinfo=dt.UTC)


def _ms(t: dt.datetime) -> int:
    return round(t.timestamp() * 1000)


def _lake_row(at: dt.datetime) -> dict:
    fields = ("msgs", "hiddenmsgs", "inflight", "delayed", "totalsent", "totalrecv", "created")
    return {"connection": "c", "namespace": "n", "queue": "q", "taken_at": _ms(at),
            "oldest_age": None, **dict.fromkeys(fields, 0)}  # fmt: skip


@pytest.fixture
def aged(settings, lake: Path, add_snapshot) -> list[dt.datetime]:
    """Rows 9, 7 (and a minute), 6 days and 1 hour old, with the lake days they fall on;
    retention 7 days."""
    settings.RSMQ_SNAPSHOT_RETENTION = 7
    times = [NOW - dt.timedelta(days=9), NOW - dt.timedelta(days=7, minutes=1)]
    times += [NOW - dt.timedelta(days=6), NOW - dt.timedelta(hours=1)]
    for t in times:
        add_snapshot("q1", _ms(t), msgs=1)
    lake_files.append(lake, [_lake_row(t) for t in times])
    return times


def test_it_deletes_the_rows_older_than_the_retention(aged) -> None:
    deleted, _ = runs.prune(NOW)
    assert deleted == 2
    assert sorted(Snapshot.objects.values_list("taken_at", flat=True)) == [_ms(t) for t in aged[2:]]


def test_it_removes_the_lake_days_wholly_before_the_cutoff(aged, lake: Path) -> None:
    # The cutoff is 2026-11-14 12:00: that day still has rows to keep, the earlier go.
    _, days = runs.prune(NOW)
    assert days == [dt.date(2026, 11, 12)]
    assert lake_files.days(lake) == [dt.date(2026, 11, 14), dt.date(2026, 11, 15),
                                     dt.date(2026, 11, 21)]  # fmt: skip
    assert pq.read_table(lake).num_rows == 3


def test_it_takes_the_retention_in_days_from_the_setting(settings, aged) -> None:
    settings.RSMQ_SNAPSHOT_RETENTION = 0.5
    deleted, _ = runs.prune(NOW)
    assert deleted == 3
    assert list(Snapshot.objects.values_list("taken_at", flat=True)) == [_ms(aged[3])]


def test_it_deletes_in_batches(aged, monkeypatch) -> None:
    monkeypatch.setattr(runs, "PRUNE_BATCH", 1)
    assert runs.prune(NOW)[0] == 2
    assert Snapshot.objects.count() == 2


def test_it_leaves_other_folders_in_the_lake_alone(aged, lake: Path) -> None:
    (lake / "_checkpoints").mkdir()
    (lake / "date=not-a-date").mkdir()
    runs.prune(NOW)
    assert (lake / "_checkpoints").is_dir()
    assert (lake / "date=not-a-date").is_dir()


def test_the_task_prunes_up_to_now(settings, lake: Path, add_snapshot) -> None:
    settings.RSMQ_SNAPSHOT_RETENTION = 1
    now = dt.datetime.now(dt.UTC)
    add_snapshot("q1", _ms(now - dt.timedelta(days=1, minutes=1)))
    add_snapshot("q1", _ms(now - dt.timedelta(hours=23)))
    assert prune_snapshots() == {"rows": 1, "days": [], "condition_changes": 0}
    assert Snapshot.objects.count() == 1
