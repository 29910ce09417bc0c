"""rest-rsmq's own suite (its test/test.js, 14 tests: tests/node/rest_rsmq_suite.js) sent
by Node, as its http.js sends it (http.request + write(): Transfer-Encoding chunked, no
Content-Length), against `./run` as users start it, with an admin token: all 14 pass,
with JSON bodies and form-encoded ones. Bodies of no length on the console's own forms
too, and past DATA_UPLOAD_MAX_MEMORY_SIZE a 413 that changes nothing."""

from __future__ import annotations

import html
import json
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from support.served import ROOT, Served, call, cookies, make_token, serving

pytestmark = pytest.mark.slow

SUITE = ROOT / "tests" / "node" / "rest_rsmq_suite.js"


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    with serving(clone, "--no-celery", log_name="rest-rsmq-suite.log") as console:
        yield console


@pytest.fixture(scope="module")
def token(served: Served) -> str:
    return make_token(served, "rest-rsmq-suite", "admin", per_minute=100_000)


def node_suite(served: Served, token: str, form: bool) -> dict[str, list[dict[str, object]]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    config = {"port": served.port, "base": "/api/rest-rsmq", "token": token, "form": form}
    done = subprocess.run(
        [node, str(SUITE), json.dumps(config)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[dict[str, object]]] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("form", [False, True], ids=["json", "form"])
def test_rest_rsmqs_suite_passes_whole_as_node_sends_it(
    served: Served, token: str, form: bool
) -> None:
    out = node_suite(served, token, form)
    failed = [(t["name"], t["error"]) for t in out["tests"] if not t["ok"]]
    assert failed == [] and len(out["tests"]) == 14
    # The bodies went as Node sends them: chunked, no length.
    posts = [r for r in out["requests"] if r["method"] == "POST"]
    assert len(posts) == 3
    for r in posts:
        head = str(r["header"]).lower()
        assert "transfer-encoding: chunked" in head and "content-length" not in head, head


def chunked(
    served: Served, method: str, path: str, parts: list[bytes], headers: dict[str, str],
    sized: bool = False,
) -> tuple[int, bytes]:  # fmt: skip
    """A body in chunks of no announced length, as Node writes it (``sized``: the same
    bytes with a Content-Length). A server may answer (413) and close before the last
    chunk: the answer is read all the same."""
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=30)
    length = sum(len(p) for p in parts)
    framing = f"Content-Length: {length}" if sized else "Transfer-Encoding: chunked"
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{served.port}", framing,
            "Connection: close"]  # fmt: skip
    head += [f"{k}: {v}" for k, v in headers.items()]
    try:
        try:
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            for part in parts:
                sock.sendall(part if sized else b"%x\r\n%s\r\n" % (len(part), part))
            if not sized:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # it answered before reading it all
        answer = b""
        while True:
            try:
                got = sock.recv(65536)
            except ConnectionResetError:
                break
            if not got:
                break
            answer += got
    finally:
        sock.close()
    status_line, _, rest = answer.partition(b"\r\n")
    headers_raw, _, body = rest.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in headers_raw.lower():
        body = unchunk(body)
    return int(status_line.split()[1]), body


def unchunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2 :]
    return out


def test_a_console_form_posted_chunked_is_read(served: Served) -> None:
    """The console's own forms (here: create a queue) take a body of no length too."""
    page = served.get("/")
    base = page.headers.get("location", "/") if page.status == 302 else "/"
    page = served.get(base)
    assert page.status == 200, page.text[:300]
    served.cookies.update(cookies(page))
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert csrf, page.text[:500]
    form = urlencode({"csrfmiddlewaretoken": html.unescape(csrf[1]), "name": "chunkedform",
                      "vt": "45", "delay": "0", "maxsize": "4096"}).encode()  # fmt: skip
    status, body = chunked(
        served, "POST", base + "create/", [form[:20], form[20:]],
        {"Cookie": "; ".join(f"{k}={v}" for k, v in served.cookies.items()),
         "Content-Type": "application/x-www-form-urlencoded",
         "Referer": f"http://127.0.0.1:{served.port}{base}"},
    )  # fmt: skip
    assert status in (200, 302), body[:500]
    admin = make_token(served, "form-check", "viewer")
    detail = json.loads(call(served, "GET", "/api/queues/chunkedform/", admin).body)
    attrs = detail["attributes"]
    assert (attrs["vt"], attrs["maxsize"]) == (45, 4096), detail


def test_a_chunked_body_past_the_limit_is_413_and_changes_nothing(
    served: Served, token: str
) -> None:
    # DATA_UPLOAD_MAX_MEMORY_SIZE: Django's default, 2.5 MiB; 3 MiB sent in 64 KiB chunks.
    pad = json.dumps({"vt": 20, "pad": "x" * (3 * 1024 * 1024)}).encode()
    parts = [pad[i : i + 65536] for i in range(0, len(pad), 65536)]
    for sized in (False, True):  # chunked, and with a Content-Length: the same 413
        status, body = chunked(
            served, "POST", "/api/rest-rsmq/queues/toolarge", parts,
            {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, sized,
        )  # fmt: skip
        assert status == 413 and "2621440 bytes" in json.loads(body)["error"], sized
    listed = json.loads(call(served, "GET", "/api/rest-rsmq/queues", token).body)
    assert "toolarge" not in listed["queues"]
