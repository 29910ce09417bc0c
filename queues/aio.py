"""AsyncRedisSMQ: the same RSMQ operations as RedisSMQ, awaited on redis.asyncio.

    rsmq = AsyncRedisSMQ(url="redis://localhost:6379/0")
    await rsmq.send_message("jobs", "hello")
    msg = await rsmq.receive_message("jobs")

Every method of RedisSMQ is here with the same arguments and results (queues/ops.py
holds them once); each returns an awaitable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from .driver import Cmd, Endpoint, Op, Outcome, T, rounds
from .ops import Operations

MAX_CONNECTIONS = 50


class AsyncRedisSMQ(Operations[aioredis.Redis]):
    def _open(self, client: aioredis.Redis | None, endpoint: Endpoint) -> aioredis.Redis:
        if client is None:
            # A blocking pool: more concurrent operations than connections wait for one
            # to be free instead of failing (the default pool raises past max_connections).
            pool = endpoint.make(
                aioredis.BlockingConnectionPool, max_connections=MAX_CONNECTIONS, timeout=None
            )
            client = aioredis.Redis(connection_pool=pool)
        # redis-py leaves execute_command untyped: this is what it is.
        self._execute: Callable[..., Awaitable[Any]] = client.execute_command
        return client

    async def close(self) -> None:
        await self.redis.aclose()
        await self.redis.connection_pool.disconnect()

    async def __aenter__(self) -> AsyncRedisSMQ:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _drive(self, op: Op[T]) -> T:
        """Carry out an operation, one round trip at a time."""
        trips = rounds(op)
        trip = next(trips)
        while isinstance(trip, list):
            trip = trips.send(await self._roundtrip(trip))
        return trip.result

    async def _roundtrip(self, commands: list[Cmd]) -> Outcome:
        """Commands in one round trip (a pipeline if several); error replies are returned,
        and so is an exception that ends the round trip (it goes back into the operation)."""
        try:
            if len(commands) == 1:
                try:
                    return [await self._execute(*commands[0])]
                except ResponseError as e:
                    return [e]
            pipe = self.redis.pipeline(transaction=False)
            for command in commands:
                pipe.execute_command(*command)
            return await pipe.execute(raise_on_error=False)
        except Exception as e:
            return e
