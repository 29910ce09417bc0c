"""The census's reads: every message of a queue, a zset rank range at a time, without
changing anything (no rc, fr or totalrecv bump).

The Spark data source (pipeline/source.py) plans its partitions with ``queue_sizes`` and
reads each with ``read_range``; both run on the sync client, one round trip per call.
Rows come back as columns, ready for an Arrow record batch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import scripts as S
from . import validation as v
from .client import RedisSMQ
from .driver import Call, Op
from .ids import sent_ms
from .ops import _decode, _str

#: messages one ``read_range`` call returns at most: a call holds Redis ~1 ms per 1,000
MAX_COUNT = 10_000


@dataclass(frozen=True, slots=True)
class Slice:
    """Messages of consecutive ranks of one queue, column by column."""

    read_at: int  # the Redis server's TIME, epoch ms
    ids: list[str]
    sent: list[int]  # epoch ms, from the id
    visible_at: list[int]  # epoch ms: the zset score
    rc: list[int]
    fr: list[int | None]  # epoch ms of the first receive; None: never received
    size: list[int]  # body bytes
    body: list[str] | None  # None unless asked for

    def __len__(self) -> int:
        return len(self.ids)


def queue_sizes(rsmq: RedisSMQ, qnames: Iterable[str] | None = None) -> dict[str, int]:
    """Messages per queue (default: every queue of the namespace), in one pipelined round
    trip (two for every queue). Queues that don't exist are left out."""
    return {s.qname: s.msgs for s in rsmq.queue_stats(qnames, sample=1)}


def read_range(rsmq: RedisSMQ, qname: str, first: int, count: int, body: bool = False) -> Slice:
    """The messages at ranks ``first`` .. ``first + count - 1`` of a queue (fewer at its
    end), in queue order. Raises QueueNotFound when the queue is gone."""
    return rsmq._drive(_read_range(rsmq, qname, first, count, body))


def _read_range(rsmq: RedisSMQ, qname: str, first: int, count: int, body: bool) -> Op[Slice]:
    keys = rsmq._queue_keys(qname)
    v.integer("first", first, 0, 2**53)
    v.integer("count", count, 0, MAX_COUNT)
    r = yield Call(S.CENSUS, keys, (first, count, 1 if body else 0), qname)
    stride = 6 if body else 5
    ids = [_str(i) for i in r[1::stride]]
    return Slice(
        read_at=r[0],
        ids=ids,
        sent=[int(sent_ms(i)) for i in ids],
        visible_at=r[2::stride],
        rc=r[3::stride],
        fr=r[4::stride],
        size=r[5::stride],
        body=[_decode(b) for b in r[6::stride]] if body else None,
    )
