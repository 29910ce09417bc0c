"""AsyncRedisSMQ: the same RSMQ operations as RedisSMQ, awaited on redis.asyncio.

    rsmq = AsyncRedisSMQ(url="redis://localhost:6379/0")
    await rsmq.send_message("jobs", "hello")
    msg = await rsmq.receive_message("jobs")

Every method of RedisSMQ is here with the same arguments and results (queues/ops.py
holds them once); each returns an awaitable.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import NoScriptError, ResponseError

from .ops import Batch, Call, Op, Operations, T, batch_result, error_for

MAX_CONNECTIONS = 50


class AsyncRedisSMQ(Operations):
    def __init__(
        self,
        url: str | None = None,
        ns: str = "rsmq",
        realtime: bool = False,
        client: aioredis.Redis | None = None,
        host: str = "127.0.0.1",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        socket_timeout: float | None = None,
    ) -> None:
        self._setup(ns, realtime)
        if client is not None:
            self.redis = client
            return
        # A blocking pool: more concurrent operations than connections wait for one to be
        # free instead of failing (the default pool raises past max_connections).
        if url:
            pool = aioredis.BlockingConnectionPool.from_url(
                url, max_connections=MAX_CONNECTIONS, timeout=None, socket_timeout=socket_timeout
            )
        else:
            pool = aioredis.BlockingConnectionPool(
                host=host, port=port, db=db, password=password, socket_timeout=socket_timeout,
                max_connections=MAX_CONNECTIONS, timeout=None,
            )  # fmt: skip
        self.redis = aioredis.Redis(connection_pool=pool)

    async def close(self) -> None:
        await self.redis.aclose()
        await self.redis.connection_pool.disconnect()

    async def __aenter__(self) -> AsyncRedisSMQ:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _drive(self, op: Op[T]) -> T:
        try:
            step = next(op)
            while True:
                try:
                    if type(step) is Call:
                        reply = await self._eval(step)
                    elif type(step) is Batch:
                        reply = await self._batch(step)
                    else:
                        reply = await self.redis.execute_command(*step.args)
                except Exception as e:
                    step = op.throw(e)
                else:
                    step = op.send(reply)
        except StopIteration as stop:
            return stop.value

    async def _eval(self, call: Call) -> Any:
        script = call.script
        command = ("EVALSHA", script.sha, len(call.keys), *call.keys, *call.args)
        try:
            try:
                return await self.redis.execute_command(*command)
            except NoScriptError:
                # After a Redis restart or SCRIPT FLUSH: the script never ran; load, rerun.
                await self.redis.execute_command("SCRIPT", "LOAD", script.source)
                return await self.redis.execute_command(*command)
        except ResponseError as e:
            raise error_for(e, call.names) from None

    async def _batch(self, batch: Batch) -> Any:
        async def run() -> list[Any]:
            pipe = self.redis.pipeline(transaction=False)
            if batch.command:
                pipe.execute_command(*batch.command)
            for c in batch.calls:
                pipe.execute_command("EVALSHA", c.script.sha, len(c.keys), *c.keys, *c.args)
            return await pipe.execute(raise_on_error=False)

        replies = await run()
        if any(isinstance(r, NoScriptError) for r in replies):
            for script in {c.script for c in batch.calls}:
                await self.redis.execute_command("SCRIPT", "LOAD", script.source)
            replies = await run()
        return batch_result(batch, replies)
