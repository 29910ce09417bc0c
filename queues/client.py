"""RedisSMQ: the RSMQ client, wire-compatible with the original Node rsmq 0.12.4.

Every public operation (see queues/ops.py, shared with the asyncio client) is one network
round trip: one EVALSHA of a script in ``scripts/``; ``queue_stats`` of every queue is
one SMEMBERS, then one pipeline.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import redis
from redis.exceptions import ConnectionError, NoScriptError, ResponseError

from .errors import RsmqError
from .ops import Batch, Call, Op, Operations, T, batch_result, error_for


class RedisSMQ(Operations):
    """The RSMQ client: ``RedisSMQ(url=..., ns="rsmq")`` or ``RedisSMQ(client=redis.Redis())``."""

    def __init__(
        self,
        url: str | None = None,
        ns: str = "rsmq",
        realtime: bool = False,
        client: redis.Redis | None = None,
        host: str = "127.0.0.1",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        socket_timeout: float | None = None,
    ) -> None:
        self._setup(ns, realtime)
        if client is not None:
            self.redis = client
        elif url:
            self.redis = redis.Redis.from_url(url, socket_timeout=socket_timeout)
        else:
            self.redis = redis.Redis(
                host=host, port=port, db=db, password=password, socket_timeout=socket_timeout
            )
        self._line = threading.local()
        # Weak: a thread's connection is closed when the thread ends (redis-py's
        # Connection.__del__ disconnects), so a thread-per-request server can't pile
        # them up; close() reaches the ones still alive.
        self._lines: weakref.WeakSet[redis.connection.AbstractConnection] = weakref.WeakSet()
        self._lines_lock = threading.Lock()

    def close(self) -> None:
        with self._lines_lock:
            for conn in list(self._lines):
                conn.disconnect()
            self._lines.clear()
        self.redis.close()

    def __enter__(self) -> RedisSMQ:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drive(self, op: Op[T]) -> T:
        """Carry out an operation's steps, one round trip each; errors go back into it."""
        try:
            step = next(op)
            while True:
                try:
                    if type(step) is Call:
                        reply = self._eval(step)
                    elif type(step) is Batch:
                        reply = self._batch(step)
                    else:
                        reply = self._command(*step.args)
                except Exception as e:
                    step = op.throw(e)
                else:
                    step = op.send(reply)
        except StopIteration as stop:
            return stop.value

    # -- script calls --------------------------------------------------------------

    def _connection(self) -> redis.connection.AbstractConnection:
        """This thread's own redis-py connection (a new one after a fork).

        The pool's checkout (a socket poll) and the retry wrapper of
        ``Redis.execute_command`` cost more than the Lua script itself, so every
        command of this client goes over one connection per thread instead. It is made
        like the pool's own but outside it: the pool counts each connection it makes
        against ``max_connections`` until it is given back, and a thread's never is.
        """
        line = self._line
        conn = getattr(line, "conn", None)
        if conn is None or line.pid != os.getpid():
            pool = self.redis.connection_pool
            conn = line.conn = pool.connection_class(**pool.connection_kwargs)
            line.pid = os.getpid()
            with self._lines_lock:
                self._lines.add(conn)
        return conn

    def _roundtrip(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Send commands in one write, read their replies; error replies are returned.

        Like redis-py's own default, commands that meet a closed connection (Redis
        restarted, an idle timeout) are sent once more on a new one; a timeout is never
        retried, and drops the connection so a late reply can't answer the next command.
        """
        conn = self._connection()
        if len(commands) == 1:
            packed = conn.pack_command(*commands[0])
        else:
            packed = conn.pack_commands(commands)
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
        raise AssertionError("unreachable")

    def _command(self, *args: Any) -> Any:
        reply = self._roundtrip((args,))[0]
        if isinstance(reply, ResponseError):
            raise reply
        return reply

    def _eval(self, call: Call) -> Any:
        script = call.script
        command = ("EVALSHA", script.sha, len(call.keys), *call.keys, *call.args)
        reply = self._roundtrip((command,))[0]
        if isinstance(reply, NoScriptError):
            # After a Redis restart or SCRIPT FLUSH: load it and run it again. The
            # script never ran, so running it now can't apply anything twice.
            self._command("SCRIPT", "LOAD", script.source)
            reply = self._roundtrip((command,))[0]
        if isinstance(reply, ResponseError):
            raise error_for(reply, call.names)
        return reply

    def _batch(self, batch: Batch) -> Any:
        """Read-only commands in one pipelined round trip (safe to rerun)."""
        commands = [("EVALSHA", c.script.sha, len(c.keys), *c.keys, *c.args) for c in batch.calls]
        if batch.command:
            commands.insert(0, batch.command)
        replies = self._roundtrip(commands)
        if any(isinstance(r, NoScriptError) for r in replies):
            for script in {c.script for c in batch.calls}:
                self._command("SCRIPT", "LOAD", script.source)
            replies = self._roundtrip(commands)
        return batch_result(batch, replies)


__all__ = ["RedisSMQ", "RsmqError"]
