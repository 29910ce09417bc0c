"""The Celery tasks beat runs (CELERY_BEAT_SCHEDULE in settings.py)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from . import audit, pipeline_runs, snapshots
from .alerting import delivery, evaluate
from .celery import SWEEP_SECONDS
from .models import AlertRule

log = logging.getLogger(__name__)


@shared_task(name="dashboard.tasks.snapshot", ignore_result=True)
def snapshot() -> dict[str, Any]:
    """Every queue's counters, every RSMQ_SNAPSHOT_INTERVAL seconds."""
    run = snapshots.take()
    if run.rows:
        evaluate_alerts_soon()
    # What the worker logs as the task's result.
    return {
        "rows": run.rows, "files": len(run.files), "skipped": run.skipped,
        "unreadable": run.unreadable, "locked": run.locked,
    }  # fmt: skip


@shared_task(name="dashboard.tasks.drain_audit", ignore_result=True)
def drain_audit() -> dict[str, Any]:
    """The API's audit records, from Redis into the database (audit.drain)."""
    return {"moved": audit.drain()}


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


def evaluate_alerts_soon() -> None:
    """The alert rules, in a task of their own: however slow or broken they are, the
    next snapshot goes on. Costs a snapshot one query (none when no rule is enabled)."""
    try:
        if AlertRule.objects.filter(enabled=True).exists():
            evaluate_alerts.apply_async(retry=False)
    except Exception:  # noqa: BLE001 - the snapshot is stored: alerts must not undo it
        log.exception("alert evaluation not started")


@shared_task(name="dashboard.tasks.evaluate_alerts", ignore_result=True)
def evaluate_alerts() -> dict[str, Any]:
    """Every enabled alert rule against its namespace's last snapshot run."""
    ev = evaluate.evaluate()
    return {
        "rules": ev.rules, "changes": ev.changes, "notifications": ev.notifications,
        "skipped": ev.skipped, "failed": ev.failed, "locked": ev.locked,
    }  # fmt: skip


def send_notifications_soon() -> None:
    try:
        send_notifications.apply_async(retry=False)
    except Exception:  # noqa: BLE001 - the outbox keeps them: the periodic sweep sends them
        log.exception("alert notifications not started")


@shared_task(name="dashboard.tasks.send_notifications", ignore_result=True)
def send_notifications() -> dict[str, Any]:
    """The outbox's due notifications; what failed is tried again with backoff (this task
    comes back when the first is due; the beat's sweep as well, should it be lost)."""
    result = delivery.send_due()
    if result.retry_in is not None and result.retry_in < SWEEP_SECONDS:
        send_notifications.apply_async(countdown=result.retry_in + 0.1, retry=False)
    return {"sent": result.sent, "failed": result.failed, "retry_in": result.retry_in}
