"""When a number deserves the operator's eye. The policy lives in settings, not in
templates; the ``warn`` template tag asks here.

* The oldest visible message is old when its age passes the queue's SLO: an override
  for ``connection/namespace/queue`` in ``RSMQ_OLDEST_AGE_SLOS``, else one for the queue
  name, else ``RSMQ_OLDEST_AGE_SLO`` (the same lookup as the pipeline's anomaly flags).
* A message is a poison candidate when its receive count reaches ``RSMQ_POISON_RC`` (the
  census's bar), or, on a queue with a dead-letter policy, the policy's ``maxrc`` if that
  is lower: such a message is dead-lettered at its next receive, so it already failed as
  often as the queue allows.
"""

from __future__ import annotations

from django.conf import settings

from queues.models import MessageInfo, QueueStats


def oldest_age_slo(conn: str, ns: str, qname: str) -> float:
    slos = settings.RSMQ_OLDEST_AGE_SLOS
    for key in (f"{conn}/{ns}/{qname}", qname):
        if key in slos:
            return float(slos[key])
    return float(settings.RSMQ_OLDEST_AGE_SLO)


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
