"""RedisSMQ: the RSMQ client, wire-compatible with the original Node rsmq 0.12.4.

Every public operation is one network round trip: one EVALSHA of a script in
``scripts/`` (``queue_stats`` of every queue: one SMEMBERS, then one pipeline).
"""

from __future__ import annotations

import os
import random
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import redis
from redis.exceptions import ConnectionError, NoScriptError, ResponseError

from . import scripts as S
from . import validation as v
from .errors import (
    InvalidArgument,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    QueueExists,
    QueueNotFound,
    RsmqError,
)
from .ids import random_suffixes, sent_ms
from .models import Message, MessageInfo, Page, QueueAttributes, QueueStats, SearchResult

#: messages whose body is read by one purge / move step: small enough that one step
#: never holds Redis for long (a few ms), large enough that a million take ~1000 steps
CHUNK = 1000
#: queues per stats script call, so a 10,000-queue read is many short scripts, not one long one
STATS_CHUNK = 200
DEFAULT_SAMPLE = 1000
DEFAULT_SCAN_BUDGET = 10_000


def _str(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _decode(raw: bytes | str) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


class RedisSMQ:
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
        if client is not None:
            self.redis = client
        elif url:
            self.redis = redis.Redis.from_url(url, socket_timeout=socket_timeout)
        else:
            self.redis = redis.Redis(
                host=host, port=port, db=db, password=password, socket_timeout=socket_timeout
            )
        if not isinstance(ns, str) or not ns:
            raise InvalidArgument("ns", "ns must be a non-empty string")
        self.ns = ns
        self.realtime = realtime
        self._prefix = ns + ":"
        self._keys: dict[str, tuple[str, str]] = {}
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

    # -- keys: the only place Redis key names are made ------------------------------

    @property
    def queues_key(self) -> str:
        return self._prefix + "QUEUES"

    def _queue_keys(self, qname: str) -> tuple[str, str]:
        """(zset, hash) of a queue, validating the name once per client."""
        keys = self._keys.get(qname)
        if keys is None:
            v.qname(qname)
            if len(self._keys) > 10_000:
                self._keys.clear()
            z = self._prefix + qname
            keys = self._keys[qname] = (z, z + ":Q")
        return keys

    def _channel(self, qname: str) -> str:
        return f"{self._prefix}rt:{qname}" if self.realtime else ""

    def realtime_channel(self, qname: str) -> str:
        """The pub/sub channel a realtime send publishes the queue's size on."""
        v.qname(qname)
        return f"{self._prefix}rt:{qname}"

    # -- script calls --------------------------------------------------------------

    def _connection(self) -> redis.connection.AbstractConnection:
        """This thread's own redis-py connection (a new one after a fork).

        The pool's checkout (a socket poll) and the retry wrapper of
        ``Redis.execute_command`` cost more than the Lua script itself, so every
        command of this client goes over one connection per thread instead.
        """
        line = self._line
        conn = getattr(line, "conn", None)
        if conn is None or line.pid != os.getpid():
            conn = line.conn = self.redis.connection_pool.make_connection()
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

    def _eval(
        self,
        script: S.Script,
        keys: Sequence[str],
        args: Sequence[Any],
        qname: str | tuple[str, str] = "",
    ) -> Any:
        try:
            return self._command("EVALSHA", script.sha, len(keys), *keys, *args)
        except NoScriptError:
            # After a Redis restart or SCRIPT FLUSH: load it and run it again. The
            # script never ran, so running it now can't apply anything twice.
            self._command("SCRIPT", "LOAD", script.source)
            try:
                return self._command("EVALSHA", script.sha, len(keys), *keys, *args)
            except ResponseError as e:
                raise self._error(e, qname) from None
        except ResponseError as e:
            raise self._error(e, qname) from None

    @staticmethod
    def _error(e: ResponseError, qname: str | tuple[str, str]) -> Exception:
        text = str(e)
        if "queueNotFound" in text:
            if isinstance(qname, tuple):  # (src, dst) of a move
                qname = qname[1] if "queueNotFound dst" in text else qname[0]
            return QueueNotFound(qname)
        if "queueExists" in text:
            return QueueExists(qname)
        if "messageTooLong" in text:
            parts = text[text.index("messageTooLong") :].split()
            return MessageTooLong(int(parts[1]), int(parts[2]))
        return e

    # -- queues --------------------------------------------------------------------

    def create_queue(self, qname: str, vt: int = 30, delay: int = 0, maxsize: int = 65536) -> None:
        hkey = self._queue_keys(qname)[1]
        args = (qname, v.seconds("vt", vt), v.seconds("delay", delay), v.maxsize(maxsize))
        self._eval(S.CREATE_QUEUE, (hkey, self.queues_key), args, qname)

    def list_queues(self) -> list[str]:
        return sorted(_str(m) for m in self._command("SMEMBERS", self.queues_key))

    def delete_queue(self, qname: str) -> None:
        z, h = self._queue_keys(qname)
        self._eval(S.DELETE_QUEUE, (h, z, self.queues_key, z + ":purge"), (qname,), qname)

    def get_queue_attributes(self, qname: str) -> QueueAttributes:
        keys = self._queue_keys(qname)
        return self._attributes(self._eval(S.GET_QUEUE_ATTRIBUTES, keys, (), qname))

    def set_queue_attributes(
        self,
        qname: str,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
    ) -> QueueAttributes:
        keys = self._queue_keys(qname)
        args: list[Any] = []
        if vt is not None:
            args += ("vt", v.seconds("vt", vt))
        if delay is not None:
            args += ("delay", v.seconds("delay", delay))
        if maxsize is not None:
            args += ("maxsize", v.maxsize(maxsize))
        if not args:
            raise NoAttributeSupplied()
        return self._attributes(self._eval(S.SET_QUEUE_ATTRIBUTES, keys, args, qname))

    @staticmethod
    def _attributes(a: list[int]) -> QueueAttributes:
        return QueueAttributes(
            vt=a[0], delay=a[1], maxsize=a[2], totalrecv=a[3], totalsent=a[4],
            created=a[5], modified=a[6], msgs=a[7], hiddenmsgs=a[8],
        )  # fmt: skip

    # -- messages ------------------------------------------------------------------

    def send_message(self, qname: str, message: str | bytes, delay: int | None = None) -> str:
        keys = self._queue_keys(qname)
        body = message if type(message) is str else v.body(message)
        d = "" if delay is None else v.seconds("delay", delay)
        try:
            ids = self._eval(
                S.SEND, keys, (d, self._channel(qname), random_suffixes(), body), qname
            )
        except UnicodeEncodeError as e:
            # Nothing was sent: redis-py encodes the whole command before writing it.
            raise MessageNotString(
                f"Message must be a string of valid Unicode: {e.reason} at position {e.start}"
            ) from None
        return _str(ids[0])

    def send_messages(
        self, qname: str, messages: Iterable[str | bytes], delay: int | None = None
    ) -> list[str]:
        """Send many in one atomic round trip: one invalid message and nothing is written."""
        keys = self._queue_keys(qname)
        bodies = [v.body(m) for m in messages]
        if len(bodies) > v.MAX_SEND_BATCH:
            raise InvalidArgument(
                "messages", f"messages: at most {v.MAX_SEND_BATCH} per batch, not {len(bodies)}"
            )
        d = "" if delay is None else v.seconds("delay", delay)
        args = (d, self._channel(qname), random_suffixes(len(bodies)), *bodies)
        ids = self._eval(S.SEND, keys, args, qname)
        return [_str(i) for i in ids]

    def receive_message(self, qname: str, vt: int | None = None) -> Message | None:
        keys = self._queue_keys(qname)
        t = "" if vt is None else v.seconds("vt", vt)
        r = self._eval(S.RECEIVE, keys, (1, t), qname)
        return self._message(r, 0) if r else None

    def receive_messages(self, qname: str, n: int, vt: int | None = None) -> list[Message]:
        """Receive up to n visible messages, FIFO, in one atomic round trip."""
        keys = self._queue_keys(qname)
        v.integer("n", n, 1, v.MAX_BATCH)
        t = "" if vt is None else v.seconds("vt", vt)
        r = self._eval(S.RECEIVE, keys, (n, t), qname)
        return [self._message(r, i) for i in range(0, len(r), 4)]

    def pop_message(self, qname: str) -> Message | None:
        r = self._eval(S.POP, self._queue_keys(qname), (1,), qname)
        return self._message(r, 0) if r else None

    def pop_messages(self, qname: str, n: int) -> list[Message]:
        keys = self._queue_keys(qname)
        v.integer("n", n, 1, v.MAX_BATCH)
        r = self._eval(S.POP, keys, (n,), qname)
        return [self._message(r, i) for i in range(0, len(r), 4)]

    @staticmethod
    def _message(r: list[Any], i: int) -> Message:
        mid = _str(r[i])
        body = r[i + 1]
        return Message(
            id=mid,
            message=_decode(body) if body is not None else "",
            rc=r[i + 2],
            fr=int(r[i + 3] or 0),
            sent=sent_ms(mid),
        )

    def change_message_visibility(self, qname: str, id: str, vt: int) -> bool:
        keys = self._queue_keys(qname)
        args = (v.message_id(id), v.seconds("vt", vt))
        return self._eval(S.CHANGE_VISIBILITY, keys, args, qname) == 1

    def delete_message(self, qname: str, id: str) -> bool:
        keys = self._queue_keys(qname)
        return self._eval(S.DELETE, keys, (v.message_id(id),), qname) == 1

    def delete_messages(self, qname: str, ids: Iterable[str]) -> int:
        """Delete many in one atomic round trip; returns how many were in the queue."""
        keys = self._queue_keys(qname)
        checked = [v.message_id(i) for i in ids]
        return self._eval(S.DELETE, keys, checked, qname)

    # -- operations: none of them changes rc, fr, totalsent or totalrecv -------------

    def queue_stats(
        self, qnames: Iterable[str] | None = None, sample: int = DEFAULT_SAMPLE
    ) -> list[QueueStats]:
        """Counters of the given queues (default: all), in one pipelined round trip.

        Queues that do not exist (or vanished meanwhile) are left out.
        """
        names = self.list_queues() if qnames is None else [v.qname(q) for q in qnames]
        v.integer("sample", sample, 1, 100_000)
        if not names:
            return []
        chunks = [names[k : k + STATS_CHUNK] for k in range(0, len(names), STATS_CHUNK)]
        calls = []
        for chunk in chunks:
            keys = [key for q in chunk for key in self._queue_keys(q)]
            calls.append((S.STATS, keys, (sample, random.random())))
        results = self._pipeline(calls)
        stats: list[QueueStats] = []
        for chunk, r in zip(chunks, results, strict=True):
            now = r[0]
            for j, q in enumerate(chunk):
                row = r[1 + 14 * j : 15 + 14 * j]
                if row[0] != 1:
                    continue
                head = row[12]
                stats.append(
                    QueueStats(
                        qname=q, vt=row[1], delay=row[2], maxsize=row[3], totalsent=row[4],
                        totalrecv=row[5], created=row[6], modified=row[7], msgs=row[8],
                        visible=row[8] - row[9], hidden=row[9], inflight=row[10],
                        delayed=row[11], oldest_sent=sent_ms(_str(head)) if head else None,
                        now=now, exact=row[13] == 1,
                    )
                )  # fmt: skip
        return stats

    def _pipeline(self, calls: list[tuple[S.Script, Sequence[str], Sequence[Any]]]) -> list[Any]:
        """Run script calls in one pipelined round trip (read-only scripts: safe to rerun)."""
        commands = [
            ("EVALSHA", script.sha, len(keys), *keys, *args) for script, keys, args in calls
        ]
        replies = self._roundtrip(commands)
        if any(isinstance(r, NoScriptError) for r in replies):
            for script in {c[0] for c in calls}:
                self._command("SCRIPT", "LOAD", script.source)
            replies = self._roundtrip(commands)
        for reply in replies:
            if isinstance(reply, ResponseError):
                raise reply
        return replies

    def list_messages(
        self,
        qname: str,
        state: str = "all",
        offset: int = 0,
        limit: int = 50,
        preview: int = 0,
        scan_budget: int = DEFAULT_SCAN_BUDGET,
    ) -> Page:
        """A page of messages in a state, in queue order, costing O(log n + limit).

        ``preview`` > 0 cuts each body to that many bytes (``MessageInfo.size`` keeps the
        full size). ``inflight`` and ``delayed`` look at no more than ``scan_budget`` hidden
        messages; past that ``Page.exact`` is False and ``total`` is an estimate.
        """
        keys = self._queue_keys(qname)
        v.state(state)
        v.integer("offset", offset, 0, 2**53)
        v.integer("limit", limit, 1, v.MAX_PAGE)
        v.integer("preview", preview, 0, 2**31)
        v.integer("scan_budget", scan_budget, 1, 10**9)
        r = self._eval(S.LIST, keys, (state, offset, limit, preview, scan_budget), qname)
        now, total, exact = r[0], r[1], r[2] == 1
        items = [self._info(r[i : i + 6], now) for i in range(3, len(r), 6)]
        return Page(items=items, total=total, offset=offset, limit=limit, exact=exact, now=now)

    @staticmethod
    def _info(f: list[Any], now: int) -> MessageInfo:
        mid = _str(f[0])
        score = int(float(f[1]))
        rc = int(f[4])
        fr = int(f[5]) if f[5] else None
        if score <= now:
            state = "visible"
        else:
            state = "inflight" if rc >= 1 else "delayed"
        return MessageInfo(
            id=mid, message=_decode(f[3]), size=f[2], rc=rc, fr=fr,
            sent=sent_ms(mid), visible_at=score, state=state, read_at=now,
        )  # fmt: skip

    def search_messages(
        self,
        qname: str,
        contains: str = "",
        min_rc: int = 0,
        state: str = "all",
        cursor: int = 0,
        limit: int = 50,
        scan_limit: int = DEFAULT_SCAN_BUDGET,
        preview: int = 0,
    ) -> SearchResult:
        """Messages whose body contains a text and/or received at least ``min_rc`` times.

        Bounded: looks at no more than ``scan_limit`` messages of the state, in queue order,
        from ``cursor`` on; ``SearchResult.next_cursor`` continues where it stopped.
        Read-only, like every browse.
        """
        keys = self._queue_keys(qname)
        v.state(state)
        if not isinstance(contains, str):
            raise InvalidArgument("contains", "contains must be a string")
        v.integer("min_rc", min_rc, 0, 2**31)
        v.integer("cursor", cursor, 0, 2**53)
        v.integer("limit", limit, 1, v.MAX_PAGE)
        v.integer("scan_limit", scan_limit, 1, 10**7)
        v.integer("preview", preview, 0, 2**31)
        args = (state, cursor, scan_limit, limit, min_rc, contains, preview)
        r = self._eval(S.SEARCH, keys, args, qname)
        now, scanned, nxt = r[0], r[1], r[2]
        items = [self._info(r[i : i + 6], now) for i in range(3, len(r), 6)]
        return SearchResult(items, scanned, None if nxt < 0 else nxt, now)

    def get_message(self, qname: str, id: str) -> MessageInfo | None:
        """One message with its full body, or None if it is not in the queue."""
        keys = self._queue_keys(qname)
        r = self._eval(S.GET_MESSAGE, keys, (v.message_id(id),), qname)
        if r is None:
            return None
        return self._info([id, *r[1:]], r[0])

    def requeue(self, qname: str, ids: Iterable[str]) -> int:
        """Make messages visible now (rc and fr kept); returns how many were in the queue."""
        keys = self._queue_keys(qname)
        checked = [v.message_id(i) for i in ids]
        return self._eval(S.REQUEUE, keys, checked, qname)

    def requeue_state(self, qname: str, state: str) -> int:
        """Make every hidden / in-flight / delayed message visible now, in chunks."""
        if state not in ("hidden", "inflight", "delayed"):
            raise InvalidArgument("state", "requeue all: state must be hidden, inflight or delayed")
        return self._bulk(qname, "requeue", state)

    def delete_state(self, qname: str, state: str) -> int:
        """Delete every message in a state, in chunks; returns how many were deleted."""
        return self._bulk(qname, "delete", v.state(state))

    def _bulk(self, qname: str, action: str, state: str) -> int:
        keys = self._queue_keys(qname)
        total = skip = 0
        # Bounded even while producers keep adding: no more rounds than the queue had
        # messages when it started (each round handles or skips a whole chunk).
        rounds = self.get_queue_attributes(qname).msgs // CHUNK + 2
        for _ in range(rounds):
            done, skipped, seen = self._eval(S.BULK, keys, (action, state, skip, CHUNK), qname)
            total += done
            skip += skipped
            if seen < CHUNK:
                break
        return total

    def purge_queue(self, qname: str) -> int:
        """Delete every message, keeping the queue's attributes and totals.

        The messages leave the queue at once; their bodies are then deleted in chunks of
        ``CHUNK``, so Redis is never held for more than a few milliseconds at a time.
        Returns how many messages were purged.
        """
        z, h = self._queue_keys(qname)
        purge_key = z + ":purge"
        while True:
            n = self._eval(S.PURGE_DETACH, (z, h, purge_key), (), qname)
            if n >= 0:
                break
            self._drain(purge_key, h)  # an interrupted purge left messages to delete
        self._drain(purge_key, h)
        return n

    def _drain(self, purge_key: str, hkey: str) -> None:
        while self._eval(S.PURGE_DRAIN, (purge_key, hkey), (CHUNK,)) == CHUNK:
            pass

    def move_messages(self, src: str, dst: str, ids: Iterable[str] | None = None) -> int:
        """Move messages (default: all) to another queue, visible there at once.

        Each keeps its id, body, rc and fr; no queue's totals change. Moving all goes in
        chunks of ``CHUNK``; a message larger than ``dst``'s maxsize stays in ``src``.
        Returns how many were moved.
        """
        src_keys = self._queue_keys(src)
        dst_keys = self._queue_keys(dst)
        if src == dst:
            raise InvalidArgument("dst", "dst must be a different queue from src")
        keys = (*src_keys, *dst_keys)
        moved = 0
        if ids is not None:
            checked = [v.message_id(i) for i in ids]
            if not checked:
                return 0
            return self._eval(S.MOVE, keys, (0, CHUNK, *checked), (src, dst))[0]
        skipped = 0
        while True:
            m, s = self._eval(S.MOVE, keys, (skipped, CHUNK), (src, dst))
            moved += m
            skipped += s
            if m + s < CHUNK:
                return moved

    def ping(self) -> bool:
        return bool(self._command("PING"))


__all__ = ["RedisSMQ", "RsmqError"]
