"""A body that ends before it is whole — granian hands the application an
``http.disconnect`` for a malformed chunked body (a chunk longer or shorter than its
stated size), as for a client gone mid-body — is answered 400, saying why, and logged:
never a bare 500 with nothing in the log, and nothing runs."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from dashboard.serving.app import Console


def test_a_body_cut_short_is_a_logged_400(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[dict[str, Any]] = []
    app = Console(lambda environ, start: ran.append(environ) or [], 1, 5.0, 10_000, None)
    messages = [
        {"type": "http.request", "body": b'{"mess', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http", "http_version": "1.1", "method": "POST", "path": "/api/queues/q1/messages/",
        "query_string": b"", "root_path": "", "scheme": "http",
        "headers": [(b"host", b"x"), (b"transfer-encoding", b"chunked")],
    }  # fmt: skip
    caplog.set_level(logging.WARNING, "dashboard.serving.app")
    asyncio.run(app(scope, receive, send))

    assert sent[0]["status"] == 400 and not ran
    assert json.loads(sent[1]["body"])["error"].startswith(
        "The request's body is malformed or was cut short"
    )
    assert "POST /api/queues/q1/messages/: the request's body ended after 6 bytes" in caplog.text
