"""A past for the "as of" tests: a queue's backlog rose between two snapshot runs (its
incident then), then it was purged and another queue got messages, in a third run."""

from __future__ import annotations

import time
from collections.abc import Iterable

from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ


def incident_then(
    settings, rsmq: RedisSMQ, queues: Iterable[str], growing: str, calm: str = "",
    whole_second: bool = False,
) -> int:  # fmt: skip
    """Makes ``queues``; ``growing`` gets 5 then 55 more messages across two runs, then is
    purged and given 2 more (or, with ``calm``, ``calm`` given 7), in a third run. Returns
    a time (epoch ms) between the second run and the third (``whole_second``: a whole
    second, as a browser's time field takes it)."""
    settings.RSMQ_BACKLOG_GROWTH_MIN = 10
    settings.RSMQ_BACKLOG_WINDOW = 0.05
    for name in queues:
        rsmq.create_queue(name)
    rsmq.send_messages(growing, ["x"] * 5)
    take_snapshot()
    time.sleep(0.1)
    rsmq.send_messages(growing, ["x"] * 55)
    take_snapshot()
    if whole_second:
        time.sleep(1.1)
        then = round(time.time() * 1000) // 1000 * 1000
        time.sleep(0.1)
    else:
        time.sleep(0.05)
        then = round(time.time() * 1000)
        time.sleep(0.05)
    rsmq.purge_queue(growing)
    if calm:
        rsmq.send_messages(calm, ["y"] * 7)
    else:
        rsmq.send_messages(growing, ["y"] * 2)
    take_snapshot()
    return then
