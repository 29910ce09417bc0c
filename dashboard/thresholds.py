"""When a number deserves the operator's eye. The policy lives in settings, not in
templates; the ``warn`` template tag asks here.

* The oldest visible message is old when its age passes the queue's SLO: an override
  for ``connection/namespace/queue`` in ``RSMQ_OLDEST_AGE_SLOS``, else one for the queue
  name, else the first shell-style pattern (``emails-*``) that matches the name, else
  ``RSMQ_OLDEST_AGE_SLO``.
* A backlog is growing when it rose by ``RSMQ_BACKLOG_GROWTH`` of itself (and at least
  ``RSMQ_BACKLOG_GROWTH_MIN`` messages) over ``RSMQ_BACKLOG_WINDOW`` seconds.
* The overview's "needs attention" order: open anomaly flags, then the oldest message
  over its SLO, then a growing backlog, then dead letters arriving; within each, the
  furthest over its SLO first.
* A message is a poison candidate when its receive count reaches ``RSMQ_POISON_RC`` (the
  census's bar), or, on a queue with a dead-letter policy, the policy's ``maxrc`` if that
  is lower: such a message is dead-lettered at its next receive, so it already failed as
  often as the queue allows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from django.conf import settings

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


def backlog_growing(now: int, before: int | None) -> bool:
    """Whether a backlog of ``now`` messages, ``before`` a window ago, is growing."""
    if before is None:
        return False
    rise = now - before
    return rise >= max(settings.RSMQ_BACKLOG_GROWTH_MIN, settings.RSMQ_BACKLOG_GROWTH * before)


@dataclass(frozen=True, slots=True)
class Attention:
    """Why a queue needs the operator's eye, for the overview's default order."""

    flagged: bool = False
    over_slo: float = 0.0  # the oldest message's age / its SLO when over it, else 0
    slo: float = 0.0  # s
    growing: int = 0  # messages more than a window ago, when growing
    dead_letters: int = 0  # messages more than a window ago, on a dead-letter queue

    @property
    def any(self) -> bool:
        return bool(self.flagged or self.over_slo or self.growing or self.dead_letters)

    def key(self, stats: QueueStats) -> tuple[int, int, int, int, float, int, str]:
        """Most urgent first: sort ascending by this."""
        return (
            not self.flagged,
            not self.over_slo,
            not self.growing,
            not self.dead_letters,
            -self.over_slo,
            -stats.msgs,
            stats.qname,
        )


def attention(
    stats: QueueStats,
    conn: str,
    ns: str,
    flagged: Collection[str],
    dead_letter_queues: Collection[str],
    before: Mapping[str, int],
) -> Attention:
    """How ``stats``'s queue ranks: ``flagged``, the queues with an open anomaly flag;
    ``dead_letter_queues``, those some policy sends to; ``before``, each queue's messages
    a window ago (RSMQ_BACKLOG_WINDOW; missing: no snapshot then)."""
    slo = oldest_age_slo(conn, ns, stats.qname)
    age = stats.oldest_age
    then = before.get(stats.qname)
    grew = stats.msgs - (then or 0)
    dead = stats.qname in dead_letter_queues
    return Attention(
        flagged=stats.qname in flagged,
        over_slo=age / slo if age is not None and slo > 0 and age > slo else 0.0,
        slo=slo,
        # A dead-letter queue's arrivals are dead letters, not a backlog.
        growing=grew if not dead and backlog_growing(stats.msgs, then) else 0,
        # Without a snapshot a window ago, what waits in it is what arrived.
        dead_letters=grew if dead and stats.visible and grew > 0 else 0,
    )
