"""The census's reads: every message of a queue, a zset rank range at a time, without
changing anything (no rc, fr or totalrecv bump).

The Spark data source (pipeline/source.py) plans its partitions with ``queue_sizes`` and
reads each with ``read_range``; both run on the sync client (``read_range`` is the
``census_range`` operation: a round trip per ``CENSUS_BYTES`` read). Rows come
back as columns, ready for an Arrow record batch.
"""

from __future__ import annotations

from collections.abc import Iterable

from .client import RedisSMQ
from .models import Slice
from .ops import MAX_CENSUS_COUNT

#: messages one ``read_range`` call returns at most
MAX_COUNT = MAX_CENSUS_COUNT


def queue_sizes(rsmq: RedisSMQ, qnames: Iterable[str] | None = None) -> dict[str, int]:
    """Messages per queue (default: every queue of the namespace), in one pipelined round
    trip (two for every queue). Queues that don't exist are left out, and so are those
    nothing could be read of (a name that is not a queue's, keys of the wrong type): a
    queue whose counters alone are bad still has messages to read."""
    stats = rsmq.queue_stats(qnames, sample=1)
    return {s.qname: s.msgs for s in stats if s.msgs or not s.unreadable}


def read_range(rsmq: RedisSMQ, qname: str, first: int, count: int, body: bool = False) -> Slice:
    """The messages at ranks ``first`` .. ``first + count - 1`` of a queue (fewer at its
    end), in queue order. Raises QueueNotFound when the queue is gone."""
    return rsmq.census_range(qname, first, count, body)


__all__ = ["MAX_COUNT", "Slice", "queue_sizes", "read_range"]
