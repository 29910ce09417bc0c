"""Slow clients against the console as `./run` serves it (issue 23, SPEC §10: "200
connections trickling headers: normal requests still answered within 1 s"): 200
connections trickle their headers a line a second and 50 trickle a body a byte a second;
meanwhile /healthz, /readyz, a logged-in page and an API call each answer within 1 s, and
the server closes every slow connection once its timeout has passed. A chunked request
body (Node's http module sends them) reaches the API whole."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.served import Response, Served, request, run_env, start

pytestmark = pytest.mark.slow

HEADERS, BODIES = 200, 50
TIMEOUT = 5  # s: RSMQ_HEADER_TIMEOUT and RSMQ_BODY_TIMEOUT of the served console
PAGE = "/c/default/rsmq/q/emails/"  # reads Redis: counts, attributes, a page of messages


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    console = start(
        clone, "--no-celery", log_name="slow.log",
        RSMQ_HEADER_TIMEOUT=str(TIMEOUT), RSMQ_BODY_TIMEOUT=str(TIMEOUT),
    )  # fmt: skip
    try:
        console.wait_ready()
        console.login()
        yield console
    finally:
        console.stop()


def make_token(served: Served, name: str, role: str) -> str:
    """An API token, made as an admin would in a shell on the served console's data."""
    mint = (
        "from dashboard.access.tokens import mint;"
        f" print(mint({name!r}, {role!r}, 'test', 1000)[1])"
    )
    done = subprocess.run(
        [str(served.clone / ".venv/bin/python"), "manage.py", "shell", "-c", mint],
        cwd=served.clone, env=run_env(), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout.strip().splitlines()[-1]


def call(served: Served, method: str, path: str, token: str, body: object = None) -> Response:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    return request(served.port, path, method, headers=headers, body=data)


class Trickler:
    """Slow connections, each sending one more piece every second from a thread of its
    own until the server closes it; what each received before the close is kept."""

    def __init__(self, port: int, headers: int, bodies: int) -> None:
        self.socks: list[socket.socket] = []
        for i in range(headers + bodies):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            if i < headers:  # a request line, then one header line a second, never the end
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            else:  # whole headers, then a 1,000-byte body a byte a second
                s.sendall(
                    b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                    b"application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n"
                )
            s.setblocking(False)
            self.socks.append(s)
        self.headers = headers
        self.received: dict[int, bytes] = {i: b"" for i in range(len(self.socks))}
        self.closed_at: dict[int, float] = {}
        self.started = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set() and len(self.closed_at) < len(self.socks):
            n += 1
            for i, s in enumerate(self.socks):
                if i in self.closed_at:
                    continue
                self._read(i, s)
                if i in self.closed_at:
                    continue
                try:
                    s.send(f"X-Slow-{n}: a\r\n".encode() if i < self.headers else b"a")
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    self.closed_at[i] = time.monotonic() - self.started
            self.stop.wait(1.0)

    def _read(self, i: int, s: socket.socket) -> None:
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    self.closed_at[i] = time.monotonic() - self.started
                    return
                self.received[i] += data
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # reset by the server
            self.closed_at[i] = time.monotonic() - self.started

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


def test_normal_requests_answer_within_1s_while_250_clients_trickle(served: Served) -> None:
    token = make_token(served, "slow-clients", "viewer")
    cookie = "; ".join(f"{k}={v}" for k, v in served.cookies.items())
    normal = {
        "/healthz": {},
        "/readyz": {},
        PAGE: {"Cookie": cookie},
        "/api/queues/emails/": {"Authorization": f"Bearer {token}"},
    }
    # Every web process has answered before (a console that has been up a while): a
    # process's first page and API call also load its templates and connections.
    for _ in range(8):
        for path, headers in normal.items():
            assert request(served.port, path, headers=headers).status == 200
    trickler = Trickler(served.port, HEADERS, BODIES)
    answers: list[tuple[str, int, float]] = []
    try:
        # Every slow connection is open and trickling: normal requests, each on a new
        # connection, for most of the timeout.
        while time.monotonic() - trickler.started < TIMEOUT - 1:
            for path, headers in normal.items():
                t = time.monotonic()
                conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=5)
                try:
                    conn.request("GET", path, headers=headers)
                    r = conn.getresponse()
                    r.read()
                    answers.append((path, r.status, round(time.monotonic() - t, 3)))
                except OSError as e:
                    answers.append((f"{path} ({e})", 0, time.monotonic() - t))
                finally:
                    conn.close()
        open_during = len(trickler.socks) - len(trickler.closed_at)
        # Then the server closes each slow connection once its timeout has passed.
        deadline = time.monotonic() + TIMEOUT + 10
        while len(trickler.closed_at) < len(trickler.socks) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        trickler.close()
    assert open_during == HEADERS + BODIES, "the slow connections were open meanwhile"
    assert len(answers) >= 4 * 3, answers
    slow_or_failed = [a for a in answers if a[1] != 200 or a[2] > 1.0]
    assert not slow_or_failed, (slow_or_failed, answers)
    assert len(trickler.closed_at) == HEADERS + BODIES, (
        f"{HEADERS + BODIES - len(trickler.closed_at)} slow connections still open "
        f"{TIMEOUT + 10} s after their timeout"
    )
    assert min(trickler.closed_at.values()) >= TIMEOUT - 1.5  # by the timeout, not before
    # A body that never arrives is answered 408 (the connection closed after it).
    for i in range(HEADERS, HEADERS + BODIES):
        assert trickler.received[i].startswith(b"HTTP/1.1 408"), trickler.received[i][:200]


def test_a_chunked_request_body_reaches_the_api_whole(served: Served) -> None:
    token = make_token(served, "chunked", "admin")
    assert call(served, "PUT", "/api/queues/chunked/", token, {"vt": 30}).status == 201
    body = json.dumps({"message": "sent in chunks, " + "x" * 5000}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    try:
        # No Content-Length: Transfer-Encoding: chunked, in pieces of 1,000 bytes.
        conn.request(
            "POST", "/api/queues/chunked/messages/",
            body=(body[i : i + 1000] for i in range(0, len(body), 1000)),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            encode_chunked=True,
        )  # fmt: skip
        sent = conn.getresponse()
        assert sent.status == 201, sent.read()[:500]
        mid = json.loads(sent.read())["id"]
    finally:
        conn.close()
    got = call(served, "POST", "/api/queues/chunked/receive/", token, {"n": 1})
    [message] = json.loads(got.body)["messages"]
    assert (message["id"], message["message"]) == (mid, json.loads(body)["message"])
