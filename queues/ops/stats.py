"""Counters of queues in one pipelined round trip: what listings, bulk steps and the
dead-letter reads start from."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Batch, Call, Op, operation
from ..errors import InvalidArgument
from ..limits import (
    DEFAULT_SAMPLE,
    SMEMBERS_MAX,
    STATS_ROW,
)
from ..models import (
    QueueStats,
)
from ..parse import (
    NOT_A_QUEUE,
    _stats,
    _stats_chunk,
    _text,
)
from .base import R
from .queues import Queues


class Stats(Queues[R]):
    # -- operations: none of them changes rc, fr, totalsent or totalrecv -------------

    @operation
    def queue_stats(
        self, qnames: Iterable[str] | None = None, sample: int = DEFAULT_SAMPLE
    ) -> Op[list[QueueStats]]:
        """Counters of the given queues (default: all), in one pipelined round trip
        (all queues: one more, for their names, read in SSCAN steps the first time and
        past SMEMBERS_MAX queues). Queues that don't exist are left out.

        Nothing another client wrote makes it fail: a queue whose record can't be read
        and a name that is not an RSMQ name (the queue set may hold any) come back as
        rows with ``unreadable`` saying why, and every other queue is read as usual.
        No key is made of a name that is not an RSMQ name."""
        if qnames is not None:
            names = list(qnames)
            for q in names:
                if not isinstance(q, str):
                    v.qname(q)  # raises: only text can be a listed name
            return (yield from self._stats_of(names, sample))
        v.integer("sample", sample, 1, 100_000)
        if self._count_hint is None or self._count_hint > SMEMBERS_MAX:
            names = yield from self._names()
            stats = yield from self._stats_of(names, sample)
            self._remember(names, stats)
            return stats
        # One round trip: the queue set and the counters of the queues it held last time.
        # Queues created since cost one more; deleted ones come back absent and drop out.
        known = self._known_names
        calls, _ = self._stats_calls(known, sample)
        members, results = yield Batch(calls, first=("SMEMBERS", self.queues_key))
        names = sorted(_text(m) for m in members)
        current = set(names)
        stats = [s for s in self._parse_stats(known, results) if s.qname in current]
        seen = set(known)
        new = [n for n in names if n not in seen]
        if new:
            now = results[0][0] if results else 0
            stats += yield from self._stats_of(new, sample, now)
            stats.sort(key=lambda s: s.qname)
        self._remember(names, stats)
        return stats

    def _remember(self, names: list[str], stats: list[QueueStats]) -> None:
        """The queue names the next queue_stats() of all reads with the queue set, in
        the same round trip: the RSMQ names of a namespace SMEMBERS may read whole."""
        self._count_hint = len(names)
        if len(names) > SMEMBERS_MAX:
            self._known_names = []
            return
        foreign = {s.qname for s in stats if s.unreadable == NOT_A_QUEUE}
        self._known_names = [n for n in names if n not in foreign] if foreign else names

    def _stats_of(
        self, names: list[str], sample: int = DEFAULT_SAMPLE, now: int = 0
    ) -> Op[list[QueueStats]]:
        v.integer("sample", sample, 1, 100_000)
        calls, readable = self._stats_calls(names, sample)
        stats = self._parse_stats(readable, (yield Batch(calls))) if calls else []
        if len(readable) == len(names):
            return stats
        # Names that are not RSMQ names (written by some other client): listed, never read.
        now = stats[0].now if stats else now
        by_name = {s.qname: s for s in stats}
        return [
            by_name[n] if n in by_name else QueueStats.of_unreadable(n, NOT_A_QUEUE, now)
            for n in names
            if n in by_name or n not in readable
        ]

    def _stats_calls(self, names: list[str], sample: int) -> tuple[list[Call], list[str]]:
        """The stats script calls for ``names``, and the names they read: those that are
        RSMQ queue names (no key is made of any other)."""
        keys: list[str] = []
        readable: list[str] = []
        for q in names:
            try:
                keys += self._queue_keys(q)
            except InvalidArgument:
                continue
            readable.append(q)
        step = 2 * _stats_chunk(readable)
        calls = [
            Call(S.STATS, keys[k : k + step], (sample, random.random()))
            for k in range(0, len(keys), step)
        ]
        return calls, readable

    @staticmethod
    def _parse_stats(names: list[str], results: list[Any]) -> list[QueueStats]:
        stats: list[QueueStats] = []
        n = _stats_chunk(names)
        for k, r in zip(range(0, len(names), n), results, strict=True):
            now = r[0]
            for j, q in enumerate(names[k : k + n]):
                row = r[1 + STATS_ROW * j : 1 + STATS_ROW * (j + 1)]
                if row[0] != 0:
                    stats.append(_stats(q, row, now))
        return stats
