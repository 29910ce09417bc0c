"""Send and receive rates from the counters of consecutive snapshots.

``totalsent`` and ``totalrecv`` only grow while a queue lives; a queue deleted and
recreated starts them again from 0. So the messages of an interval are the counter's
growth, or, when it went down (or the queue's ``created`` changed), its whole new value:
never a negative rate. An interval is as long as the real time between its two
snapshots, so a missed snapshot (a gap) gives the average over the gap, not a spike.

Pure functions over plain values: no Django, no Redis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Counters:
    """One snapshot of one queue's counters."""

    at: int  # epoch ms, the Redis server's TIME
    totalsent: int
    totalrecv: int
    created: int = 0  # the queue's creation, epoch s
    msgs: int | None = None  # its messages then (None: not read)


@dataclass(frozen=True, slots=True)
class Interval:
    """The messages sent and received between two snapshots (or across several)."""

    start: int  # epoch ms
    end: int
    sent: int
    received: int
    # how much the backlog changed (messages in − out: sent, moved in, minus deleted,
    # moved away); None: not known (the counts were not read)
    net: int | None = None

    @property
    def seconds(self) -> float:
        return (self.end - self.start) / 1000

    @property
    def send_rate(self) -> float:
        """Messages sent per second."""
        return self.sent / self.seconds

    @property
    def receive_rate(self) -> float:
        return self.received / self.seconds

    @property
    def net_rate(self) -> float | None:
        """The backlog's change per second (in − out); None: not known."""
        return None if self.net is None else self.net / self.seconds


def _growth(before: int, after: int, reset: bool) -> int:
    return after if reset or after < before else after - before


def intervals(snapshots: Iterable[Counters]) -> list[Interval]:
    """One interval per pair of consecutive snapshots, in time order.

    A snapshot no later than the one before it (read twice, or out of order) is skipped.
    """
    out: list[Interval] = []
    prev: Counters | None = None
    for cur in snapshots:
        if prev is not None:
            if cur.at <= prev.at:
                continue
            reset = cur.created != prev.created
            net = None
            if cur.msgs is not None and prev.msgs is not None:
                net = cur.msgs - (0 if reset else prev.msgs)
            out.append(
                Interval(
                    prev.at,
                    cur.at,
                    _growth(prev.totalsent, cur.totalsent, reset),
                    _growth(prev.totalrecv, cur.totalrecv, reset),
                    net,
                )
            )
        prev = cur
    return out


def merge(parts: Sequence[Interval]) -> Interval:
    """Consecutive intervals as one: their messages over their whole time."""
    nets = [p.net for p in parts]
    return Interval(
        parts[0].start,
        parts[-1].end,
        sum(p.sent for p in parts),
        sum(p.received for p in parts),
        None if None in nets else sum(n for n in nets if n is not None),
    )


def buckets(parts: Sequence[Interval], origin: int, width: int) -> list[Interval]:
    """Consecutive intervals merged into buckets of ``width`` ms counted from ``origin``
    (by where each interval ends): fewer points to draw, the same averages."""
    out: list[Interval] = []
    group: list[Interval] = []
    key = None
    for part in parts:
        k = (part.end - origin) // width
        if group and k != key:
            out.append(merge(group))
            group = []
        group.append(part)
        key = k
    if group:
        out.append(merge(group))
    return out


def recent(snapshots: Sequence[Counters], since: int) -> Interval | None:
    """Messages sent and received from ``since`` (epoch ms) to the last snapshot,
    counted from the last snapshot before ``since``; None with fewer than two snapshots."""
    start = 0
    for i, snap in enumerate(snapshots):
        if snap.at <= since:
            start = i
    parts = intervals(snapshots[start:])
    return merge(parts) if parts else None
