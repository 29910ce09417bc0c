"""What the client relies on inside redis-py and hiredis (queues/_redis_internals.py),
named one by one on the installed redis-py and a real Redis: a redis-py that lost or
changed one fails here, saying which, before any client test does.

And when one is gone, the client says so (`MissingInternal`: the internal's name and the
redis-py found) — when it is made where it can tell, else at its first call — instead of
every call failing with a connection error that is not one."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hiredis
import pytest
import redis
import redis.asyncio as aioredis
import redis.asyncio.sentinel as aiosentinel
import redis.sentinel
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError, ReadOnlyError, RedisError, ResponseError
from redis.retry import Retry

from queues import AsyncRedisSMQ
from queues import _redis_internals as internals
from queues._redis_internals import AsyncRelocating, MissingInternal, Relocating
from queues.errors import NotSent


def installed() -> str:
    return f"redis-py {redis.__version__}, hiredis {hiredis.__version__}"


def have(obj: Any, attribute: str, name: str) -> Any:
    """``obj.attribute``, or the test fails naming the internal."""
    found = getattr(obj, attribute, internals._GONE)
    assert found is not internals._GONE, f"{name} is gone ({installed()})"
    return found


def async_connection(redis_url: str, **options: Any) -> Any:
    """A redis.asyncio connection made as the async client's lanes make theirs."""
    pool = aioredis.ConnectionPool.from_url(redis_url, **options)
    return pool.connection_class(**{**pool.connection_kwargs, "protocol": 2})


@pytest.fixture
def port(redis_url: str) -> int:
    return int(redis_url.rsplit(":", 1)[1].split("/")[0])


def test_every_internal_the_module_relies_on_is_named_here() -> None:
    constants = {v: k for k, v in vars(internals).items() if k.isupper() and isinstance(v, str)}
    source = Path(__file__).read_text()
    unnamed = [n for n in internals.INTERNALS if f"internals.{constants[n]}" not in source]
    assert unnamed == []


# -- the async lanes: a connected connection's transport, taken over ---------------------


def test_a_connected_async_connection_has_the_pieces_a_lane_takes_over(redis_url: str) -> None:
    async def main() -> None:
        conn = async_connection(redis_url)
        await conn.connect()
        try:
            writer = have(conn, "_writer", internals.WRITER)
            stream = have(conn, "_reader", internals.STREAM)
            parser = have(conn, "_parser", internals.PARSER)
            reader = have(parser, "_reader", internals.HIREDIS_READER)
            buffer = have(stream, "_buffer", internals.STREAM_BUFFER)
            assert isinstance(writer, asyncio.StreamWriter), internals.WRITER
            assert isinstance(writer.transport, asyncio.Transport), internals.WRITER
            assert isinstance(stream, asyncio.StreamReader), internals.STREAM
            assert isinstance(reader, hiredis.Reader), (internals.HIREDIS_READER, type(reader))
            assert isinstance(buffer, bytearray), internals.STREAM_BUFFER
        finally:
            await conn.disconnect()

    asyncio.run(main())


def test_the_hiredis_reader_answers_as_a_lane_reads_it(redis_url: str) -> None:
    """Not whole yet: NOT_ENOUGH_DATA; an error reply: redis-py's exception, as a value
    (READONLY as its own, MOVED told by `slot_moved`: topology.wrong_node needs both)."""

    async def main() -> list[Any]:
        conn = async_connection(redis_url)
        await conn.connect()
        try:
            reader = internals.take_transport(conn).reader
            reader.feed(b"$5\r\nhel")
            got = [reader.gets()]
            reader.feed(b"lo\r\n-ERR no\r\n-MOVED 1 127.0.0.1:7000\r\n-READONLY no\r\n")
            return got + [reader.gets() for _ in range(4)]
        finally:
            await conn.disconnect()

    incomplete, whole, error, moved, readonly = asyncio.run(main())
    used = have(redis.utils, "HIREDIS_AVAILABLE", internals.HIREDIS_USED)
    assert used is True, (internals.HIREDIS_USED, installed())
    assert internals.NOT_ENOUGH_DATA is not internals._GONE, internals.NOT_ENOUGH
    assert incomplete is internals.NOT_ENOUGH_DATA, internals.NOT_ENOUGH
    assert whole == b"hello"
    assert type(error) is ResponseError and str(error) == "no"
    assert internals.slot_moved(moved) and not internals.slot_moved(error)
    assert isinstance(readonly, ReadOnlyError)


def test_take_transport_gives_the_writer_the_reader_and_what_was_read_ahead(
    redis_url: str,
) -> None:
    async def main() -> internals.Taken:
        conn = async_connection(redis_url)
        await conn.connect()
        try:
            return internals.take_transport(conn)
        finally:
            await conn.disconnect()

    taken = asyncio.run(main())
    assert isinstance(taken.writer, asyncio.StreamWriter)
    assert isinstance(taken.reader, hiredis.Reader)
    assert taken.left == b""  # the handshake's replies were all read


# -- Sentinel and Cluster connections: where to connect, asked at every socket ----------


def test_the_connect_step_is_where_every_sync_connect_path_goes(port: int) -> None:
    have(redis.Connection, "_connect", internals.CONNECT)
    asked: list[int] = []

    class Here(Relocating):
        def locate(self) -> tuple[str, int]:
            asked.append(1)
            return "127.0.0.1", port

    conn = Here(host="nowhere.invalid", port=1, protocol=2)
    try:
        conn.connect()  # a first connect
        assert internals.is_open(conn), internals.SOCKET
        conn.disconnect()
        assert not internals.is_open(conn), internals.SOCKET
        conn.send_command("PING")  # a command on a closed connection
        assert conn.read_response() == b"PONG"
        assert len(asked) == 2, internals.CONNECT
    finally:
        conn.disconnect()


def test_the_connect_step_is_where_every_async_connect_path_goes(port: int) -> None:
    have(aioredis.Connection, "_connect", internals.ASYNC_CONNECT)
    asked: list[int] = []

    class Here(AsyncRelocating):
        async def locate(self) -> tuple[str, int]:
            asked.append(1)
            return "127.0.0.1", port

    async def main() -> None:
        conn = Here(host="nowhere.invalid", port=1, protocol=2)
        try:
            await conn.connect()
            await conn.disconnect()
            await conn.send_command("PING")
            assert await conn.read_response() == b"PONG"
        finally:
            await conn.disconnect()

    asyncio.run(main())
    assert len(asked) == 2, internals.ASYNC_CONNECT


def test_a_socket_that_cannot_be_opened_is_told_to_the_connection() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    told: list[OSError] = []

    class Nowhere(Relocating):
        def locate(self) -> tuple[str, int]:
            return "127.0.0.1", closed

        def unreachable(self, error: OSError) -> None:
            told.append(error)

    with pytest.raises(ConnectionError):
        Nowhere(protocol=2, retry=Retry(NoBackoff(), 0)).connect()
    assert told and isinstance(told[0], OSError), internals.CONNECT


def test_a_sentinel_keeps_its_clients_where_they_can_be_closed(port: int) -> None:
    sync = redis.sentinel.Sentinel([("127.0.0.1", port)])
    clients = have(sync, "sentinels", internals.SENTINEL_CLIENTS)
    assert [type(c) for c in clients] == [redis.Redis], internals.SENTINEL_CLIENTS
    clients[0].ping()
    internals.close_sentinel(sync)

    async def main() -> None:
        aio = aiosentinel.Sentinel([("127.0.0.1", port)])
        clients = have(aio, "sentinels", internals.SENTINEL_CLIENTS)
        assert [type(c) for c in clients] == [aioredis.Redis], internals.SENTINEL_CLIENTS
        await clients[0].ping()
        await internals.aclose_sentinel(aio)

    asyncio.run(main())


# -- when one is gone -------------------------------------------------------------------


@pytest.fixture
def not_hiredis() -> Iterator[type]:
    """redis-py's pure-Python async parser: what redis-py reads with when it does not use
    the installed hiredis (too old for it, say)."""
    from redis._parsers import _AsyncRESP2Parser

    yield _AsyncRESP2Parser


def test_an_async_client_whose_redis_py_does_not_read_with_hiredis_is_refused_when_made(
    redis_url: str, not_hiredis: type
) -> None:
    client = aioredis.Redis.from_url(redis_url, protocol=2, parser_class=not_hiredis)
    with pytest.raises(MissingInternal) as e:
        AsyncRedisSMQ(client=client)
    assert e.value.name == internals.HIREDIS_READER
    assert internals.HIREDIS_READER in str(e.value) and redis.__version__ in str(e.value)
    assert "_AsyncRESP2Parser" in str(e.value)


def test_a_missing_internal_is_named_with_the_redis_py_found(redis_url: str) -> None:
    def make() -> Any:
        conn = async_connection(redis_url)
        del conn._writer
        return conn

    with pytest.raises(MissingInternal, match=re.escape(internals.WRITER)) as e:
        internals.check_lanes(make)
    assert f"redis-py {redis.__version__}" in str(e.value)
    assert not isinstance(e.value, ConnectionError)  # not retried as one


def test_a_connection_that_lost_an_internal_fails_each_call_saying_which(
    redis_url: str, ns: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Made with it, connected without it: the lane ends, every caller waiting on it gets
    the same clear error, once (not retried as a connection error would be), and the
    event loop's exception handler logs it."""

    class Changed(aioredis.Connection):
        async def connect(self) -> None:
            await super().connect()
            del self._parser._reader

    async def main() -> list[BaseException | bool]:
        pool = aioredis.ConnectionPool.from_url(redis_url, connection_class=Changed)
        async with AsyncRedisSMQ(client=aioredis.Redis(connection_pool=pool), ns=ns) as a:
            return await asyncio.gather(a.ping(), a.ping(), return_exceptions=True)

    errors = asyncio.run(main())
    assert [type(e) for e in errors] == [MissingInternal, MissingInternal]
    assert all(internals.HIREDIS_READER in str(e) for e in errors)
    [logged] = [r for r in caplog.records if r.name == "asyncio"]
    assert logged.exc_info and logged.exc_info[0] is MissingInternal


def test_a_real_connection_error_still_ends_the_lane_as_one(ns: str) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]

    async def main() -> BaseException | bool:
        async with AsyncRedisSMQ(url=f"redis://127.0.0.1:{closed}/0", ns=ns) as a:
            return (await asyncio.gather(a.ping(), return_exceptions=True))[0]

    error = asyncio.run(main())
    # never written (the connection was never made): NotSent, safe to make again
    assert isinstance(error, NotSent) and isinstance(error, ConnectionError)


def test_a_round_trip_written_then_lost_is_no_not_sent(redis_url: str, ns: str) -> None:
    """Written, then the connection is closed under it: it may have run, so it is a plain
    connection error (or a timeout), never NotSent."""

    async def main() -> BaseException | bool:
        async with AsyncRedisSMQ(url=redis_url, ns=ns, socket_timeout=0.2) as a:
            await a.ping()
            blocked = redis.Redis.from_url(redis_url)
            sleeping = asyncio.get_running_loop().run_in_executor(
                None, blocked.execute_command, "DEBUG", "SLEEP", "0.5"
            )
            await asyncio.sleep(0.05)
            got = (await asyncio.gather(a.ping(), return_exceptions=True))[0]
            await sleeping
            return got

    error = asyncio.run(main())
    assert isinstance(error, RedisError) and not isinstance(error, NotSent)
