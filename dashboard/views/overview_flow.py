"""What the overview's page adds of flow and time: which of its queues are paused or
throttled (a badge in the row, the reason on hover) and, for those with delayed messages,
their peak over the next day ("38,412 due 03:00–03:05", as the last snapshot found it:
dashboard/triage/due.py) — read with the page's stats, in the same round trip
(``RedisSMQ.queue_stats_flagged``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dashboard.acting import flow as flows
from dashboard.display.formatting import exact
from dashboard.triage.due import window
from queues.models import Flagged, Flow, QueueStats


@dataclass(frozen=True, slots=True)
class Badge:
    """A flagged queue's badge: its flag, and what its hover says."""

    flow: Flow
    title: str


def overview_flow(flagged: Flagged | None, stats: list[QueueStats]) -> dict[str, Any]:
    """``flow_badges`` ({queue: Badge}) and ``due_peaks`` ({queue: "N due 03:00–03:05"})
    of the page's queues, from what the page's stats read brought along."""
    if flagged is None:
        return {"flow_badges": {}, "due_peaks": {}}
    shown = {s.qname for s in stats}
    badges = {
        q: Badge(f, flows.words(f) + (f"; set by {f.by}" if f.by else ""))
        for q, f in flagged.flows.items()
        if q in shown
    }
    texts = {
        q: f"{exact(d.peak.count)} due {window(d.peak.start, d.peak.end)}"
        for q, d in flagged.peaks.items()
        if q in shown and d.peak.end > min((s.now for s in stats), default=0)
    }
    return {"flow_badges": badges, "due_peaks": texts}
