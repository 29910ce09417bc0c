"""Exports that let go: through the console's ASGI application (as granian hands requests
over), eight exports whose clients never read hold no thread — another export and a
page are answered meanwhile — and each is dropped once it has waited RSMQ_EXPORT_IDLE
seconds for its client to take a piece: its slot is given back, the drop logged."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from support.asgi import console as served_console

from dashboard.access import tokens
from dashboard.acting import exports
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

IDLE = 1.5  # s: RSMQ_EXPORT_IDLE in this test


async def stuck(served: Any, token: str, started: asyncio.Event) -> list[str]:
    """An export whose client takes its answer's start and then never reads: the send of
    its first piece waits for ever (a full socket); the messages it was sent."""
    scope, _ = served.scope("GET", "/api/queues/big/export/", token=token)
    seen: list[str] = []

    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client neither sends nor goes away
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        seen.append(message["type"])
        if message["type"] == "http.response.start":
            started.set()
            return
        await asyncio.Event().wait()  # never taken

    await served.app(scope, receive, send)
    return seen


def test_idle_exports_are_dropped_and_hold_no_thread(
    console, settings, rsmq: RedisSMQ, caplog: pytest.LogCaptureFixture
) -> None:
    settings.RSMQ_EXPORT_IDLE = IDLE
    rsmq.create_queue("big", maxsize=-1)
    for k in range(0, 20_000, 5000):  # ~3 MB of lines: many pieces each
        rsmq.send_messages("big", [f"{'x' * 120} {i}" for i in range(k, k + 5000)])
    rsmq.create_queue("small")
    rsmq.send_messages("small", ["a", "b", "c"])
    _, token = tokens.mint("exporter", "viewer", "test", 10_000)
    served = served_console(threads=2)  # ./run's default: two threads for Django
    try:
        caplog.set_level(logging.WARNING, "dashboard.serving.app")
        events = [asyncio.Event() for _ in range(8)]
        idle = [
            asyncio.run_coroutine_threadsafe(stuck(served, token, e), served.loop) for e in events
        ]
        for e in events:  # all eight under way, each waiting for its client
            asyncio.run_coroutine_threadsafe(e.wait(), served.loop).result(timeout=30)
        began = time.monotonic()
        assert exports._running == 8

        # meanwhile another export is streamed whole, and a read answered: no thread is held
        other = served("GET", "/api/queues/small/export/", token=token)
        assert other.status == 200 and len(other.body.splitlines()) == 3
        assert served("GET", "/api/queues/", token=token).status == 200
        assert time.monotonic() - began < IDLE

        # each idle one is dropped once its piece waited IDLE seconds: slots given back
        for f in idle:
            assert f.result(timeout=IDLE + 10) == ["http.response.start", "http.response.body"]
        freed = time.monotonic() - began
        assert exports._running == 0
        assert freed < IDLE + 3, freed
        dropped = [r for r in caplog.records if "RSMQ_EXPORT_IDLE" in r.getMessage()]
        assert len(dropped) == 8
        assert "/api/queues/big/export/" in dropped[0].getMessage()
    finally:
        served.close()
