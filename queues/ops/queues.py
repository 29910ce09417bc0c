"""Queues: create, list, delete, attributes."""

from __future__ import annotations

from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Call, Command, Op, operation
from ..errors import NoAttributeSupplied
from ..limits import (
    SCAN_COUNT,
    SMEMBERS_MAX,
)
from ..models import (
    QueueAttributes,
)
from ..parse import (
    _attributes,
    _text,
)
from .base import Base, R


class Queues(Base[R]):
    # -- queues --------------------------------------------------------------------

    @operation
    def create_queue(
        self, qname: str, vt: int = 30, delay: int = 0, maxsize: int = 65536
    ) -> Op[None]:
        hkey = self._queue_keys(qname)[1]
        args = (qname, v.seconds("vt", vt), v.seconds("delay", delay), v.maxsize(maxsize))
        yield Call(S.CREATE_QUEUE, (hkey, self.queues_key), args, qname)

    @operation
    def list_queues(self) -> Op[list[str]]:
        return (yield from self._names())

    def _names(self) -> Op[list[str]]:
        """Every queue name, sorted: one SMEMBERS in a namespace known to hold at most
        SMEMBERS_MAX queues, else (a big one, or not read yet) SSCAN steps."""
        if self._count_hint is not None and self._count_hint <= SMEMBERS_MAX:
            members = yield Command(("SMEMBERS", self.queues_key))
        else:
            members, cursor = [], b"0"
            while True:
                cursor, got = yield Command(("SSCAN", self.queues_key, cursor, "COUNT", SCAN_COUNT))
                members += got
                if int(cursor) == 0:
                    break
        names = sorted({_text(m) for m in members})  # SSCAN may return a name twice
        self._count_hint = len(names)
        return names

    @operation
    def delete_queue(self, qname: str, keep: str | None = None) -> Op[None]:
        """``keep``: an undo token (``open_undo``): the queue's keys become the stash's
        (renamed: attributes, totals and messages kept exactly) instead of being freed.
        Its flow flag (queues/ops/flow.py) goes with it."""
        z, h, f = self._with_failures(qname)
        keys = (h, z, self.queues_key, self._purge_key(qname), f, self._flow_key(qname),
                self._flow_index_key, *self._kept(keep))  # fmt: skip
        yield Call(S.DELETE_QUEUE, keys, (qname,), qname)

    @operation
    def get_queue_attributes(self, qname: str) -> Op[QueueAttributes]:
        keys = self._queue_keys(qname)
        return _attributes((yield Call(S.GET_QUEUE_ATTRIBUTES, keys, (), qname)))

    @operation
    def set_queue_attributes(
        self,
        qname: str,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
    ) -> Op[QueueAttributes]:
        keys = self._queue_keys(qname)
        args: list[Any] = []
        if vt is not None:
            args += ("vt", v.seconds("vt", vt))
        if delay is not None:
            args += ("delay", v.seconds("delay", delay))
        if maxsize is not None:
            args += ("maxsize", v.maxsize(maxsize))
        if not args:
            raise NoAttributeSupplied()
        return _attributes((yield Call(S.SET_QUEUE_ATTRIBUTES, keys, args, qname)))
