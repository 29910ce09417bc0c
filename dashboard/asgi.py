"""The application ./run, the image and compose serve, with granian (bench/RESULTS.md,
"Slow clients and the web server").

A slow client must hold no thread. granian reads a request's headers in Rust,
asynchronously, and closes a connection whose headers are not all in within
``--http1-header-read-timeout`` (``RSMQ_HEADER_TIMEOUT``). ``WholeBody`` then reads the
body in the event loop — a body not all in within ``RSMQ_BODY_TIMEOUT`` seconds of its
headers is answered 408 and its connection closed — and only a whole request is handed to
``Threads``, which runs Django's WSGI handler in a fixed pool of ``RSMQ_WEB_THREADS``
threads per process (the same threads every time: their Redis and database connections
are kept) and sends the whole response back. Hundreds of clients trickling headers or
bodies cost memory in the event loop, never the threads that answer everyone else. A
chunked body (``Transfer-Encoding: chunked``, no Content-Length: Node's http module sends
them) reaches Django whole, with its length.

(a2wsgi's WSGIMiddleware would run Django the same way, but it hands each piece of a
response from the thread to the event loop and waits for it: three such round trips a
request made the API's calls 2–3 times slower than gunicorn's, bench/RESULTS.md; its
environ builder is used here.)
"""

from __future__ import annotations

import asyncio
import functools
import io
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from a2wsgi.wsgi import build_environ
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from dashboard.serving.chunked import ChunkedBodies, too_large_text

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

from dashboard.serving.startup import refuse_bad_configuration, refuse_insecure_key  # noqa: E402

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]


class WholeBody:
    """An ASGI app that gives ``app`` only whole HTTP requests: the body read first, within
    ``seconds`` of the headers (else 408), at most ``max_bytes`` when its length is not
    declared (else 413), and then declared (Content-Length, no Transfer-Encoding)."""

    def __init__(self, app: App, seconds: float, max_bytes: int | None) -> None:
        self.app, self.seconds, self.max_bytes = app, seconds, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared: bytes | None = None
        chunked = False
        for k, v in scope["headers"]:
            k = k.lower()
            if k == b"content-length":
                if declared is None:
                    declared = v
            elif k == b"transfer-encoding":
                chunked = True
        if declared is None and not chunked:  # no body (RFC 9112 §6.3)
            if isinstance(self.app, Threads) and scope.get("http_version") in ("1.0", "1.1"):
                # Nothing to read: no trip into the server's runtime for an empty message
                # (HTTP/2 frames a body without either header: it is read as before).
                return await self.app.whole(scope, b"", receive, send)
            return await self.app(scope, receive, send)
        if (
            not chunked
            and declared is not None
            and declared.isdigit()
            and self.max_bytes is not None
            and int(declared) > self.max_bytes
        ):
            # Django refuses it by its length without reading it: nothing to wait for.
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []
        size = 0
        # Whole once its declared length is in: granian sends the body, then an empty
        # last message (more_body false) — waiting for that one costs a round trip from
        # the event loop to the server's runtime and back (bench/RESULTS.md).
        length = int(declared) if declared is not None and declared.isdigit() else None
        if chunked:
            length = None
        try:
            async with asyncio.timeout(self.seconds):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return  # the client went away
                    chunks.append(message.get("body", b""))
                    size += len(chunks[-1])
                    if self.max_bytes is not None and size > self.max_bytes:
                        return await refuse(send, 413, too_large_text(self.max_bytes), api(scope))
                    if not message.get("more_body") or (length is not None and size >= length):
                        break
        except TimeoutError:
            return await refuse(
                send,
                408,
                f"The request's body did not arrive within {self.seconds:g} s.",
                api(scope),
            )
        body = b"".join(chunks)

        def declared_whole() -> Headers:
            return [
                *((k.lower(), v) for k, v in scope["headers"]
                  if k.lower() not in (b"content-length", b"transfer-encoding")),
                (b"content-length", str(len(body)).encode()),
            ]  # fmt: skip

        if isinstance(self.app, Threads):  # the body handed over as it is (Threads.whole)
            return await self.app.whole(scope, body, receive, send, declared_whole)
        whole = declared_whole()
        given = False

        async def replay() -> Message:
            nonlocal given
            if given:  # after the body: whatever comes next (a disconnect)
                return await receive()
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app({**scope, "headers": whole}, replay, send)


def api(scope: Scope) -> bool:
    """Whether the request is the API's: its refusals are JSON, as its other errors."""
    return str(scope.get("path", "")).startswith("/api/")


async def refuse(send: Send, status: int, text: str, as_json: bool = False) -> None:
    """Answer ``status`` with ``text`` (``{"error": text}`` for the API) and close the
    connection (the rest of the body is never read)."""
    if as_json:
        data, kind = json.dumps({"error": text}).encode(), b"application/json"
    else:
        data, kind = f"{text}\n".encode(), b"text/plain; charset=utf-8"
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", kind),
                    (b"content-length", str(len(data)).encode()), (b"connection", b"close")],
    })  # fmt: skip
    await send({"type": "http.response.body", "body": data})


class Threads:
    """An ASGI app that runs a WSGI app in a fixed pool of ``threads`` (the same threads
    every time: their Redis and database connections are kept), for whole requests
    (``WholeBody`` in front): one hop into a thread with the request (a2wsgi's environ),
    one back with the whole response — a response is no larger than a page or /metrics —
    except a streamed one (an export), sent piece by piece from its thread (``streamer``)."""

    def __init__(self, app: Any, threads: int, in_loop: Any = None, in_scope: Any = None) -> None:
        self.app, self.in_loop, self.in_scope = app, in_loop, in_scope
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="django")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        message = await receive()
        body = message.get("body", b"") if message["type"] == "http.request" else b""
        await self.whole(scope, body, receive, send)

    async def whole(
        self, scope: Scope, body: bytes, receive: Receive, send: Send,
        headers: Callable[[], Headers] | None = None,
    ) -> None:  # fmt: skip
        """The request of ``scope`` with its whole ``body``, read already (``receive``
        gives what comes after it); ``headers``: the request's headers as the environ is
        to have them (WholeBody's, the body's length declared), if not the scope's."""
        loop = asyncio.get_running_loop()
        deferred: Deferred | None = None
        if self.in_scope is not None:
            # The plain calls' answer read from the scope itself, their round trip
            # awaited (lean.in_scope): no environ unless a thread needs one.
            try:
                scoped = await self.in_scope(scope, body)
            except Deferred as d:
                deferred = d
            else:
                if scoped is not None:
                    status, heads, data = scoped
                    await send({"type": "http.response.start", "status": status,
                                "headers": heads})  # fmt: skip
                    await send({"type": "http.response.body", "body": data})
                    return
        environ = self.environ(scope if headers is None else {**scope, "headers": headers()}, body)
        answer = None
        if deferred is not None:
            if deferred.request is not None:
                deferred.request.META = environ  # as the environ path's request has it
            rest = functools.partial(lean.finish, deferred, self.app)
            answer = await loop.run_in_executor(self.pool, self.call, environ, rest)
        elif self.in_loop is not None:
            # The data plane's plain calls, answered here: one Redis round trip, no hop
            # into a thread and back (dashboard/serving/fast.py ``fast``; bench/RESULTS.md).
            try:
                answer = self.call(environ, self.in_loop)
            except Deferred as d:  # what needs the database: in a thread
                rest = functools.partial(lean.finish, d, self.app)
                answer = await loop.run_in_executor(self.pool, self.call, environ, rest)
        if answer is None:
            stream = streamer(loop, send, receive)
            answer = await loop.run_in_executor(self.pool, self.call, environ, None, stream)
            if answer is None:  # streamed, sent already
                return
        status, heads, chunks = answer
        await send({"type": "http.response.start", "status": status, "headers": heads})
        await send({"type": "http.response.body", "body": b"".join(chunks)})

    @staticmethod
    def environ(scope: Scope, body: bytes) -> dict[str, Any]:
        environ: dict[str, Any] = dict(build_environ(scope, io.BytesIO(body)))  # type: ignore[arg-type]
        environ["wsgi.errors"] = sys.stderr
        return environ

    def call(
        self, environ: dict[str, Any], app: Any = None, stream: Stream | None = None
    ) -> tuple[int, Headers, list[bytes]] | None:
        """``app``'s (default: the WSGI app's) whole answer; None: ``app`` gave none
        (``in_loop``), or, for a streamed response (an export: Django's
        StreamingHttpResponse) when ``stream`` is given, ``stream`` sent it already."""
        started: list[tuple[int, Headers]] = []
        chunks: list[bytes] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            code = int(status.split(" ", 1)[0])
            started[:] = [
                (code, [(k.lower().encode("latin1"), v.encode("latin1")) for k, v in headers])
            ]
            return chunks.append

        result: Iterable[bytes] | None = (app or self.app)(environ, start_response)
        if result is None:
            return None
        try:
            if stream is not None and getattr(result, "streaming", False):
                stream(started[0][0], started[0][1], result)
                return None
            chunks.extend(result)
        finally:
            close = getattr(result, "close", None)
            if close:
                close()
        return started[0][0], started[0][1], chunks


Stream = Callable[[int, Headers, Iterable[bytes]], None]


def streamer(loop: asyncio.AbstractEventLoop, send: Send, receive: Receive) -> Stream:
    """How a thread sends a streamed response (``Threads.call``): each piece handed to the
    event loop as it is made, the thread waiting until the server has taken it — so the
    process holds one piece at a time, never the whole body (a 1,000,000-message export
    stays a few MB: bench/RESULTS.md) — and the thread is the response's until its end.
    A client gone mid-way (``http.disconnect``, watched in the loop meanwhile) ends it:
    the rest is never made (the iterable is closed)."""
    gone = threading.Event()

    async def watch() -> None:
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        finally:
            gone.set()

    async def sent(message: Message) -> None:
        await send(message)

    def push(message: Message) -> bool:
        if gone.is_set():
            return False
        try:
            asyncio.run_coroutine_threadsafe(sent(message), loop).result()
        except Exception:  # the server refuses further sends: the client went away
            return False
        return True

    def stream(status: int, headers: Headers, pieces: Iterable[bytes]) -> None:
        watcher = asyncio.run_coroutine_threadsafe(watch(), loop)
        try:
            if not push({"type": "http.response.start", "status": status, "headers": headers}):
                return
            for piece in pieces:
                if piece and not push(
                    {"type": "http.response.body", "body": piece, "more_body": True}
                ):
                    return
            push({"type": "http.response.body", "body": b""})
        finally:
            watcher.cancel()

    return stream


refuse_insecure_key()
_wsgi = get_wsgi_application()
refuse_bad_configuration()
# API token calls take a lean path (dashboard/serving/fast.py): no session, CSRF, messages or axes.
from dashboard.api.calls import Deferred  # noqa: E402
from dashboard.serving import fast as lean  # noqa: E402 (Django is set up above)

# Every view imported now, as each worker starts (the API's ~0.5 s), not by its first request.
get_resolver().url_patterns  # noqa: B018
application = WholeBody(
    # ChunkedBodies: a declared length past the limit is the same 413 as an unsized one
    Threads(
        ChunkedBodies(lean.dispatch(_wsgi)), settings.RSMQ_WEB_THREADS, lean.in_loop, lean.in_scope
    ),
    seconds=settings.RSMQ_BODY_TIMEOUT,
    max_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
)
