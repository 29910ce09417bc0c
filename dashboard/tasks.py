"""The Celery tasks beat runs (CELERY_BEAT_SCHEDULE in settings.py)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from . import pipeline_runs, snapshots


@shared_task(name="dashboard.tasks.snapshot", ignore_result=True)
def snapshot() -> dict[str, Any]:
    """Every queue's counters, every RSMQ_SNAPSHOT_INTERVAL seconds."""
    run = snapshots.take()
    # What the worker logs as the task's result.
    return {
        "rows": run.rows, "files": len(run.files), "skipped": run.skipped,
        "unreadable": run.unreadable, "locked": run.locked,
    }  # fmt: skip


@shared_task(name="dashboard.tasks.prune_snapshots", ignore_result=True)
def prune_snapshots() -> dict[str, Any]:
    """Retention: rows and lake days older than RSMQ_SNAPSHOT_RETENTION days."""
    rows, days = snapshots.prune()
    return {"rows": rows, "days": [d.isoformat() for d in days]}


@shared_task(name="dashboard.tasks.pipeline_rollups", ignore_result=True)
def pipeline_rollups() -> dict[str, Any]:
    """The Spark rollups, every RSMQ_PIPELINE_INTERVAL seconds: started as a process of
    its own (`manage.py pipeline rollups`), so this worker goes on with the snapshots."""
    return pipeline_runs.start("rollups")
