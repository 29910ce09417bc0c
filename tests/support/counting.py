"""A redis.asyncio connection that counts its writes to the socket."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis


class CountingConnection(aioredis.Connection):
    """Counts every write to the socket (a command or a pipeline each), whoever writes:
    redis-py itself or the async client's lanes (queues/aio.py)."""

    writes = 0

    async def _connect(self) -> None:
        await super()._connect()
        writer = self._writer
        assert writer is not None
        real = writer.writelines

        def counted(data: Any) -> None:
            CountingConnection.writes += 1
            real(data)

        writer.writelines = counted  # type: ignore[method-assign]
