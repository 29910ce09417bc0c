"""A real HTTP receiver for outbound notifications (webhook, Slack): a server on a port
of its own, on 127.0.0.1 (the tests allow it: RSMQ_OUTBOUND_ALLOW), started and stopped
by the test — a receiver that is down at first is one not yet started."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from queues.server import free_port


class Receiver:
    def __init__(self) -> None:
        self.port = free_port()
        #: each POST's headers (lower-cased names) and body, and the path it went to
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.paths: list[str] = []
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return self.at("/hook")

    def at(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        got, paths = self.got, self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                paths.append(self.path)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A receiver, up (a test that needs it down at first has its own fixture)."""
    r = Receiver()
    r.start()
    yield r
    r.stop()
