"""Wait and processing times: what the worker records as it deletes, and the bounded
reading a snapshot makes of every client's messages (their ids and ``fr``)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Batch, Call, Op, operation
from ..errors import InvalidArgument
from ..ids import sent_ms
from ..limits import TIMINGS_MAX, TIMINGS_TTL, WAIT_SAMPLE
from ..models import TimingRecord, WaitReading
from ..parse import _text
from .base import R
from .queues import Queues


class Timings(Queues[R]):
    @operation
    def record_timings(
        self, qname: str, entries: Sequence[tuple[float, int, float, float]]
    ) -> Op[int]:
        """Record deleted messages' times: (ms since the delete, fr, wait ms,
        processing ms) each; the newest TIMINGS_MAX are kept. Returns how many."""
        key = self._timings_key(qname)
        args: list[Any] = [TIMINGS_MAX, TIMINGS_TTL]
        for age, fr, wait, processing in entries:
            args += [f"{max(age, 0):.0f}", int(fr), f"{wait:.3f}", f"{processing:.3f}"]
        recorded: int = yield Call(S.TIMINGS_RECORD, [key], args, qname)
        return recorded

    @operation
    def wait_readings(
        self, since: Mapping[str, int], sample: int = WAIT_SAMPLE
    ) -> Op[list[WaitReading]]:
        """For each queue, from its ``since`` (epoch ms): the waits of the messages
        first received since then that are still in the queue, and the worker's timing
        records; one script call per queue (each looks at ``sample`` messages at most),
        all in one pipelined round trip. Names that are not RSMQ names are left out."""
        v.integer("sample", sample, 1, 10_000)
        names: list[str] = []
        calls: list[Call] = []
        for qname, at in since.items():
            try:
                z, h = self._queue_keys(qname)
            except InvalidArgument:
                continue
            names.append(qname)
            calls.append(
                Call(
                    S.WAIT_SCAN,
                    [z, h, self._timings_key(qname)],
                    [int(at), sample, random.random(), TIMINGS_MAX],
                    qname,
                )
            )
        if not calls:
            return []
        replies = yield Batch(calls)
        return [_reading(q, since[q], r) for q, r in zip(names, replies, strict=True)]


def _reading(qname: str, since: int, reply: list[Any]) -> WaitReading:
    now, scored, looked, found, entries = reply
    waits = []
    for i in range(0, len(found) - 1, 2):
        try:
            waits.append(int(_text(found[i + 1])) - sent_ms(_text(found[i])))
        except ValueError:
            continue  # an id that is not an RSMQ id (another client's): no time in it
    records = []
    for raw in entries:
        try:
            recorded, fr, wait, processing = _text(raw).split()
            records.append(TimingRecord(int(recorded), int(fr), float(wait), float(processing)))
        except ValueError:
            continue  # not one of the worker's records
    return WaitReading(qname, int(now), since, waits, int(scored), int(looked), records)
