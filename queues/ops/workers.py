"""The live-worker registry: each ``rsmq worker`` process registers itself (host, pid,
queues, concurrency, started, and that it honours a queue's pause and throttle) and
renews it with its heartbeat; its record expires a ttl after the last beat, so a worker
that died disappears. Kept outside the RSMQ layout (``{ns}:@workers``,
``{ns}:@worker:{id}``: no queue name holds ``@``), so RSMQ clients in other languages
never see it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Call, Op, operation
from ..errors import InvalidArgument
from ..models import WorkerInfo
from ..parse import _text
from .base import Base, R

#: at most this many live workers are read per namespace
MAX_WORKERS = 200


class Workers(Base[R]):
    def _workers_key(self) -> str:
        return self._prefix + "@workers"

    def _worker_key(self, worker_id: str) -> str:
        return self._prefix + "@worker:" + worker_id

    @operation
    def register_worker(
        self,
        worker_id: str,
        host: str,
        pid: int,
        queues: Mapping[str, int],
        started: int,
        ttl: float,
    ) -> Op[None]:
        """Register or renew a worker for ``ttl`` seconds (0: it is gone now)."""
        if not worker_id or len(worker_id) > 200 or any(c.isspace() for c in worker_id):
            raise InvalidArgument("worker_id", "worker_id must be 1-200 characters, no spaces")
        for q in queues:
            v.qname(q, "queues")
        if not 0 <= ttl <= 86_400:
            raise InvalidArgument("ttl", "ttl must be between 0 and 86400 seconds")
        record = {
            "host": host[:200],
            "pid": str(int(pid)),
            "queues": ",".join(f"{q}={int(n)}" for q, n in sorted(queues.items())),
            "started": str(int(started)),
            # it receives through receive.lua: a queue's pause and throttle hold it
            "flow": "1",
        }
        args: list[Any] = [worker_id, round(ttl * 1000)]
        for k, val in record.items():
            args += [k, val]
        yield Call(S.WORKER_BEAT, (self._workers_key(), self._worker_key(worker_id)), args)

    @operation
    def live_workers(self, queue: str | None = None) -> Op[list[WorkerInfo]]:
        """The workers whose heartbeat has not expired (at most MAX_WORKERS), newest
        first; with ``queue``, only those that handle it. A corrupt record is skipped."""
        if queue is not None:
            v.qname(queue, "queue")
        # ids and records in one call: the queue page's budget of round trips
        return _workers((yield self._workers_call()), queue)

    def _workers_call(self) -> Call:
        index, prefix = self._workers_key(), self._worker_key("")
        return Call(S.WORKERS, (index,), (MAX_WORKERS, prefix))


def _workers(flat: list[Any], queue: str | None) -> list[WorkerInfo]:
    """workers.lua's reply: the live workers (of ``queue``, if given)."""
    names = [_text(flat[i]) for i in range(0, len(flat), 2)]
    records = [flat[i] for i in range(1, len(flat), 2)]
    out = []
    for wid, record in zip(names, records, strict=True):
        info = _worker(wid, record)
        if info is not None and (queue is None or queue in info.queues):
            out.append(info)
    return out


def _worker(wid: str, flat: list[Any]) -> WorkerInfo | None:
    fields = {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}
    try:
        queues: dict[str, int] = {}
        for part in filter(None, fields.get("queues", "").split(",")):
            q, _, n = part.partition("=")
            queues[q] = int(n)
        return WorkerInfo(
            id=wid,
            host=fields["host"],
            pid=int(fields["pid"]),
            queues=queues,
            started=int(fields["started"]),
            beat=int(fields["beat"]),
            flow=fields.get("flow") == "1",
        )
    except (KeyError, ValueError):
        return None
