"""The ASGI application granian serves (dashboard/asgi.py: ./run, the image, compose).

A slow client holds no thread. granian reads a request's headers in Rust, asynchronously,
and closes a connection whose headers are not all in within
``--http1-header-read-timeout`` (``RSMQ_HEADER_TIMEOUT``). The body is read here, in the
event loop, within ``RSMQ_BODY_TIMEOUT`` seconds of the headers (else 408, the
connection closed), at most DATA_UPLOAD_MAX_MEMORY_SIZE of it (else 413; a declared
length past it is refused before a byte is read); a chunked body (``Transfer-Encoding:
chunked``: Node's http module sends them) is made whole, with its length. Only then does
anything run: the API's fast path (fast.py), or Django's WSGI handler in a fixed pool of
``RSMQ_WEB_THREADS`` threads — the same threads every time, their Redis and database
connections kept — whose answer is sent whole, or piece by piece when it is streamed (an
export: ``stream``). Hundreds of clients trickling headers or bodies cost memory in the
event loop, never the threads that answer everyone else.

A streamed answer holds no thread while it goes out: the event loop asks a thread of the
pool for the next piece only once the client has taken the last one (the thread is held
while it makes a piece: a browse page read), and each send to the client must be taken
within ``RSMQ_EXPORT_IDLE`` seconds — a client that stops reading is dropped then, its
answer closed (an export's slot given back: dashboard/acting/exports.py), logged."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from a2wsgi.wsgi import build_environ
from django.conf import settings

from dashboard.serving.fast import Answer, FastPath, Headers, Later

#: a declared body past the limit, up to this many times it, is read and dropped before
#: the 413 (past that, refused at once)
DRAINED = 4

log = logging.getLogger(__name__)

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class Streamed(NamedTuple):
    """Django's streamed answer (an export), sent by the event loop piece by piece
    (``Console.stream``); ``result`` is closed when it ends, whatever ended it."""

    status: int
    headers: Headers
    result: Iterable[bytes]


class Console:
    """``django``: the WSGI handler; ``fast``: the API's fast path (None: Django answers
    everything, as the parity tests compare); ``idle``: the seconds a client may take to
    take a piece of a streamed answer (None: RSMQ_EXPORT_IDLE, read at each answer)."""

    def __init__(self, django: Wsgi, threads: int, seconds: float, max_bytes: int | None,
                 fast: FastPath | None, idle: float | None = None) -> None:  # fmt: skip
        self.django, self.seconds, self.max_bytes, self.fast = django, seconds, max_bytes, fast
        self.idle = idle
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="django")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        whole = await self.body(scope, receive, send)
        if whole is None:
            return
        scope, body = whole
        loop = asyncio.get_running_loop()
        if self.fast is not None:
            answer = await self.fast(scope, body)
            if isinstance(answer, Later):
                answer = await loop.run_in_executor(self.pool, answer.finish)
            if answer is not None:
                return await respond(send, *answer)
        environ: dict[str, Any] = dict(build_environ(scope, io.BytesIO(body)))  # type: ignore[arg-type]
        environ["wsgi.errors"] = sys.stderr
        got = await loop.run_in_executor(self.pool, self.call, environ)
        if isinstance(got, Streamed):
            await self.stream(scope, receive, send, got)
        else:
            await respond(send, *got)

    async def body(self, scope: Scope, receive: Receive, send: Send) -> tuple[Scope, bytes] | None:
        """The request's whole body, and its scope with the body's length declared (a
        chunked one's); None: refused (413, 408) or the client went away."""
        declared: bytes | None = None
        chunked = False
        for k, v in scope["headers"]:
            k = k.lower()
            if k == b"content-length" and declared is None:
                declared = v
            elif k == b"transfer-encoding":
                chunked = True
        if declared is None and not chunked and scope.get("http_version") in ("1.0", "1.1"):
            return scope, b""  # no body (RFC 9112 §6.3): nothing to wait for
        length = int(declared) if declared is not None and declared.isdigit() else None
        if chunked:
            length = None
        elif self.max_bytes is not None and length is not None and length > self.max_bytes:
            if length <= DRAINED * self.max_bytes:
                # Read and dropped first: a client that writes its whole body before it
                # reads an answer (a browser's form, most HTTP libraries) gets the 413.
                await self.drain(receive, length)
            await refuse(send, 413, too_large(self.max_bytes), scope)
            return None
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.seconds):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        # the body ended before it was whole: the client went away, or
                        # sent what is no body (granian says the same of a malformed
                        # chunk): a 400 it may still read, and a line in the log
                        await self.cut_short(scope, send, size)
                        return None
                    chunks.append(message.get("body", b""))
                    size += len(chunks[-1])
                    if self.max_bytes is not None and size > self.max_bytes:
                        await refuse(send, 413, too_large(self.max_bytes), scope)
                        return None
                    # Whole once its declared length is in: the server's empty last message
                    # after it would cost a trip into its runtime and back.
                    if not message.get("more_body") or (length is not None and size >= length):
                        break
        except TimeoutError:
            text = f"The request's body did not arrive within {self.seconds:g} s."
            await refuse(send, 408, text, scope)
            return None
        body = b"".join(chunks)
        if chunked or declared is None:
            headers = [(k, v) for k, v in scope["headers"]
                       if k.lower() not in (b"content-length", b"transfer-encoding")]  # fmt: skip
            scope = {**scope, "headers": [*headers, (b"content-length", str(size).encode())]}
        return scope, body

    async def cut_short(self, scope: Scope, send: Send, size: int) -> None:
        log.warning(
            "%s %s: the request's body ended after %d bytes, before it was whole (a malformed"
            " chunked body, or the client went away): 400", scope.get("method"),
            scope.get("path"), size,
        )  # fmt: skip
        text = (
            "The request's body is malformed or was cut short: it ended before it was whole"
            " (a chunked body must be chunks of the sizes they state, then a 0-size chunk)."
        )
        with contextlib.suppress(Exception):  # a client gone can't be answered
            await refuse(send, 400, text, scope)

    async def drain(self, receive: Receive, length: int) -> None:
        """Read ``length`` bytes of a body and drop them, within the body's deadline."""
        got = 0
        try:
            async with asyncio.timeout(self.seconds):
                while got < length:
                    message = await receive()
                    got += len(message.get("body", b""))
                    if message["type"] != "http.request" or not message.get("more_body"):
                        return
        except TimeoutError:
            return

    def call(self, environ: dict[str, Any]) -> Answer | Streamed:
        """Django's answer, in a thread of the pool: whole, or to be streamed (an export's
        StreamingHttpResponse: ``stream`` sends it, and closes it)."""
        started: list[tuple[int, Headers]] = []
        chunks: list[bytes] = []

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Callable[[bytes], None]:
            heads = [(k.lower().encode("latin1"), v.encode("latin1")) for k, v in headers]
            started[:] = [(int(status.split(" ", 1)[0]), heads)]
            return chunks.append

        result = self.django(environ, start_response)
        if getattr(result, "streaming", False):
            return Streamed(started[0][0], started[0][1], result)
        try:
            chunks.extend(result)
        finally:
            closing(result)
        return started[0][0], started[0][1], b"".join(chunks)

    async def stream(self, scope: Scope, receive: Receive, send: Send, answer: Streamed) -> None:
        """A streamed answer, sent from the event loop: a thread of the pool makes each
        piece once the client took the last one (the process holds one piece at a time,
        never the whole body); a client gone (``http.disconnect``) or one that takes no
        piece for ``idle`` seconds ends it. Whatever ends it, the answer is closed (in a
        thread: Django's request_finished, an export's slot given back)."""
        loop = asyncio.get_running_loop()
        idle = float(settings.RSMQ_EXPORT_IDLE) if self.idle is None else self.idle
        gone = asyncio.Event()

        async def watch() -> None:
            try:
                while (await receive())["type"] != "http.disconnect":
                    pass
            finally:
                gone.set()

        async def sent(message: Message) -> bool:
            """Whether the client took ``message`` within ``idle`` seconds (and is there)."""
            if gone.is_set():
                return False
            try:
                async with asyncio.timeout(idle):
                    await send(message)
            except TimeoutError:
                log.warning(
                    "%s %s: the client took nothing for %g s (RSMQ_EXPORT_IDLE): dropped",
                    scope.get("method"), scope.get("path"), idle,
                )  # fmt: skip
                return False
            except Exception:  # the server refuses further sends: the client went away
                return False
            return True

        watcher = asyncio.create_task(watch())
        pieces: Iterator[bytes] = iter(answer.result)
        making: asyncio.Future[bytes | None] | None = None

        async def close() -> None:
            if making is not None and not making.done():
                with contextlib.suppress(Exception):
                    await making  # a piece being made: never close it under the thread
            await loop.run_in_executor(self.pool, closing, answer.result)

        try:
            if not await sent({"type": "http.response.start", "status": answer.status,
                               "headers": answer.headers}):  # fmt: skip
                return
            while True:
                making = loop.run_in_executor(self.pool, next, pieces, None)
                piece = await making
                if piece is None:
                    break
                if piece and not await sent(
                    {"type": "http.response.body", "body": piece, "more_body": True}
                ):
                    return
            await sent({"type": "http.response.body", "body": b""})
        finally:
            watcher.cancel()
            # shielded: a cancelled answer (the server gave up on it) is closed all the same
            await asyncio.shield(close())


def closing(result: Iterable[bytes]) -> None:
    """A WSGI answer closed: Django's request_finished (its database connections tidied),
    an export's slot given back."""
    close = getattr(result, "close", None)
    if close:
        close()


def too_large(limit: int | None) -> str:
    return f"The request body is larger than {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)."


async def respond(send: Send, status: int, headers: Headers, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def refuse(send: Send, status: int, text: str, scope: Scope) -> None:
    """Answer ``status`` with ``text`` (``{"error": text}`` for the API) and close the
    connection (the rest of the body is never read)."""
    if str(scope.get("path", "")).startswith("/api/"):
        data, kind = json.dumps({"error": text}).encode(), b"application/json"
    else:
        data, kind = f"{text}\n".encode(), b"text/plain; charset=utf-8"
    length = str(len(data)).encode()
    heads = [(b"content-type", kind), (b"content-length", length), (b"connection", b"close")]
    await respond(send, status, heads, data)
