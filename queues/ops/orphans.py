"""What other RSMQ ports leave behind: orphaned message fields in a queue's hash (go-rsmq's
deleteMessage keeps the body) and leftover queue hashes (its deleteQueue keeps the
``:Q`` hash). Counted with bounded calls, and cleaned up by scripts that re-check, in
the same atomic step, that no live message or queue owns what they delete."""

from __future__ import annotations

from typing import Any

from .. import scripts as S
from ..driver import Batch, Call, Command, Op, operation
from ..limits import LEFTOVER_SCAN_STEPS, ORPHAN_CHUNK, ORPHAN_FIELDS_MAX, SCAN_COUNT
from ..models import Leftovers, Orphans
from ..parse import _queue_name, _text
from .base import Base, R


class OrphanOps(Base[R]):
    # -- other ports' leftovers --------------------------------------------------------

    def _orphan_fields(self, qname: str, clean: bool) -> Op[Orphans]:
        z, h = self._queue_keys(qname)
        size = yield Command(("HLEN", h))
        if size > ORPHAN_FIELDS_MAX:
            return Orphans(None, 0)
        names: list[Any] = yield Command(("HKEYS", h))
        found = total = 0
        for i in range(0, len(names), ORPHAN_CHUNK):
            chunk = names[i : i + ORPHAN_CHUNK]
            r = yield Call(S.ORPHANS, (z, h), ("clean" if clean else "", *chunk), qname)
            found += r[0]
            total += r[1]
        return Orphans(found, total)

    @operation
    def orphans(self, qname: str) -> Op[Orphans]:
        """Orphaned message fields of a queue: bodies, rc, fr (and dead-letter sources)
        whose message is no longer in the queue. Read-only."""
        return (yield from self._orphan_fields(qname, False))

    @operation
    def clean_orphans(self, qname: str) -> Op[Orphans]:
        """Deletes a queue's orphaned message fields (each re-checked against the queue
        in the deleting script); returns what was deleted."""
        return (yield from self._orphan_fields(qname, True))

    @operation
    def leftover_queues(self) -> Op[Leftovers]:
        """Names whose queue hash is left with no name in the queue set and no messages
        (go-rsmq's deleteQueue): SCAN steps of SCAN_COUNT keys, LEFTOVER_SCAN_STEPS at
        most, then each name found checked by a short script, ORPHAN_CHUNK of them a
        pipelined round trip. Read-only."""
        pattern = self._prefix.replace("\\", "\\\\")
        for c in "*?[]":
            pattern = pattern.replace(c, "\\" + c)
        cursor: Any = b"0"
        seen: set[str] = set()
        for _ in range(LEFTOVER_SCAN_STEPS):
            cursor, keys = yield Command(
                ("SCAN", cursor, "MATCH", pattern + "*:Q", "COUNT", SCAN_COUNT)
            )
            for k in keys:
                name = _queue_name(_text(k)[len(self._prefix) : -2])
                if name is not None:
                    seen.add(name)
            if int(cursor) == 0:
                break
        names: list[str] = []
        ordered = sorted(seen)
        for i in range(0, len(ordered), ORPHAN_CHUNK):  # read-only: pipelined checks
            chunk = ordered[i : i + ORPHAN_CHUNK]
            calls = [self._leftover_call(name, False) for name in chunk]
            replies = yield Batch(calls)
            names += [name for name, left in zip(chunk, replies, strict=True) if left]
        return Leftovers(names, int(cursor) == 0)

    def _leftover_call(self, qname: str, clean: bool) -> Call:
        z, h = self._queue_keys(qname)
        args = (qname, "clean" if clean else "")
        return Call(S.LEFTOVER, (h, z, self.queues_key), args, qname)

    def _leftover(self, qname: str, clean: bool) -> Op[bool]:
        return bool((yield self._leftover_call(qname, clean)))

    @operation
    def is_leftover_queue(self, qname: str) -> Op[bool]:
        """Whether a queue hash is left over: its name not in the queue set, no messages."""
        return (yield from self._leftover(qname, False))

    @operation
    def clean_leftover_queue(self, qname: str) -> Op[bool]:
        """Deletes a left-over queue hash (re-checked in the deleting script: its name not
        in the queue set, no messages); False if it is not one."""
        return (yield from self._leftover(qname, True))
