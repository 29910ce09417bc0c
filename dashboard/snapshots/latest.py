"""The last snapshot of a namespace, as the overview's order when the namespace is big.

Sorting 100,000 queues by a counter live means reading every queue's counters for each
page view; the last snapshot (dashboard/snapshots/runs.py, at most one interval old) already
holds them. The overview pages its rows here, in the database, and reads live values only
for the page it shows.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.db.models import Expression, F, FloatField, Max, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from dashboard.models import Snapshot

#: a namespace whose last snapshot holds more queues than this is big: the overview pages
#: it in the snapshot's order and /metrics serves the snapshot (reading 100,000 queues
#: live costs seconds of Redis scripts)
LIVE_MAX = 5_000

#: each overview sort key as an expression of a snapshot's columns (vt, delay and maxsize
#: are not in snapshots: a namespace sorted by them is read live)
ORDER: dict[str, Expression | F] = {
    "name": F("queue"),
    "msgs": F("msgs"),
    "visible": F("msgs") - F("hiddenmsgs"),
    "hidden": F("hiddenmsgs"),
    "inflight": F("inflight"),
    "delayed": F("delayed"),
    "totalsent": F("totalsent"),
    "totalrecv": F("totalrecv"),
    "oldest": Coalesce("oldest_age", Value(0.0), output_field=FloatField()),
}


def last_run(conn: str, ns: str) -> tuple[int, QuerySet[Snapshot]] | None:
    """(when it was taken, its rows) of the namespace's last snapshot run, or None when
    there is none recent (three intervals, at least a minute: snapshots aren't running)."""
    mine = Snapshot.objects.filter(connection=conn, namespace=ns)
    last = mine.order_by("-taken_at").values_list("taken_at", "queue").first()
    interval_ms = settings.RSMQ_SNAPSHOT_INTERVAL * 1000
    if last is None or round(time.time() * 1000) - last[0] > max(3 * interval_ms, 60_000):
        return None
    return last[0], _run_rows(mine, *last)


def run_at(conn: str, ns: str, at_ms: int) -> tuple[int, QuerySet[Snapshot]] | None:
    """(when it was taken, its rows) of the namespace's last snapshot run taken at or
    before ``at_ms`` (what a page "as of" that time shows), or None: none kept so early."""
    mine = Snapshot.objects.filter(connection=conn, namespace=ns)
    last = (
        mine.filter(taken_at__lte=at_ms).order_by("-taken_at").values_list("taken_at", "queue")
    ).first()
    return None if last is None else (last[0], _run_rows(mine, *last))


def _run_rows(mine: QuerySet[Snapshot], latest: int, queue: str) -> QuerySet[Snapshot]:
    """The rows of the run whose last row (``latest``) is ``queue``'s."""
    interval_ms = settings.RSMQ_SNAPSHOT_INTERVAL * 1000
    # A run's rows carry the Redis time of their stats call, spread over the run's read,
    # and runs never overlap (a lock): the run before ended with the previous reading of
    # the queue read last (the last in name order), so what came after is this run's.
    before = (
        mine.filter(queue=queue, taken_at__lt=latest)
        .order_by("-taken_at")
        .values_list("taken_at", flat=True)
        .first()
    )
    start = before if before is not None else latest - interval_ms / 2
    return mine.filter(taken_at__gt=start, taken_at__lte=latest)


def is_big(rows: QuerySet[Snapshot]) -> bool:
    """Whether a run's rows are more than ``LIVE_MAX`` (without counting them all)."""
    return bool(rows.values_list("pk", flat=True)[LIVE_MAX : LIVE_MAX + 1])


def ordered_names(rows: QuerySet[Snapshot], sort: str, search: str) -> QuerySet[Snapshot, str]:
    """The queue names of ``rows`` matching ``search``, in ``sort`` order (then by name)."""
    key = sort.lstrip("-")
    expr = ORDER[key]
    by = expr.desc() if sort.startswith("-") else expr.asc()
    if search:
        rows = rows.filter(queue__icontains=search)
    return rows.order_by(by, "queue").values_list("queue", flat=True)


def backlog_before(conn: str, ns: str, now_ms: int) -> dict[str, int]:
    """Each queue's messages at its last snapshot ``RSMQ_BACKLOG_WINDOW`` seconds before
    ``now_ms`` (looking back three snapshot intervals more): what "growing" compares to."""
    at = now_ms - round(settings.RSMQ_BACKLOG_WINDOW * 1000)
    interval = round(settings.RSMQ_SNAPSHOT_INTERVAL * 1000)
    mine = Snapshot.objects.filter(connection=conn, namespace=ns)
    # One run's rows (about one per queue), not every row of the last minutes.
    last = mine.filter(taken_at__gt=at - 3 * interval, taken_at__lte=at).aggregate(
        last=Max("taken_at")
    )["last"]
    if last is None:
        return {}
    rows = (
        mine.filter(taken_at__gt=last - interval, taken_at__lte=last)
        .order_by("taken_at")
        .values_list("queue", "msgs")
    )
    return dict(rows.iterator())  # the last (latest) reading of each queue wins


def run_totals(rows: QuerySet[Snapshot]) -> dict[str, int]:
    """The sums of a snapshot run's counters: a big namespace's totals strip."""
    sums = rows.aggregate(
        msgs=Sum("msgs"), hidden=Sum("hiddenmsgs"), inflight=Sum("inflight"),
        delayed=Sum("delayed"), queues=Sum(Value(1)),
    )  # fmt: skip
    out = {k: int(v or 0) for k, v in sums.items()}
    out["visible"] = out["msgs"] - out.pop("hidden")
    return out
