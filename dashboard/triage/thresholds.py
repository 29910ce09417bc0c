"""When a number deserves the operator's eye. The policy lives in settings, not in
templates; the ``warn`` template tag asks here.

* The oldest visible message is old when its age passes the queue's SLO: an override
  for ``connection/namespace/queue`` in ``RSMQ_OLDEST_AGE_SLOS``, else one for the queue
  name, else the first shell-style pattern (``emails-*``) that matches the name, else
  ``RSMQ_OLDEST_AGE_SLO``.
* A backlog is growing when it rose by at least ``RSMQ_BACKLOG_GROWTH_MIN`` messages
  over ``RSMQ_BACKLOG_WINDOW`` seconds, and that rise is ``RSMQ_BACKLOG_GROWTH`` of the
  backlog or more, or came at ``RSMQ_BACKLOG_GROWTH_RATE`` messages a second or more
  (a big backlog grows by a small fraction of itself).
* The overview's "needs attention" order is dashboard/triage/conditions.py's score: how bad
  (the consumers' state, growth, the oldest over its SLO, dead letters arriving, open
  flags, firing alerts) times how big (backlog and rate).
* A message is a poison candidate when its receive count reaches ``RSMQ_POISON_RC`` (the
  census's bar), or, on a queue with a dead-letter policy, the policy's ``maxrc`` if that
  is lower: such a message is dead-lettered at its next receive, so it already failed as
  often as the queue allows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from django.conf import settings

from dashboard.snapshots import timing
from queues.models import MessageInfo, QueueStats


def oldest_age_slo(conn: str, ns: str, qname: str) -> float:
    slos = settings.RSMQ_OLDEST_AGE_SLOS
    for key in (f"{conn}/{ns}/{qname}", qname):
        if key in slos:
            return float(slos[key])
    for pattern, slo in slos.items():
        if any(c in pattern for c in "*?[") and fnmatchcase(qname, pattern):
            return float(slo)
    return float(settings.RSMQ_OLDEST_AGE_SLO)


def oldest_age_slos(conn: str, ns: str) -> Callable[[str], float]:
    """``oldest_age_slo`` for many queues of a namespace, the settings read once: the
    snapshots' own (a queue's wait SLO is the same number)."""
    return timing.slos(conn, ns)


def smallest_oldest_age_slo() -> float:
    """The smallest SLO any queue has: no queue whose oldest message is younger is over."""
    return min(
        [float(settings.RSMQ_OLDEST_AGE_SLO), *map(float, settings.RSMQ_OLDEST_AGE_SLOS.values())]
    )


def poison_rc(stats: QueueStats | None) -> int:
    bar = int(settings.RSMQ_POISON_RC)
    if stats is not None and stats.dlq and stats.maxrc:
        return min(bar, stats.maxrc)
    return bar


def oldest_too_old(stats: QueueStats, conn: str, ns: str) -> bool:
    age = stats.oldest_age
    return age is not None and age > oldest_age_slo(conn, ns, stats.qname)


def poison(msg: MessageInfo, stats: QueueStats | None) -> bool:
    return msg.rc >= poison_rc(stats)


@dataclass(frozen=True, slots=True)
class Growth:
    """The settings of "backlog growing", read once (see ``backlog_growing``)."""

    floor: int
    share: float
    rate: float
    window: float

    @classmethod
    def from_settings(cls) -> Growth:
        return cls(
            max(1, int(settings.RSMQ_BACKLOG_GROWTH_MIN)),
            float(settings.RSMQ_BACKLOG_GROWTH),
            float(settings.RSMQ_BACKLOG_GROWTH_RATE),
            float(settings.RSMQ_BACKLOG_WINDOW),
        )

    def growing(self, now: int, before: int | None, seconds: float | None = None) -> bool:
        if before is None:
            return False
        rise = now - before
        if rise < self.floor:
            return False
        if rise >= self.share * before:
            return True
        span = seconds if seconds is not None else self.window
        return span > 0 and rise / span >= self.rate


def backlog_growing(now: int, before: int | None, seconds: float | None = None) -> bool:
    """Whether a backlog of ``now`` messages, ``before`` ``seconds`` ago (a window when
    not given), is growing: by enough messages, and by enough of itself or fast enough."""
    return Growth.from_settings().growing(now, before, seconds)
