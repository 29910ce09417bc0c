"""What happened, kept RSMQ_AUDIT_RETENTION days: the audit log, the outbox's finished
notifications (sent, given up, held), the alerts' history, silences and reveals over
since then.
Older rows are deleted by beat's hourly task (dashboard/tasks.py ``prune_audit``), in
batches of BATCH rows, each a short statement of its own, for at most BUDGET seconds a
task (it queues itself again while rows are left): a first run over millions of rows
never holds the worker the snapshots share, nor a table for long. A notification still
to send is never deleted, whatever its age."""

from __future__ import annotations

import datetime as dt
import time

from django.conf import settings
from django.db.models import Model, Q, QuerySet
from django.utils import timezone

from dashboard.models import AlertEvent, AuditEntry, Notification, Reveal, Silence

#: rows one statement deletes
BATCH = 5000
#: seconds one task deletes for
BUDGET = 2.0


def older(cutoff: dt.datetime) -> list[QuerySet[Model]]:
    """The rows past the retention, table by table."""
    done = Q(sent__isnull=False) | Q(gave_up__isnull=False) | ~Q(held="")
    return [
        AuditEntry.objects.filter(at__lt=cutoff),
        Notification.objects.filter(done, created__lt=cutoff),
        AlertEvent.objects.filter(at__lt=int(cutoff.timestamp() * 1000)),
        Silence.objects.filter(ends__lt=cutoff),
        Reveal.objects.filter(until__lt=cutoff),
    ]


def prune(now: dt.datetime | None = None, budget: float = BUDGET) -> tuple[int, bool]:
    """(rows deleted, whether older ones are left for another task). RSMQ_AUDIT_RETENTION
    0 keeps every row."""
    days = float(settings.RSMQ_AUDIT_RETENTION)
    if days <= 0:
        return 0, False
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    until = time.monotonic() + budget
    deleted = 0
    for old in older(cutoff):
        while pks := list(old.order_by("pk").values_list("pk", flat=True)[:BATCH]):
            old.model._default_manager.filter(pk__in=pks).delete()
            deleted += len(pks)
            if time.monotonic() >= until:
                return deleted, True
    return deleted, False
