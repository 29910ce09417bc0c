"""The dead-letter policy, the queues that send to a dead-letter queue, and redrive."""

from __future__ import annotations

from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Batch, Call, Op, operation
from ..errors import InvalidArgument, QueueNotFound
from ..limits import (
    FAILURES_SUFFIX,
    MAX_MAXRC,
    MOVE_CHUNK,
    STATS_CHUNK,
)
from ..models import (
    DeadLetterPolicy,
)
from .base import R
from .stats import Stats


class DeadLetters(Stats[R]):
    # -- dead-letter policy ----------------------------------------------------------

    @operation
    def set_dead_letter_policy(self, qname: str, dlq: str, maxrc: int) -> Op[None]:
        """Messages received ``maxrc`` times go to queue ``dlq`` instead of a further receive.

        Stored in extension fields of the queue's hash (x:dlq, x:maxrc): original RSMQ
        clients ignore them and keep working on the queue.
        """
        keys = self._queue_keys(qname)
        dlq_keys = self._queue_keys(v.qname(dlq, "dlq"))
        if dlq == qname:
            raise InvalidArgument("dlq", "dlq must be a different queue from qname")
        v.integer("maxrc", maxrc, 1, MAX_MAXRC)
        yield Call(S.POLICY, (keys[1], dlq_keys[1]), (dlq, maxrc), (qname, dlq))

    @operation
    def clear_dead_letter_policy(self, qname: str) -> Op[None]:
        keys = self._queue_keys(qname)
        yield Call(S.POLICY, (keys[1], keys[1]), ("", 0), qname)

    @operation
    def get_dead_letter_policy(self, qname: str) -> Op[DeadLetterPolicy | None]:
        stats = yield from self._stats_of([qname])
        if not stats:
            raise QueueNotFound(qname)
        s = stats[0]
        if s.dlq is None or s.maxrc is None:
            return None
        return DeadLetterPolicy(dlq=s.dlq, maxrc=s.maxrc, deadlettered=s.deadlettered)

    @operation
    def dead_letter_sources(self, dlq: str) -> Op[list[str]]:
        """The queues whose dead-letter policy sends to ``dlq``, sorted."""
        return (yield from self._names_and_sources(dlq))[1]

    @operation
    def queue_names_and_sources(self, dlq: str) -> Op[tuple[list[str], list[str]]]:
        """The namespace's queue names, and those of them whose dead-letter policy sends to
        ``dlq`` (a queue page's "move to" suggestions and its redrive, read together)."""
        return (yield from self._names_and_sources(dlq))

    def _names_and_sources(self, dlq: str) -> Op[tuple[list[str], list[str]]]:
        # One round trip, like queue_stats(): the queue set, and the policies of the
        # queues it held last time; queues created since cost one more.
        v.qname(dlq, "dlq")
        known = [n for n in self._known_names if v.QNAME_RE.fullmatch(n)]
        members, replies = yield Batch(
            self._sources_calls(known, dlq), first=("SMEMBERS", self.queues_key)
        )
        # A name that is not an RSMQ name (written by some other client) names no queue.
        text = (m.decode(errors="replace") if isinstance(m, bytes) else m for m in members)
        names = sorted(n for n in text if v.QNAME_RE.fullmatch(n))
        current, seen = set(names), set(known)
        sources = [q for q in self._sources_of(known, replies) if q in current]
        new = [n for n in names if n not in seen]
        if new:
            sources += self._sources_of(new, (yield Batch(self._sources_calls(new, dlq))))
        self._known_names = names
        return names, sorted(sources)

    def _sources_calls(self, names: list[str], dlq: str) -> list[Call]:
        return [
            Call(S.DLQ_SOURCES, [self._queue_keys(q)[1] for q in names[k : k + STATS_CHUNK]],
                 (dlq,))
            for k in range(0, len(names), STATS_CHUNK)
        ]  # fmt: skip

    @staticmethod
    def _sources_of(names: list[str], replies: list[Any]) -> list[str]:
        starts = range(0, len(names), STATS_CHUNK)
        return [names[k + i - 1] for k, found in zip(starts, replies, strict=True) for i in found]

    @operation
    def redrive(
        self, dlq: str, to: str | None = None, limit: int | None = None, keep: str | None = None
    ) -> Op[int]:
        """Move dead-lettered messages back to the queue each came from (or to ``to``).

        Only visible messages move: one in flight (a consumer holds it) or delayed stays,
        or it would be delivered twice. They start over (rc and fr dropped: the policy
        would dead-letter them again at once) and are visible at once; bounded batches
        of ``MOVE_CHUNK``; at most ``limit`` messages. Returns how many were moved; a message
        whose source is gone stays in ``dlq``. ``keep``: an undo token (``open_undo``)
        that keeps each message as it was in ``dlq``.
        """
        keys = (*self._with_failures(dlq), *self._kept(keep))
        if to is not None:
            self._queue_keys(v.qname(to, "to"))
            if to == dlq:
                raise InvalidArgument("to", "to must be a different queue from dlq")
        if limit is not None:
            v.integer("limit", limit, 1, 2**53)
        moved = skipped = 0
        while limit is None or moved < limit:
            chunk = MOVE_CHUNK if limit is None else min(MOVE_CHUNK, limit - moved)
            m, s, seen, stopped = yield Call(
                S.REDRIVE,
                keys,
                (self._prefix, to or "", skipped, chunk, FAILURES_SUFFIX),
                (dlq, to or ""),
            )
            moved += m
            skipped += s
            if seen < chunk and not stopped:
                break
        return moved
