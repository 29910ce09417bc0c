"""AsyncRedisSMQ: the same RSMQ operations as RedisSMQ, awaited on redis.asyncio.

    rsmq = AsyncRedisSMQ(url="redis://localhost:6379/0")
    await rsmq.send_message("jobs", "hello")
    msg = await rsmq.receive_message("jobs")

Every method of RedisSMQ is here with the same arguments and results (queues/ops/
holds them once); each returns an awaitable.

Concurrent callers share a few connections, pipelined: the round trips that coroutines
ask for in one turn of the event loop are written to one connection in one write, and
its replies are read back in order by a task of that connection and handed to each
caller. Each operation keeps its own round trips, errors and NOSCRIPT handling
(queues/driver.py); it only shares the write. So one process with many coroutines keeps
Redis busy, where a connection per call would wait a round trip per operation.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

import redis.asyncio as aioredis
import redis.connection
from redis.exceptions import ConnectionError, ResponseError

from . import topology
from .driver import Cmd, Endpoint, Op, Outcome, T, rounds
from .ops import Operations

MAX_CONNECTIONS = 50

#: (packed commands, how many replies, the caller's future)
Entry = tuple[list[bytes], int, "asyncio.Future[Outcome]"]


class Lane:
    """One connection: a writer task writes what callers queued, in their order; a reader
    task reads the replies back in that order and resolves each caller's future.

    The reader, not the caller, reads: a caller cancelled while waiting leaves its
    replies to be read and dropped, so the next caller never gets them. Any error of the
    connection (Redis gone, a timeout) ends the lane and answers every caller still
    waiting on it with that error.
    """

    def __init__(self, conn: Any, lanes: list[Lane]) -> None:
        self.conn = conn  # redis-py's async Connection is untyped
        self.lanes = lanes
        self.outbox: list[Entry] = []
        self.pending: deque[tuple[int, asyncio.Future[Outcome]]] = deque()
        self.to_write = asyncio.Event()
        self.to_read = asyncio.Event()
        self.dead = False
        self.tasks = (asyncio.create_task(self._write()), asyncio.create_task(self._read()))

    @property
    def load(self) -> int:
        return len(self.outbox) + len(self.pending)

    def put(self, entries: list[Entry]) -> None:
        self.outbox += entries
        self.to_write.set()

    async def _write(self) -> None:
        try:
            await self.conn.connect()
            while True:
                await self.to_write.wait()
                self.to_write.clear()
                # Callers cancelled before their turn are not sent at all.
                entries = [e for e in self.outbox if not e[2].done()]
                self.outbox = []
                if not entries:
                    continue
                self.pending.extend((n, fut) for _, n, fut in entries)
                self.to_read.set()
                await self.conn.send_packed_command(
                    [chunk for packed, _, _ in entries for chunk in packed], check_health=False
                )
        except Exception as e:
            self.end(e)

    async def _read(self) -> None:
        read = self.conn.read_response
        try:
            while True:
                if not self.pending:
                    self.to_read.clear()
                    await self.to_read.wait()
                    continue
                n, fut = self.pending[0]
                replies: list[Any] = []
                for _ in range(n):
                    try:
                        replies.append(await read())
                    except ResponseError as e:
                        replies.append(e)
                self.pending.popleft()
                if not fut.done():
                    fut.set_result(replies)
        except Exception as e:
            self.end(e)

    def end(self, error: Exception) -> None:
        """Answer every waiting caller with ``error`` and drop the connection."""
        if self.dead:
            return
        self.dead = True
        if self in self.lanes:
            self.lanes.remove(self)
        for _, fut in self.pending:
            if not fut.done():
                fut.set_result(error)
        for _, _, fut in self.outbox:
            if not fut.done():
                fut.set_result(error)
        self.pending.clear()
        self.outbox = []
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()

    async def close(self) -> None:
        self.end(ConnectionError("the client was closed"))
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.conn.disconnect()


class AsyncRedisSMQ(Operations[aioredis.Redis]):
    #: connections the pipelined operations use at most; a new one is opened only when
    #: every open one has round trips in flight
    LANES = 4

    def _open(self, client: aioredis.Redis | None, endpoint: Endpoint) -> aioredis.Redis:
        target = endpoint.target()
        self._wait = endpoint.wait(target)
        if client is None:
            # A blocking pool: more concurrent users of ``.redis`` than connections wait
            # for one to be free instead of failing (the default pool raises past
            # max_connections). The operations themselves use lanes of their own.
            options = {"max_connections": MAX_CONNECTIONS, "timeout": None}
            pool: aioredis.ConnectionPool
            if target is None or target.kind == "redis":
                pool = endpoint.make(aioredis.BlockingConnectionPool, **options)
            else:
                key = topology.slot_key(target, self.ns)
                pool = topology.async_pool(
                    target, key, socket_timeout=endpoint.socket_timeout, **options
                )
            client = aioredis.Redis(connection_pool=pool)
        # Made like the pool's own connections, outside it (as the sync client's are).
        make: Callable[..., Any] = client.connection_pool.connection_class
        kwargs = client.connection_pool.connection_kwargs
        self._new_connection: Callable[[], Any] = lambda: make(**kwargs)
        # Commands are encoded as the sync client encodes them (hiredis's packer when
        # installed): redis.asyncio's pure-Python packer cost a third of a call's time.
        packer: Callable[..., Any] = redis.connection.Connection
        encoding = {k: v for k, v in kwargs.items() if k in ("encoding", "encoding_errors")}
        self._pack: Callable[[list[Cmd]], list[bytes]] = packer(**encoding).pack_commands
        self._lanes: list[Lane] = []
        self._queued: list[Entry] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        return client

    async def close(self) -> None:
        lanes, self._lanes = self._lanes, []
        if self._loop is asyncio.get_running_loop():
            await asyncio.gather(*(lane.close() for lane in lanes))
        await self.redis.aclose()
        await self.redis.connection_pool.disconnect()
        await topology.aclose(self.redis.connection_pool)

    async def __aenter__(self) -> AsyncRedisSMQ:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _drive(self, op: Op[T]) -> T:
        """Carry out an operation, one round trip at a time."""
        trips = rounds(op, self._wait)
        trip = next(trips)
        while isinstance(trip, list):
            trip = trips.send(await self._roundtrip(trip))
        return trip.result

    async def _roundtrip(self, commands: list[Cmd]) -> Outcome:
        """Commands in one round trip, written with those of the other callers of this
        turn of the event loop; error replies are returned, and so is an exception that
        ends the round trip (it goes back into the operation).

        Like the sync client, commands that meet a closed connection (Redis restarted,
        an idle timeout) are sent once more on a new one; a timeout is never retried.
        """
        try:
            # Encoded here, so a command that can't be (not valid Unicode) fails alone.
            packed = self._pack(commands)
        except Exception as e:
            return e
        outcome = await self._submit(packed, len(commands))
        if isinstance(outcome, ConnectionError):
            outcome = await self._submit(packed, len(commands))
        return outcome

    def _submit(self, packed: list[bytes], n: int) -> asyncio.Future[Outcome]:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # lanes belong to the loop that made them
            self._loop, self._lanes, self._queued = loop, [], []
        fut: asyncio.Future[Outcome] = loop.create_future()
        if not self._queued:
            loop.call_soon(self._flush)
        self._queued.append((packed, n, fut))
        return fut

    def _flush(self) -> None:
        """This turn's round trips, to an idle lane (a new one while there are fewer than
        LANES), else to the least busy."""
        entries, self._queued = self._queued, []
        lanes = self._lanes
        lane = min(lanes, key=lambda lane: lane.load, default=None)
        if lane is None or (lane.load and len(lanes) < self.LANES):
            lane = Lane(self._new_connection(), lanes)
            lanes.append(lane)
        lane.put(entries)
