"""AsyncRedisSMQ: the same RSMQ operations as RedisSMQ, awaited on redis.asyncio.

    rsmq = AsyncRedisSMQ(url="redis://localhost:6379/0")
    await rsmq.send_message("jobs", "hello")
    msg = await rsmq.receive_message("jobs")

Every method of RedisSMQ is here with the same arguments and results (queues/ops/
holds them once); each returns an awaitable.

Concurrent callers share a few connections, pipelined: the round trips that coroutines
ask for in one turn of the event loop are written to one connection — the first at once
when that connection has nothing in flight (a lone caller waits for nothing), the rest
of the turn after it in one write — and its replies are read back in order by a task of
that connection and handed to each caller. Each operation keeps its own round trips,
errors and NOSCRIPT handling (queues/driver.py); it only shares the write. So one
process with many coroutines keeps Redis busy, where a connection per call would wait a
round trip per operation.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any, Self

import redis.asyncio as aioredis
from redis.exceptions import ConnectionError, RedisError, ResponseError, TimeoutError

from . import topology
from ._redis_internals import NOT_ENOUGH_DATA, check_lanes, take_transport
from .driver import ENCODING, Cmd, Endpoint, Op, Outcome, T, packer, resp2, rounds
from .errors import NotSent
from .ops import Operations

MAX_CONNECTIONS = 50

#: (packed commands, how many replies, the caller's future)
Entry = tuple[list[bytes], int, "asyncio.Future[Outcome]"]


class Lane:
    """One connection: callers' round trips written to it in their order, as the lane
    gets them (``write``: no task in between), and their replies read back in that
    order as they arrive (``received``, the connection's own protocol: no reader task)
    and handed to each caller's future.

    The lane, not the caller, reads: a caller cancelled while waiting leaves its replies
    to be read and dropped, so the next caller never gets them. Any error of the
    connection (Redis gone, a timeout) ends the lane and answers every caller still
    waiting on it with that error.

    Once redis-py has connected (and authenticated, chosen the database), the lane
    takes the connection's transport over — redis-py's stream reader and its per-read
    timeout (a task and a timeout context every time) cost more than the rest of a
    call — and reads with the same hiredis reader redis-py made for it (its error
    replies, its decoding): internals of redis-py, taken in queues/_redis_internals.py
    (``take_transport``), once per connection. The socket timeout (``timeout``) is the
    lane's: a round trip unanswered that long after it was written ends the lane (a
    timer, armed while round trips are in flight).
    """

    def __init__(self, conn: Any, lanes: list[Lane], timeout: float | None = None) -> None:
        self.conn = conn  # redis-py's async Connection is untyped (made with no timeout)
        self.lanes = lanes
        self.timeout = timeout
        self.writer: Any = None  # the connection's stream, once connected
        self.reader: Any = None  # its hiredis reader
        self.outbox: list[Entry] = []  # what came while it was connecting, or checking
        self.checking = False  # asking the sentinels where the master is
        #: (replies, the caller's future, when it was written: the loop's time)
        self.pending: deque[tuple[int, asyncio.Future[Outcome], float]] = deque()
        self.replies: list[Any] = []  # the first pending round trip's, so far
        self.dead = False
        self.watch: asyncio.TimerHandle | None = None
        self.checker: asyncio.Task[None] | None = None
        self.tasks = (asyncio.create_task(self._start()),)

    @property
    def load(self) -> int:
        return len(self.outbox) + len(self.pending)

    @property
    def idle(self) -> bool:
        """Connected, with nothing in flight: a round trip written now goes out alone."""
        return self.writer is not None and not self.pending and not self.dead and not self.checking

    def put(self, entries: list[Entry]) -> None:
        if self.writer is None or self.checking:
            self.outbox += entries
        else:
            self.write(entries)

    async def _check_master(self) -> None:
        """Ask the sentinels where the master is, holding writes meanwhile (as the
        connection's own send_packed_command does, every MASTER_CHECK s): moved, the
        lane ends and what it held is sent again on a new connection, to the master."""
        try:
            moved = not await self.conn.still_master()
        except Exception as e:
            self.end(e)
            return
        finally:
            self.checking = False
        if moved:
            self.end(ConnectionError("the master moved (a failover)"))
            return
        entries, self.outbox = self.outbox, []
        self.write(entries)

    async def _start(self) -> None:
        try:
            await self.conn.connect()
            writer, reader, left = take_transport(self.conn)
            transport = writer.transport
            transport.set_protocol(_Replies(self, transport.get_protocol()))
            self.writer, self.reader = writer, reader
            if left:  # (nothing, after the handshake's replies)
                self.received(left)
        except (RedisError, OSError) as e:  # Redis unreachable, refusing, too slow
            self.end(e)
            return
        except Exception as e:
            # Not Redis: a redis-py without what the lane takes over (MissingInternal),
            # or a bug. Each caller gets it as it is (not as a connection error, which
            # would be retried), and the loop's exception handler logs it once.
            self.end(e)
            await self.conn.disconnect()
            asyncio.get_running_loop().call_exception_handler(
                {"message": "the RSMQ client could not use its connection", "exception": e}
            )
            return
        entries, self.outbox = self.outbox, []
        self.write(entries)

    def write(self, entries: list[Entry]) -> None:
        """Write these round trips in one write, in order (a caller cancelled before it
        is not sent at all)."""
        entries = [e for e in entries if not e[2].done()]
        if not entries:
            return
        check_due = getattr(self.conn, "check_due", None)  # (a Sentinel's master)
        if check_due is not None and not self.dead and check_due():
            self.checking = True
            self.outbox += entries
            self.checker = asyncio.create_task(self._check_master())
            return
        if self.dead:  # (ended while connecting)
            for _, _, fut in entries:
                fut.set_result(NotSent("the connection to Redis was lost: nothing was sent"))
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.pending.extend((n, fut, now) for _, n, fut in entries)
        if self.timeout and self.watch is None:
            self.watch = loop.call_at(now + self.timeout, self._overdue)
        try:
            if self.writer.transport.is_closing():
                raise ConnectionError("Connection closed by server.")
            self.writer.writelines([chunk for packed, _, _ in entries for chunk in packed])
        except Exception as e:
            self.end(e)

    def received(self, data: bytes) -> None:
        """Bytes from Redis: each whole reply to the round trip it answers, in order (an
        error reply is the caller's, as a ResponseError value; a connection error —
        LOADING, a protocol error — ends the lane)."""
        reader, pending, replies = self.reader, self.pending, self.replies
        try:
            reader.feed(data)
            while pending:
                reply = reader.gets()
                if reply is NOT_ENOUGH_DATA:
                    return
                if isinstance(reply, ConnectionError):
                    raise reply
                if isinstance(reply, list) and reply and isinstance(reply[0], ConnectionError):
                    raise reply[0]
                if isinstance(reply, ResponseError):
                    lost = topology.wrong_node(self.conn, reply)
                    if lost is not None:
                        raise lost
                replies.append(reply)
                n, fut, _ = pending[0]
                if len(replies) == n:
                    pending.popleft()
                    done, self.replies = replies, []
                    replies = self.replies
                    if not fut.done():
                        fut.set_result(done)
        except Exception as e:
            self.end(e)

    def _overdue(self) -> None:
        """The timer: the oldest round trip in flight unanswered for ``timeout`` ends the
        lane (as a read timing out does in the sync client); else it is armed again."""
        self.watch = None
        if self.dead or not self.pending or self.timeout is None:
            return
        loop = asyncio.get_running_loop()
        due = self.pending[0][2] + self.timeout
        if loop.time() >= due:
            self.end(TimeoutError("Timeout reading from socket"))
        else:
            self.watch = loop.call_at(due, self._overdue)

    def end(self, error: Exception) -> None:
        """Answer every waiting caller with ``error`` and drop the connection."""
        if self.dead:
            return
        self.dead = True
        if self.watch is not None:
            self.watch.cancel()
        if self.writer is not None:
            self.writer.transport.abort()  # (nothing, if it is closed already)
        if self in self.lanes:
            self.lanes.remove(self)
        for _, fut, _ in self.pending:
            if not fut.done():
                fut.set_result(error)
        # Never written, so nothing of it ran: made again safely. (Not Redis — a missing
        # internal, a bug — stays itself.)
        connection = isinstance(error, (RedisError, OSError))
        unsent = NotSent(f"{error}: nothing was sent") if connection else error
        for _, _, fut in self.outbox:
            if not fut.done():
                fut.set_result(unsent)
        self.pending.clear()
        self.outbox = []
        current = asyncio.current_task()
        for task in (*self.tasks, self.checker):
            if task is not None and task is not current:
                task.cancel()

    async def close(self) -> None:
        self.end(ConnectionError("the client was closed"))
        await asyncio.gather(*self.tasks, *filter(None, [self.checker]), return_exceptions=True)
        await self.conn.disconnect()


class _Replies(asyncio.Protocol):
    """The protocol of a lane's connection once the lane has taken it over: what Redis
    sends goes to the lane; the connection lost ends it."""

    def __init__(self, lane: Lane, before: Any) -> None:
        self.lane, self.before = lane, before

    def data_received(self, data: bytes) -> None:
        self.lane.received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lane.end(ConnectionError(f"Connection to Redis lost: {exc}" if exc else
                                      "Connection closed by server."))  # fmt: skip
        # redis-py's stream protocol learns it too: its disconnect() waits for that
        self.before.connection_lost(exc)


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
        # The lanes' connections read with no timeout of their own: the lane keeps it.
        self._lane_timeout: float | None = kwargs.get("socket_timeout")
        connect = kwargs.get("socket_connect_timeout") or self._lane_timeout
        lane_kwargs = {**resp2(kwargs), "socket_timeout": None, "socket_connect_timeout": connect}
        self._new_connection: Callable[[], Any] = lambda: make(**lane_kwargs)
        check_lanes(self._new_connection)
        # Commands are encoded as the sync client encodes them (driver.packer):
        # redis.asyncio's pure-Python packer is a large share of a call's time
        # (bench/RESULTS.md, "Figures behind the code").
        self._pack = packer({k: v for k, v in kwargs.items() if k in ENCODING})
        self._lanes: list[Lane] = []
        self._queued: list[Entry] = []
        self._turn: Lane | None = None  # the lane this turn's first round trip went to
        self._loop: asyncio.AbstractEventLoop | None = None
        return client

    async def close(self) -> None:
        lanes, self._lanes = self._lanes, []
        if self._loop is asyncio.get_running_loop():
            await asyncio.gather(*(lane.close() for lane in lanes))
        await self.redis.aclose()
        await self.redis.connection_pool.disconnect()
        await topology.aclose(self.redis.connection_pool)

    async def __aenter__(self) -> Self:
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
            self._loop, self._lanes, self._queued, self._turn = loop, [], [], None
        fut: asyncio.Future[Outcome] = loop.create_future()
        if not self._queued:
            # The turn's first round trip, on a lane with nothing in flight, is written at
            # once (a lone caller waits for no turn to end); the rest of the turn follows
            # it on the same lane, in one write, when the turn ends (``_flush``).
            idle = next((lane for lane in self._lanes if lane.idle), None)
            if idle is not None and self._turn is None:
                self._turn = idle
                loop.call_soon(self._flush)
                idle.write([(packed, n, fut)])
                return fut
            if self._turn is None:
                loop.call_soon(self._flush)
        self._queued.append((packed, n, fut))
        return fut

    def _flush(self) -> None:
        """This turn's round trips: after its first, on that one's lane; else to an idle
        lane (a new one while there are fewer than LANES), else to the least busy."""
        entries, self._queued = self._queued, []
        turn, self._turn = self._turn, None
        if not entries:
            return
        lanes = self._lanes
        if turn is not None and not turn.dead:
            turn.put(entries)
            return
        lane = min(lanes, key=lambda lane: lane.load, default=None)
        if lane is None or (lane.load and len(lanes) < self.LANES):
            lane = Lane(self._new_connection(), lanes, self._lane_timeout)
            lanes.append(lane)
        lane.put(entries)
