"""Requests through the console's ASGI application in this process, as granian hands them
over: one event loop in a thread of its own (the server's), each request's scope and its
body in messages, the answer's status, headers and body. Django answers in the
application's own pool of threads, so a test that reads what they wrote needs
``django_db(transaction=True)``."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler

from dashboard.serving.app import Console
from dashboard.serving.fast import FastPath


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    #: whether the fast path answered it (else Django did)
    fast: bool = False

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        found = [v for k, v in self.headers if k == name.lower()]
        return found[0] if found else None


@dataclass
class Served:
    """``console(fast=True)``: the application as dashboard/asgi.py makes it; with
    ``fast=False``, Django answers every request (the fast path's twin)."""

    app: Console
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        #: each request's task → whether the fast path answered it
        self.answered: dict[asyncio.Task[Any] | None, bool] = {}
        fast = self.app.fast
        if fast is not None:

            async def spy(scope: dict[str, Any], body: bytes) -> Any:
                answer = await fast(scope, body)
                self.answered[asyncio.current_task()] = answer is not None
                return answer

            self.app.fast = spy  # type: ignore[assignment]

    def __call__(self, method: str, path: str, body: bytes | Any = b"", **options: Any) -> Answer:
        """One request (``scope``'s arguments), answered."""
        done = asyncio.run_coroutine_threadsafe(
            self.request(*self.scope(method, path, body, **options)), self.loop
        )
        return done.result(timeout=60)

    def scope(
        self, method: str, path: str, body: bytes | Any = b"", *,
        headers: Iterable[tuple[str, str]] = (), token: str | None = None, query: str = "",
        chunks: list[bytes] | None = None, http_version: str = "1.1",
    ) -> tuple[dict[str, Any], list[bytes]]:  # fmt: skip
        """A request's scope and its body's pieces. ``body``: bytes, or JSON (sent as
        application/json); ``chunks``: the body sent in these pieces, chunked (no
        Content-Length)."""
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
            headers = [("content-type", "application/json"), *headers]
        heads = [("host", "127.0.0.1"), *headers]
        if token is not None:
            heads.append(("authorization", f"Bearer {token}"))
        if chunks is not None:
            heads.append(("transfer-encoding", "chunked"))
            pieces = chunks
        else:
            if body:
                heads.append(("content-length", str(len(body))))
            pieces = [body]
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": http_version,
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": query.encode(), "root_path": "",
            "headers": [(k.lower().encode("latin1"), v.encode("latin1")) for k, v in heads],
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80),
        }  # fmt: skip
        return scope, pieces

    async def request(self, scope: dict[str, Any], pieces: list[bytes]) -> Answer:
        sent: list[dict[str, Any]] = []
        left = list(pieces)

        async def receive() -> dict[str, Any]:
            if not left:
                await asyncio.Event().wait()  # nothing after the body but a disconnect
            return {"type": "http.request", "body": left.pop(0), "more_body": bool(left)}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        start = sent[0]
        headers = [(k.decode("latin1"), v.decode("latin1")) for k, v in start["headers"]]
        body = b"".join(m.get("body", b"") for m in sent[1:])
        fast = self.answered.pop(asyncio.current_task(), False)
        return Answer(start["status"], headers, body, fast=fast)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.app.pool.shutdown(wait=True)


def console(fast: bool = True, threads: int = 4) -> Served:
    """The served application (dashboard/asgi.py's, with the settings as they are now)."""
    return Served(Console(WSGIHandler(), threads, settings.RSMQ_BODY_TIMEOUT,
                          settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
                          FastPath() if fast else None))  # fmt: skip
