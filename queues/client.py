"""RedisSMQ: the RSMQ client, wire-compatible with the original Node rsmq 0.12.4.

Every public operation (see queues/ops/, shared with the asyncio client) is one network
round trip: one EVALSHA of a script in ``scripts/``; ``queue_stats`` of every queue is
one pipelined round trip (queues/ops/stats.py).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any, Protocol, Self

import redis
from redis.exceptions import ConnectionError, ResponseError

from . import topology
from .driver import ENCODING, Cmd, Endpoint, Op, Outcome, T, packer, resp2, rounds
from .errors import RsmqError
from .ops import Operations


class Line(Protocol):
    """What the client uses of a redis-py connection (typed here: redis-py's isn't)."""

    def pack_command(self, *args: Any) -> list[bytes]: ...
    def pack_commands(self, commands: Sequence[Cmd]) -> list[bytes]: ...
    def send_packed_command(self, command: list[bytes], check_health: bool = True) -> None: ...
    def read_response(self) -> Any: ...
    def disconnect(self) -> None: ...


class RedisSMQ(Operations[redis.Redis]):
    """The RSMQ client: ``RedisSMQ(url=..., ns="rsmq")`` or ``RedisSMQ(client=redis.Redis())``."""

    def _open(self, client: redis.Redis | None, endpoint: Endpoint) -> redis.Redis:
        self._line = threading.local()
        # Weak: a thread's connection is closed when the thread ends (redis-py's
        # Connection.__del__ disconnects), so a thread-per-request server can't pile
        # them up; close() reaches the ones still alive.
        self._lines: weakref.WeakSet[Line] = weakref.WeakSet()
        self._lines_lock = threading.Lock()
        target = endpoint.target()
        self._wait = endpoint.wait(target)
        if client is None:
            if target is None or target.kind == "redis":
                client = endpoint.make(redis.Redis)
            else:
                key = topology.slot_key(target, self.ns)
                client = topology.sync_client(target, key, socket_timeout=endpoint.socket_timeout)
        kwargs = client.connection_pool.connection_kwargs
        resp2(kwargs)  # (refused here, at construction)
        self._pack = packer({k: v for k, v in kwargs.items() if k in ENCODING})
        return client

    def close(self) -> None:
        with self._lines_lock:
            for conn in list(self._lines):
                conn.disconnect()
            self._lines.clear()
        self.redis.close()
        topology.close(self.redis.connection_pool)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drive(self, op: Op[T]) -> T:
        """Carry out an operation, one round trip at a time."""
        trips = rounds(op, self._wait)
        trip = next(trips)
        while isinstance(trip, list):
            trip = trips.send(self._roundtrip(trip))
        return trip.result

    def _connection(self) -> Line:
        """This thread's own redis-py connection (a new one after a fork).

        The pool's checkout (a socket poll) and the retry wrapper of
        ``Redis.execute_command`` cost more than the Lua script itself, so every
        command of this client goes over one connection per thread instead. It is made
        like the pool's own, in RESP2 (`driver.resp2`), but outside it: the pool counts
        each connection it makes against ``max_connections`` until it is given back, and
        a thread's never is.
        """
        line = self._line
        conn: Line | None = getattr(line, "conn", None)
        if conn is None or line.pid != os.getpid():
            pool = self.redis.connection_pool
            conn = line.conn = pool.connection_class(**resp2(pool.connection_kwargs))
            line.pid = os.getpid()
            with self._lines_lock:
                self._lines.add(conn)
        return conn

    def _roundtrip(self, commands: list[Cmd]) -> Outcome:
        """Send commands in one write, read their replies; error replies are returned,
        and so is an exception that ends the round trip (it goes back into the operation).

        Like redis-py's own default, commands that meet a closed connection (Redis
        restarted, an idle timeout) are sent once more on a new one; a timeout is never
        retried, and drops the connection so a late reply can't answer the next command.
        """
        try:
            conn = self._connection()
            packed = self._pack(commands)
            for attempt in (1, 2):
                try:
                    conn.send_packed_command(packed)
                    replies = []
                    for _ in commands:
                        try:
                            replies.append(conn.read_response())
                        except ResponseError as e:
                            replies.append(e)
                    return replies
                except ConnectionError:
                    conn.disconnect()
                    if attempt == 2:
                        raise
                except redis.TimeoutError:
                    conn.disconnect()
                    raise
        except Exception as e:
            return e
        raise AssertionError("unreachable")


__all__ = ["RedisSMQ", "RsmqError"]
