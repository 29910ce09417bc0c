"""The audit log's retention: rows older than RSMQ_AUDIT_RETENTION days are deleted by
beat's hourly task (dashboard/tasks.py ``prune_audit``), in batches of BATCH rows, each a
short statement of its own, for at most BUDGET seconds a task (it queues itself again
while rows are left): a first run over millions of rows never holds the worker the
snapshots share, nor the table for long."""

from __future__ import annotations

import datetime as dt
import time

from django.conf import settings
from django.utils import timezone

from dashboard.models import AuditEntry, Reveal

#: rows one statement deletes
BATCH = 5000
#: seconds one task deletes for
BUDGET = 2.0


def prune(now: dt.datetime | None = None, budget: float = BUDGET) -> tuple[int, bool]:
    """(rows deleted, whether older ones are left for another task). RSMQ_AUDIT_RETENTION
    0 keeps every row."""
    days = float(settings.RSMQ_AUDIT_RETENTION)
    if days <= 0:
        return 0, False
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    # reveals ended that long ago: their audit rows (``reveal``) go by the same rule
    Reveal.objects.filter(until__lt=cutoff).delete()
    until = time.monotonic() + budget
    deleted = 0
    while True:
        old = AuditEntry.objects.filter(at__lt=cutoff).order_by("at", "id")
        pks = list(old.values_list("pk", flat=True)[:BATCH])
        if not pks:
            return deleted, False
        AuditEntry.objects.filter(pk__in=pks).delete()
        deleted += len(pks)
        if time.monotonic() >= until:
            return deleted, True
