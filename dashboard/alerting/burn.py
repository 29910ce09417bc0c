"""Burn-rate alerts on a queue's wait-time SLO, as the Google SRE workbook's
"multiwindow, multi-burn-rate alerts" (chapter 5, "Alerting on SLOs").

The SLO: ``target`` % of a queue's messages wait (send → first receive) less than the
queue's SLO seconds (``RSMQ_OLDEST_AGE_SLO(S)``, the same number the oldest message's
age is judged by). Each snapshot stores how many waits it saw (``wait_samples``) and how
many of them were over the SLO (``wait_slow``: dashboard/snapshots/timing.py), so the
bad-event ratio of a window is Σ wait_slow / Σ wait_samples over the snapshots taken in
it, and its **burn rate** is that ratio over the error budget, ``1 − target/100``: 1
spends the budget in exactly the SLO's period, 14.4 spends 2 % of a 30-day budget in an
hour.

A rule fires when both its windows burn faster than its factor — the long window says
the budget is really going, the short one that it still is (so the alert resolves within
minutes of the cause going away):

* ``fast`` (page): 1 h and 5 min, both over 14.4;
* ``slow`` (ticket): 6 h and 30 min, both over 6.

The rule's value is the smaller of the two burn rates: it holds above the factor exactly
when both do. A window with no wait seen burns nothing (0).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q, Sum

from dashboard.models import Snapshot


@dataclass(frozen=True, slots=True)
class Windows:
    long: int  # s
    short: int  # s
    factor: float


#: queues a query names at most (a pattern over a big namespace reads the namespace's
#: timed snapshots instead: one IN of 100,000 names is more than a database takes)
NAMED_MAX = 1000

WINDOWS = {
    "fast": Windows(3600, 300, 14.4),
    "slow": Windows(6 * 3600, 1800, 6.0),
}


def rate(bad: int, total: int, target: float) -> float:
    """The burn rate of ``bad`` of ``total`` events against a ``target`` % SLO."""
    if not total:
        return 0.0
    return (bad / total) / (1 - target / 100)


def burn_rates(
    conn: str, ns: str, queues: Iterable[str], kind: str, target: float, now: int
) -> dict[str, tuple[float, float]]:
    """(long, short) window burn rates of each queue, as of ``now`` (epoch ms): the
    windows are (now − length, now]."""
    w = WINDOWS[kind]
    names = list(queues)
    long_from, short_from = now - w.long * 1000, now - w.short * 1000
    short = Q(taken_at__gt=short_from)
    rows = (
        Snapshot.objects.filter(
            connection=conn,
            namespace=ns,
            queue__in=names,
            wait_p50__isnull=False,
            taken_at__gt=long_from,
            taken_at__lte=now,
        )  # fmt: skip
        .values("queue")
        .annotate(
            n=Sum("wait_samples"),
            bad=Sum("wait_slow"),
            n_short=Sum("wait_samples", filter=short),
            bad_short=Sum("wait_slow", filter=short),
        )
    )
    out = dict.fromkeys(names, (0.0, 0.0))
    for r in rows:
        if r["queue"] not in out:
            continue
        out[r["queue"]] = (
            rate(r["bad"] or 0, r["n"] or 0, target),
            rate(r["bad_short"] or 0, r["n_short"] or 0, target),
        )
    return out


def values(
    conn: str, ns: str, queues: Iterable[str], kind: str, target: float, now: int
) -> dict[str, float]:
    """Each queue's value for a burn rule: the smaller of its two windows' burn rates."""
    return {q: min(pair) for q, pair in burn_rates(conn, ns, queues, kind, target, now).items()}


def factor(kind: str) -> float:
    return WINDOWS[kind].factor
