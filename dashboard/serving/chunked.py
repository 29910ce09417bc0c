"""Request bodies sent without a Content-Length (``Transfer-Encoding: chunked``: Node's
``http.request`` + ``write()``, curl ``-T -``, many HTTP libraries streaming a body).

Django reads ``CONTENT_LENGTH`` bytes of ``wsgi.input`` and nothing more, so such a body
reaches a view empty. The WSGI server has already taken the chunks apart (gunicorn,
granian, uWSGI, mod_wsgi do) and says where the body ends: ``wsgi.input_terminated``
(the de-facto extension to PEP 3333) or, from servers that predate it, the
``Transfer-Encoding: chunked`` header passed on with no ``CONTENT_LENGTH``. This WSGI
middleware then reads the body, at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` + 1 bytes of it,
and hands Django a stream of known length; past the limit it answers 413 and nothing runs.
A body whose Content-Length is past the limit gets the same 413 before a byte is read
(Django would answer a bare 400 page; the console takes no file uploads, which the limit
would not count).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings

StartResponse = Callable[..., Any]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

READ_SIZE = 64 * 1024


def announced_length(environ: dict[str, Any]) -> int | None:
    try:
        return int(str(environ.get("CONTENT_LENGTH") or "").strip())
    except ValueError:
        return None


def has_unsized_body(environ: dict[str, Any]) -> bool:
    """A body whose length only its end tells, which the server ends for us."""
    if str(environ.get("CONTENT_LENGTH") or "").strip():
        return False
    chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
    return bool(environ.get("wsgi.input_terminated")) or chunked


def read_at_most(stream: Any, limit: int | None) -> bytes:
    """The stream to its end, or ``limit`` + 1 bytes of it (enough to know it is too big)."""
    parts: list[bytes] = []
    size = 0
    while limit is None or size <= limit:
        want = READ_SIZE if limit is None else min(READ_SIZE, limit + 1 - size)
        part = stream.read(want)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def too_large_text(limit: int | None) -> str:
    return f"The request body is larger than {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)."


def too_large(environ: dict[str, Any], start_response: StartResponse, limit: int) -> list[bytes]:
    text = too_large_text(limit)
    if str(environ.get("PATH_INFO", "")).startswith("/api/"):
        body, kind = json.dumps({"error": text}).encode(), "application/json"
    else:
        body, kind = text.encode(), "text/plain; charset=utf-8"
    start_response(
        "413 Request Entity Too Large",
        [("Content-Type", kind), ("Content-Length", str(len(body))), ("Connection", "close")],
    )
    return [body]


class ChunkedBodies:
    """Wraps a WSGI application: an unsized body read (within the limit) and sized."""

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = announced_length(environ)
        if limit is not None and length is not None and length > limit:
            return too_large(environ, start_response, limit)
        if has_unsized_body(environ):
            body = read_at_most(environ["wsgi.input"], limit)
            if limit is not None and len(body) > limit:
                return too_large(environ, start_response, limit)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return self.app(environ, start_response)
