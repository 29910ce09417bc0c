"""The Celery tasks beat runs (CELERY_BEAT_SCHEDULE in settings.py)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from dashboard.acting import jobs
from dashboard.alerting import digest, evaluate

# The outbox's task is delivery's own (evaluation starts it): imported here, the worker
# registers it with the rest.
from dashboard.alerting.delivery import send_notifications as send_notifications
from dashboard.analytics import runs as pipeline_runs
from dashboard.audit import drain as audit_drain
from dashboard.audit import retention
from dashboard.models import AlertRule
from dashboard.snapshots import runs
from dashboard.triage import as_of, conditions

log = logging.getLogger(__name__)


@shared_task(name="dashboard.tasks.snapshot", ignore_result=True)
def snapshot() -> dict[str, Any]:
    """Every queue's counters, every RSMQ_SNAPSHOT_INTERVAL seconds."""
    run = conditions.take_snapshot()
    if run.rows:
        evaluate_alerts_soon()
    # What the worker logs as the task's result.
    return {
        "rows": run.rows, "files": len(run.files), "skipped": run.skipped,
        "unreadable": run.unreadable, "locked": run.locked,
    }  # fmt: skip


@shared_task(name="dashboard.tasks.drain_audit", ignore_result=True)
def drain_audit() -> dict[str, Any]:
    """The API's audit records, from Redis into the database (audit_drain.drain)."""
    return {"moved": audit_drain.drain()}


@shared_task(name="dashboard.tasks.prune_audit", ignore_result=True)
def prune_audit() -> dict[str, Any]:
    """Retention: audit rows older than RSMQ_AUDIT_RETENTION days, in short batches; while
    older ones are left, queued again (behind the snapshots waiting meanwhile)."""
    deleted, more = retention.prune()
    if more:
        prune_audit.apply_async(countdown=1, retry=False)
    return {"deleted": deleted, "more": more}


@shared_task(name="dashboard.tasks.prune_snapshots", ignore_result=True)
def prune_snapshots() -> dict[str, Any]:
    """Retention: rows and lake days older than RSMQ_SNAPSHOT_RETENTION days."""
    rows, days = runs.prune()
    # the conditions' history goes back as far as the snapshots (a page "as of" a time)
    changes = as_of.prune()
    return {"rows": rows, "days": [d.isoformat() for d in days], "condition_changes": changes}


@shared_task(name="dashboard.tasks.pipeline_rollups", ignore_result=True)
def pipeline_rollups() -> pipeline_runs.Started:
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
    # Firing alerts weigh in the overview's order: each namespace's queues' scores.
    places = AlertRule.objects.order_by().values_list("connection", "namespace").distinct()
    for conn, ns in places:
        try:
            conditions.refresh_alerts(conn, ns)
        except Exception:  # noqa: BLE001 - the alerts are stored: the order can wait
            log.exception("alert counts of %s/%s not refreshed", conn, ns)
    return {
        "rules": ev.rules, "changes": ev.changes, "notifications": ev.notifications,
        "skipped": ev.skipped, "failed": ev.failed, "locked": ev.locked,
    }  # fmt: skip


@shared_task(name="dashboard.tasks.alert_digest", ignore_result=True)
def alert_digest() -> dict[str, Any]:
    """The daily digest of low-severity alerts (dashboard/alerting/digest.py)."""
    return {"notifications": digest.send_digest()}


@shared_task(name="dashboard.tasks.bulk_count", ignore_result=True)
def bulk_count(job_id: int, turn: int | None = None) -> None:
    """Act on every match, first: one step of counting the matches, queueing the next
    (dashboard/acting/jobs.py)."""
    jobs.count(job_id, turn)


@shared_task(name="dashboard.tasks.bulk_run", ignore_result=True)
def bulk_run(job_id: int, turn: int | None = None) -> None:
    """Act on every match, once confirmed: one paced, bounded step, queueing the next with
    the countdown its pace asks for (dashboard/acting/jobs.py): never a sleep here."""
    jobs.execute(job_id, turn)


@shared_task(name="dashboard.tasks.sweep_jobs", ignore_result=True)
def sweep_jobs() -> dict[str, int]:
    """Jobs whose step was lost with its task, queued again; counted jobs never
    confirmed, cancelled (jobs.sweep)."""
    return jobs.sweep()
