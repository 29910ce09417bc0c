"""Wait and processing times per queue, as each snapshot stores them.

Wait is send → first receive; processing is first receive → delete. At each snapshot a
queue's reading (``wait_readings``, queues/ops/timings.py) gives:

* the messages first received since the queue's previous snapshot that are still in
  the queue (their ids carry their send time, ``fr`` their first receive): any client's;
* the records of the project's worker (queues/worker.py) for the messages it deleted:
  their wait if first received since the previous snapshot, their processing if
  deleted since then.

The two sets of waits never hold the same message: one is still in the queue, the
other deleted. Percentiles are nearest-rank (the smallest value with at least that share
of the values at or below it: always a value that was seen).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from django.conf import settings

from queues.limits import TIMINGS_MAX
from queues.models import WaitReading

QUANTILES = (0.5, 0.95, 0.99)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class Timing:
    """One queue's wait and processing times at a snapshot, in seconds."""

    waits: tuple[float, ...]  # seconds
    processing: tuple[float, ...]
    sampled: bool  # some messages were left out (a sample): said so on the page

    def columns(self, slo: float = math.inf) -> tuple[float | int | bool | None, ...]:
        """The snapshot's timing columns (``pipeline.lake.SCHEMA``'s order); ``slo``: the
        queue's wait SLO (s), for the waits over it (``wait_slow``)."""
        out: list[float | int | bool | None] = []
        for values in (self.waits, self.processing):
            if values:
                out += [percentile(values, q) for q in QUANTILES]
                out.append(len(values))
            else:
                out += [None, None, None, None]
        out.append(self.sampled if (self.waits or self.processing) else None)
        out.append(sum(w > slo for w in self.waits) if self.waits else None)
        return tuple(out)


#: the columns of a snapshot row with nothing to say about time
NO_TIMING: tuple[None, ...] = (None,) * 10
TIMING_COLUMNS = (
    "wait_p50", "wait_p95", "wait_p99", "wait_samples",
    "processing_p50", "processing_p95", "processing_p99", "processing_samples",
    "timings_sampled", "wait_slow",
)  # fmt: skip


def slos(conn: str, ns: str) -> Callable[[str], float]:
    """Each queue's SLO (s): the oldest visible message's age it should stay under, and
    the wait its messages should stay under: an override for ``conn/ns/queue`` in
    ``RSMQ_OLDEST_AGE_SLOS``, else for the queue's name, else for a pattern it matches
    (``emails-*``), else ``RSMQ_OLDEST_AGE_SLO``. The settings are read once (a snapshot
    judges up to 100,000 queues; reading a Django setting is not free)."""
    table = {str(k): float(v) for k, v in settings.RSMQ_OLDEST_AGE_SLOS.items()}
    default = float(settings.RSMQ_OLDEST_AGE_SLO)
    patterns = [(p, v) for p, v in table.items() if any(c in p for c in "*?[")]
    place = f"{conn}/{ns}/"

    def slo(qname: str) -> float:
        found = table.get(place + qname)
        if found is None:
            found = table.get(qname)
        if found is not None:
            return found
        for pattern, value in patterns:
            if fnmatchcase(qname, pattern):
                return value
        return default

    return slo


def of_reading(reading: WaitReading) -> Timing:
    """What a queue's reading says about the messages since ``reading.since``."""
    since, now = reading.since, reading.now
    waits = list(reading.waits)
    waits += [r.wait for r in reading.records if since < r.fr <= now]
    processing = [r.processing for r in reading.records if since < r.recorded <= now]
    # The records keep the newest TIMINGS_MAX: if all of those are recent, older ones
    # since ``since`` were dropped.
    records = reading.records
    dropped = len(records) >= TIMINGS_MAX and records[-1].recorded > since
    return Timing(
        tuple(w / 1000 for w in waits),
        tuple(p / 1000 for p in processing),
        reading.sampled or dropped,
    )
