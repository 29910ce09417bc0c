"""AsyncRedisSMQ under concurrency: the round trips of one event-loop turn share a write
on one of a few connections (the first goes at once when nothing is in flight), and
every caller still gets its own replies, its own errors, through cancellation, SCRIPT
FLUSH and a Redis restart."""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
import redis.asyncio as aioredis
import uvloop
from support.counting import CountingConnection

from queues import AsyncRedisSMQ, Message, MessageNotString, QueueNotFound, RedisSMQ
from queues.aio import Lane
from queues.server import EmbeddedRedis, free_port

T = TypeVar("T")


def arun(url: str, ns: str, fn: Callable[[AsyncRedisSMQ], Awaitable[T]], **kw: Any) -> T:
    async def main() -> T:
        async with AsyncRedisSMQ(url=url, ns=ns, **kw) as a:
            return await fn(a)

    return asyncio.run(main())


def test_the_calls_of_one_event_loop_turn_share_one_write_after_the_first(
    redis_url: str, ns: str, queue: str
):
    async def main() -> tuple[int, list[str]]:
        pool = aioredis.ConnectionPool.from_url(redis_url, connection_class=CountingConnection)
        async with AsyncRedisSMQ(client=aioredis.Redis(connection_pool=pool), ns=ns) as a:
            await a.send_message(queue, "warm")  # connected, script loaded
            CountingConnection.writes = 0
            ids = await asyncio.gather(*(a.send_message(queue, f"m{i}") for i in range(64)))
            return CountingConnection.writes, ids

    writes, ids = asyncio.run(main())

    # the turn's first at once (nothing was in flight), the other 63 after it in one write
    assert writes == 2
    assert ids == sorted(ids)  # written, and so run, in the order they were called


@pytest.mark.slow
def test_64_coroutines_doing_1000_operations_each_get_their_own_results_fifo_exactly_once(
    redis_url: str, ns: str, rsmq: RedisSMQ
):
    queues = [f"q{i}" for i in range(8)]
    for q in queues:
        rsmq.create_queue(q)

    async def producer(a: AsyncRedisSMQ, k: int) -> list[tuple[str, str]]:
        q = queues[k % 8]
        sent = []
        for seq in range(500):
            body = f"{k}:{seq}"
            sent.append((await a.send_message(q, body), body))
        return sent

    async def consumer(a: AsyncRedisSMQ, k: int) -> list[Message]:
        q = queues[k % 8]
        got = []
        for _ in range(500):
            msg = await a.receive_message(q, vt=3600)
            assert msg is not None
            got.append(msg)
        return got

    async def fn(a: AsyncRedisSMQ) -> tuple[list[list[tuple[str, str]]], list[list[Message]]]:
        sent = await asyncio.gather(*(producer(a, k) for k in range(64)))
        got = await asyncio.gather(*(consumer(a, k) for k in range(64)))
        assert len(a._lanes) <= AsyncRedisSMQ.LANES
        return sent, got

    sent, got = arun(redis_url, ns, fn)

    bodies = {mid: body for one in sent for mid, body in one}
    received = [m for one in got for m in one]
    assert len(bodies) == 64 * 500
    assert sorted(m.id for m in received) == sorted(bodies)  # each exactly once
    assert all(m.message == bodies[m.id] and m.rc == 1 for m in received)
    for one in got:  # a queue hands its messages out in the order they were sent
        assert [m.id for m in one] == sorted(m.id for m in one)
        for producer_k in {m.message.split(":")[0] for m in one}:
            seqs = [
                int(m.message.split(":")[1]) for m in one if m.message.startswith(producer_k + ":")
            ]
            assert seqs == sorted(seqs)
    assert sum(rsmq.get_queue_attributes(q).totalrecv for q in queues) == 64 * 500


def test_errors_stay_with_the_call_that_caused_them(redis_url: str, ns: str, queue: str):
    async def fn(a: AsyncRedisSMQ) -> list[Any]:
        return await asyncio.gather(
            a.send_message(queue, "a"),
            a.send_message("missing", "b"),
            a.send_message(queue, "bad \ud800 surrogate"),
            a.send_message(queue, "c"),
            return_exceptions=True,
        )

    first, missing, bad, last = arun(redis_url, ns, fn)

    assert isinstance(missing, QueueNotFound) and missing.qname == "missing"
    assert isinstance(bad, MessageNotString)
    assert isinstance(first, str) and isinstance(last, str)


@pytest.mark.parametrize("turns", [0, 1, 2, 3, 5])
def test_a_cancelled_caller_leaves_every_other_caller_its_own_reply(
    redis_url: str, ns: str, rsmq: RedisSMQ, queue: str, turns: int
):
    ids = rsmq.send_messages(queue, [f"body of {i}" for i in range(200)])

    async def fn(a: AsyncRedisSMQ) -> None:
        await a.get_message(queue, ids[0])  # connected, script loaded
        tasks = [asyncio.create_task(a.get_message(queue, mid)) for mid in ids]
        for _ in range(turns):  # cancelled before the write, after it, with replies due
            await asyncio.sleep(0)
        for task in tasks[::2]:
            task.cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        for i, result in enumerate(done):
            if isinstance(result, asyncio.CancelledError):
                continue
            assert result.id == ids[i] and result.message == f"body of {i}"
        # and the connection is still in step: later calls get their own replies
        again = await asyncio.gather(*(a.get_message(queue, mid) for mid in ids[:50]))
        assert [m.message for m in again] == [f"body of {i}" for i in range(50)]

    arun(redis_url, ns, fn)


def test_script_flush_while_64_coroutines_send_and_receive(
    redis_url: str, ns: str, rsmq: RedisSMQ, queue: str, r: redis.Redis
):
    async def worker(a: AsyncRedisSMQ, k: int) -> tuple[int, int]:
        sent = received = 0
        for i in range(100):
            await a.send_message(queue, f"{k}:{i}")
            sent += 1
            if await a.receive_message(queue, vt=3600) is not None:
                received += 1
        return sent, received

    async def flusher() -> None:
        for _ in range(10):
            await asyncio.sleep(random.uniform(0, 0.02))
            await asyncio.to_thread(r.script_flush)

    async def fn(a: AsyncRedisSMQ) -> list[tuple[int, int]]:
        results = await asyncio.gather(*(worker(a, k) for k in range(64)), flusher())
        return results[:64]

    results = arun(redis_url, ns, fn)

    attrs = rsmq.get_queue_attributes(queue)
    assert sum(s for s, _ in results) == attrs.totalsent == attrs.msgs == 6400
    assert sum(n for _, n in results) == attrs.totalrecv == attrs.hiddenmsgs


@pytest.mark.slow
def test_a_redis_restart_mid_flight_fails_some_calls_loses_no_sent_message_and_recovers(
    tmp_path: Path,
):
    server = EmbeddedRedis(tmp_path / "redis", persist=True).start()
    try:
        RedisSMQ(url=server.url, ns="r").create_queue("q")
        restarted = asyncio.Event()

        async def worker(a: AsyncRedisSMQ, k: int) -> tuple[list[str], int]:
            ids, failures, after = [], 0, 0
            while after < 50:
                try:
                    ids.append(await a.send_message("q", f"{k}"))
                except (redis.ConnectionError, redis.TimeoutError):
                    failures += 1
                    await asyncio.sleep(0.01)
                after += restarted.is_set()
            return ids, failures

        async def restart() -> None:
            await asyncio.sleep(0.2)
            # On this thread, blocking the loop: redis-server dies with the thread that
            # started it (PR_SET_PDEATHSIG), and a worker thread of to_thread ends.
            server.stop()
            server.start()
            restarted.set()

        async def fn(a: AsyncRedisSMQ) -> list[tuple[list[str], int]]:
            work = asyncio.gather(*(worker(a, k) for k in range(16)), restart())
            return (await asyncio.wait_for(work, 60))[:16]

        lost: list[Exception] = []
        real_end = Lane.end

        def end(lane: Lane, error: Exception) -> None:
            lost.append(error)
            real_end(lane, error)

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Lane, "end", end)
            results = arun(server.url, "r", fn, socket_timeout=5)

        sent = {mid for ids, _ in results for mid in ids}
        # the restart was mid-flight: connections were lost under the callers (whose
        # round trips were sent once more on new ones, or failed: counted above)
        assert any(isinstance(e, redis.ConnectionError) for e in lost)
        assert len(sent) >= 16 * 50
        kept = redis.Redis.from_url(server.url, decode_responses=True).zrange("r:q", 0, -1)
        assert sent <= set(kept)  # every send that answered is there after the restart
    finally:
        server.stop()


def test_a_stalled_redis_times_calls_out_at_the_socket_timeout_and_the_next_call_works(
    redis_url: str, ns: str, queue: str, r: redis.Redis
):
    """The lane keeps the socket timeout (one timer, not one per read): a round trip
    unanswered for socket_timeout fails with redis's TimeoutError — not sent again, the
    lane's connection dropped so a late reply answers nobody — and the next call, on a
    new connection, gets its own reply."""

    async def fn(a: AsyncRedisSMQ) -> tuple[float, list[Any], str, int]:
        await a.send_message(queue, "warm")
        stall = asyncio.create_task(asyncio.to_thread(r.execute_command, "DEBUG", "SLEEP", "1.5"))
        await asyncio.sleep(0.2)  # the server asleep
        started = time.monotonic()
        got = await asyncio.gather(
            *(a.send_message(queue, f"s{i}") for i in range(5)), return_exceptions=True
        )
        took = time.monotonic() - started
        await stall
        after = await a.send_message(queue, "after")
        return took, got, after, (await a.get_queue_attributes(queue)).msgs

    took, got, after, msgs = arun(redis_url, ns, fn, socket_timeout=0.5)

    assert 0.4 < took < 1.2  # at the timeout, not at the server's waking
    assert all(isinstance(g, redis.TimeoutError) for g in got)
    assert after and isinstance(after, str)
    # the timed-out sends were written once and ran when Redis woke (a timeout is never
    # sent again): warm, 5, after
    assert msgs == 7


@pytest.fixture
def tls_url(redis_url: str, tmp_path: Path) -> Iterator[str]:
    """A rediss:// URL: a TLS endpoint (a self-signed certificate) in front of the test
    Redis, terminated by a proxy of this test's own in a thread."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"],
        check=True, capture_output=True,
    )  # fmt: skip
    target = redis.Redis.from_url(redis_url).connection_pool.connection_kwargs["port"]
    port, ready, loop_box = free_port(), threading.Event(), []

    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        rr, rw = await asyncio.open_connection("127.0.0.1", target)

        async def pipe(a: asyncio.StreamReader, b: asyncio.StreamWriter) -> None:
            try:
                while data := await a.read(65536):
                    b.write(data)
                    await b.drain()
            finally:
                b.close()

        await asyncio.gather(pipe(cr, rw), pipe(rr, cw), return_exceptions=True)

    async def serve() -> None:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(str(cert), str(key))
        server = await asyncio.start_server(handle, "127.0.0.1", port, ssl=ctx)
        loop_box.append((asyncio.get_running_loop(), server))
        ready.set()
        with contextlib.suppress(asyncio.CancelledError):
            await server.serve_forever()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    ready.wait(10)
    # (a self-signed certificate: not checked, its host name neither, which redis-py 6.0
    # checks by default even with ssl_cert_reqs=none)
    yield f"rediss://127.0.0.1:{port}/0?ssl_cert_reqs=none&ssl_check_hostname=false"
    loop, server = loop_box[0]
    loop.call_soon_threadsafe(server.close)


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_the_lanes_read_and_write_over_tls(tls_url: str, ns: str, queue: str, loop: str):
    """The lanes take the connection's transport over from redis-py (queues/aio.py): over
    TLS too, with either event loop, bodies spanning many TLS records included."""

    async def main() -> tuple[list[str], list[Message]]:
        async with AsyncRedisSMQ(url=tls_url, ns=ns, socket_timeout=5) as a:
            bodies = ["x" * 60_000 if i % 10 == 0 else f"m{i}" for i in range(60)]
            ids = await asyncio.gather(*(a.send_message(queue, b) for b in bodies))
            return ids, await a.receive_messages(queue, 60)

    runner = uvloop.run if loop == "uvloop" else asyncio.run
    ids, got = runner(main())
    assert sorted(m.id for m in got) == sorted(ids) and len(set(ids)) == 60
    assert sum(len(m.message) for m in got) == 6 * 60_000 + sum(
        len(f"m{i}") for i in range(60) if i % 10
    )
