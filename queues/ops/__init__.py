"""Every RSMQ operation, written once for the sync and the asyncio client.

An operation is a generator: it validates its arguments, yields the Redis work it needs
(a `Call` of a Lua script, a `Batch` of read-only script calls in one pipeline, or a
plain `Command`) and returns the parsed result. The clients only differ in how they
carry that work to Redis: `RedisSMQ` runs it on a thread's own redis-py connection,
`AsyncRedisSMQ` awaits redis.asyncio.

`Operations` is the one API, assembled from one module per concern:

* `base.py` — the client's state and every Redis key name (made there and nowhere else);
* `queues.py` — create, list, delete, attributes;
* `stats.py` — queue counters (`queue_stats`);
* `dead_letters.py` — dead-letter policy, sources, redrive;
* `messages.py` — send, receive, pop, visibility, delete, requeue, purge, move;
* `read.py` — reading without changing: `browse` (the one read path), census ranges;
* `failures.py` — failure histories and their groups;
* `workers.py` — the live-worker registry (outside the RSMQ layout).
* `orphans.py` — what other ports leave behind: orphaned message fields, leftover hashes.
* `timings.py` — the worker's wait and processing records, and wait readings.
* `undo.py` — undo stashes: what a destructive action removed, kept and put back.
* `flow.py` — pause / throttle / resume a queue's consumers (a flag beside the RSMQ
  layout), what is coming due, rescheduling delayed messages.

`console_api.py` — the console API's audited calls, audit stream and token counters — is
not part of it: only the console's clients have them (`queues.console`).

Bounds live in `queues/limits.py`, reply parsing in `queues/parse.py`.
"""

from __future__ import annotations

# the bounds and a text callers outside queues/ read from here
from ..limits import (
    AUDIT_READ,
    CHUNK,
    DEFAULT_SAMPLE,
    FAILURES_SUFFIX,
    MAX_CENSUS_COUNT,
    MAX_MAXRC,
)
from ..parse import NOT_A_QUEUE
from .base import R
from .console_api import AUDITED_MODES, ApiRate
from .dead_letters import DeadLetters
from .failures import Failures
from .flow import FlowOps
from .messages import Messages
from .orphans import OrphanOps
from .read import Read
from .timings import Timings
from .undo import Undo
from .workers import Workers

__all__ = [
    "AUDITED_MODES",
    "AUDIT_READ",
    "ApiRate",
    "CHUNK",
    "DEFAULT_SAMPLE",
    "FAILURES_SUFFIX",
    "MAX_CENSUS_COUNT",
    "MAX_MAXRC",
    "NOT_A_QUEUE",
    "Operations",
]


class Operations(
    DeadLetters[R],
    Messages[R],
    Failures[R],
    Read[R],
    Timings[R],
    FlowOps[R],
    Workers[R],
    OrphanOps[R],
    Undo[R],
):
    """The RSMQ API. A subclass is a driver (queues/driver.py): it supplies ``_drive``,
    and ``_open`` to set up the redis-py client ``R`` it runs on."""
