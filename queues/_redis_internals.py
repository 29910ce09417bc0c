"""Every use the client makes of redis-py's (and hiredis's, asyncio's) internals: what it
relies on that their public API does not give, in this one module, each one named and
checked. A redis-py that changed one fails with `MissingInternal` saying which, and which
redis-py was found, instead of every call failing some other way.

* The async client's lanes (queues/aio.py) take a connected redis.asyncio connection's
  transport over and read its replies with the hiredis reader redis-py made for it (so
  error replies are redis-py's exceptions): `take_transport`, `NOT_ENOUGH_DATA`.
* Sentinel and Cluster connections (queues/topology.py) ask where to connect every time
  they open a socket: `Relocating`, `AsyncRelocating` (redis-py's ``_connect``, the one
  step every connect path of every supported redis-py goes through); a sync connection's
  socket says whether it is open (`is_open`).
* The sentinels' own clients, to close them (`close_sentinel`, `aclose_sentinel`).

And what differs between the redis-py versions the client supports: `slot_moved`.

tests/core/test_redis_internals.py names each of them on the installed redis-py; the
lowest redis-py the client supports is tested too (tests/core/test_lowest_redis.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, NamedTuple

import hiredis
import redis
import redis.asyncio as aioredis
from redis import utils as _utils
from redis.exceptions import ClusterDownError, MovedError, ResponseError

_GONE = object()

try:
    from redis._parsers.hiredis import NOT_ENOUGH_DATA as _not_enough
except ImportError:
    _not_enough = _GONE
#: what the hiredis reader redis-py made for a connection returns while a reply is not
#: whole yet (an object of redis-py's own, given to hiredis as ``notEnoughData``)
NOT_ENOUGH_DATA: object = _not_enough
#: whether redis-py reads with the installed hiredis (it refuses one too old for it)
_HIREDIS_USED: object = getattr(_utils, "HIREDIS_AVAILABLE", _GONE)

#: the internals the client relies on, by the names `MissingInternal` gives them
WRITER = "redis.asyncio.Connection._writer"
STREAM = "redis.asyncio.Connection._reader"
PARSER = "redis.asyncio.Connection._parser"
HIREDIS_READER = "redis._parsers.hiredis._AsyncHiredisParser._reader"
STREAM_BUFFER = "asyncio.StreamReader._buffer"
NOT_ENOUGH = "redis._parsers.hiredis.NOT_ENOUGH_DATA"
HIREDIS_USED = "redis.utils.HIREDIS_AVAILABLE"
CONNECT = "redis.Connection._connect"
ASYNC_CONNECT = "redis.asyncio.Connection._connect"
SOCKET = "redis.Connection._sock"
SENTINEL_CLIENTS = "redis.sentinel.Sentinel.sentinels"
INTERNALS = (
    WRITER, STREAM, PARSER, HIREDIS_READER, STREAM_BUFFER, NOT_ENOUGH, HIREDIS_USED,
    CONNECT, ASYNC_CONNECT, SOCKET, SENTINEL_CLIENTS,
)  # fmt: skip


class MissingInternal(RuntimeError):
    """The installed redis-py (or hiredis) lacks an internal the client relies on: not a
    connection error, so it is not retried; every call made with it would fail."""

    def __init__(self, name: str, detail: str = "") -> None:
        self.name = name
        super().__init__(
            f"the RSMQ client relies on {name}, which the installed redis-py "
            f"{redis.__version__} (hiredis {hiredis.__version__}) does not have"
            f"{': ' + detail if detail else ''}; install the redis-py and hiredis versions "
            "pyproject.toml's dependencies name"
        )


def _get(obj: Any, attribute: str, name: str) -> Any:
    found = getattr(obj, attribute, _GONE)
    if found is _GONE:
        raise MissingInternal(name)
    return found


def check_lanes(make: Callable[[], Any]) -> None:
    """What the lanes need, checked on a connection ``make`` makes as a lane's, not
    connected (so a client that could not run fails when it is made, not at its first
    call)."""
    if NOT_ENOUGH_DATA is _GONE:
        raise MissingInternal(NOT_ENOUGH)
    if _HIREDIS_USED is _GONE:
        raise MissingInternal(HIREDIS_USED)
    if not _HIREDIS_USED:
        raise MissingInternal(HIREDIS_READER, "redis-py does not read with this hiredis")
    conn = make()
    _get(conn, "_writer", WRITER)
    _get(conn, "_reader", STREAM)
    parser = _get(conn, "_parser", PARSER)
    if not hasattr(parser, "_reader"):
        raise MissingInternal(
            HIREDIS_READER, f"redis-py reads with {type(parser).__name__}, not with hiredis"
        )


class Taken(NamedTuple):
    """A connected connection's transport, as a lane takes it over."""

    #: the connection's stream writer (its ``transport`` is the socket's)
    writer: asyncio.StreamWriter
    #: the hiredis reader redis-py made for it (with its error replies, its decoding)
    reader: hiredis.Reader
    #: what redis-py read off the socket but has not parsed
    left: bytes


def take_transport(conn: Any) -> Taken:
    """The pieces of connected ``conn`` a lane reads and writes with (once per connect:
    nothing here is on a reply's path)."""
    writer = _get(conn, "_writer", WRITER)
    stream = _get(conn, "_reader", STREAM)
    reader = _get(_get(conn, "_parser", PARSER), "_reader", HIREDIS_READER)
    if not isinstance(reader, hiredis.Reader):
        raise MissingInternal(HIREDIS_READER, f"the connection's reader is {reader!r}")
    buffer = _get(stream, "_buffer", STREAM_BUFFER)
    return Taken(writer, reader, bytes(buffer))


def is_open(conn: redis.Connection) -> bool:
    """Whether a sync connection has its socket (not every supported redis-py has a
    public way to ask)."""
    return _get(conn, "_sock", SOCKET) is not None


class Relocating(redis.Connection):
    """A connection that asks `locate` where to connect every time it opens a socket:
    on its first connect, a reconnect, a command sent on a closed connection alike."""

    def locate(self) -> tuple[str, int]:
        raise NotImplementedError

    def unreachable(self, error: OSError) -> None:
        """The socket to where `locate` said could not be opened (``error`` is raised
        after this, unless this raises another)."""

    def _connect(self) -> Any:
        self.host, self.port = self.locate()
        try:
            return super()._connect()  # type: ignore[no-untyped-call]
        except OSError as e:
            self.unreachable(e)
            raise


class AsyncRelocating(aioredis.Connection):
    """`Relocating` for redis.asyncio."""

    async def locate(self) -> tuple[str, int]:
        raise NotImplementedError

    def unreachable(self, error: OSError) -> None:
        """As `Relocating.unreachable`."""

    async def _connect(self) -> None:
        self.host, self.port = await self.locate()
        try:
            await super()._connect()  # type: ignore[no-untyped-call]
        except OSError as e:
            self.unreachable(e)
            raise


def check_relocating() -> None:
    """The connect step `Relocating` overrides, on the installed redis-py."""
    if not callable(getattr(redis.Connection, "_connect", None)):
        raise MissingInternal(CONNECT)
    if not asyncio.iscoroutinefunction(getattr(aioredis.Connection, "_connect", None)):
        raise MissingInternal(ASYNC_CONNECT)


def close_sentinel(sentinel: Any) -> None:
    """Close the clients ``sentinel`` (a redis.sentinel.Sentinel) made for the sentinels
    (not every supported redis-py has Sentinel.close)."""
    for client in _get(sentinel, "sentinels", SENTINEL_CLIENTS):
        client.close()


async def aclose_sentinel(sentinel: Any) -> None:
    """`close_sentinel` for a redis.asyncio.sentinel.Sentinel."""
    for client in _get(sentinel, "sentinels", SENTINEL_CLIENTS):
        await client.aclose()


def slot_moved(error: ResponseError) -> bool:
    """Whether an error reply says the slot is not this node's (MOVED) or the Cluster is
    down (CLUSTERDOWN): redis-py's own exceptions for them from 6.0 on, a plain
    ResponseError with its text before."""
    if isinstance(error, (MovedError, ClusterDownError)):
        return True
    return str(error).startswith(("MOVED ", "CLUSTERDOWN "))
