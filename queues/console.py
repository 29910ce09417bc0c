"""The console's own clients: RedisSMQ and AsyncRedisSMQ with the operations only the
console's HTTP API runs (queues/ops/console_api.py): a data-plane call whose script
also writes its audit record and counts the API token's call (``audited``), the audit
stream's reading (``audit_records``, ``audit_ack``, ``audit_pending``), the tokens'
counters and generation (``api_rate``, ``api_generation``, ``api_generation_bump``).

They are the console's (dashboard/places/connections.py makes them), not the library's: the
public clients, ``queues.RedisSMQ`` and ``queues.AsyncRedisSMQ``, don't have these
operations, and this module is not exported from ``queues``.
"""

from __future__ import annotations

import redis
import redis.asyncio as aioredis

from .aio import AsyncRedisSMQ
from .client import RedisSMQ
from .ops.console_api import ConsoleApi


class ConsoleRSMQ(RedisSMQ, ConsoleApi[redis.Redis]):
    """The console's RedisSMQ."""


class AsyncConsoleRSMQ(AsyncRedisSMQ, ConsoleApi[aioredis.Redis]):
    """The console's AsyncRedisSMQ."""
