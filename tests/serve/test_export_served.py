"""A streamed export as `./run` serves it (dashboard/serving/app.py ``Console.stream``): the
served process sends an export piece by piece — its web workers' memory grows by a few MB while
an export of over 100 MB goes out, where collecting the whole response (as every other
answer is) would hold all of it — and the lines arrive whole and in order. The queue
page's Import form works through the served process; a file over an import's 2 MB is the
form's error, one past the server's body limit a 413 — nothing written either way."""

from __future__ import annotations

import html
import http.client
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import redis
from support.served import Response, Served, cookies, make_token, processes_in, request, serving

from queues import RedisSMQ

pytestmark = pytest.mark.slow

MESSAGES = 300_000
BODY = "x" * 300  # ~400-byte lines: an export of ~120 MB


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    with serving(clone, "--no-celery", log_name="export.log") as console:
        yield console


def web_workers(clone: Path) -> list[psutil.Process]:
    return [p for p in processes_in(clone) if "granian" in " ".join(p.cmdline())]


def test_a_big_export_streams_with_flat_memory(served: Served) -> None:
    rsmq = RedisSMQ(url=f"redis://127.0.0.1:{served.redis_port}/0", ns="rsmq")
    rsmq.create_queue("big", maxsize=-1)
    for i in range(0, MESSAGES, 10_000):
        rsmq.send_messages("big", [f"{BODY}{n}" for n in range(i, i + 10_000)])
    token = make_token(served, "exporter", "viewer")
    workers = web_workers(served.clone)
    assert workers
    before = {p.pid: p.memory_info().rss for p in workers}
    peak = dict(before)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            for p in workers:
                try:
                    peak[p.pid] = max(peak[p.pid], p.memory_info().rss)
                except psutil.NoSuchProcess:
                    pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=120)
    lines = size = 0
    first = last = ""
    try:
        conn.request("GET", "/api/queues/big/export/", headers={"Authorization": f"Bearer {token}"})
        r = conn.getresponse()
        assert r.status == 200
        assert (
            r.getheader("Content-Length") is None and r.getheader("Transfer-Encoding") == "chunked"
        )
        rest = b""
        while piece := r.read(1 << 16):
            size += len(piece)
            *whole, rest = (rest + piece).split(b"\n")
            for line in whole:
                body = json.loads(line)["body"]
                first = first or body
                last = body
                lines += 1
        assert rest == b""
    finally:
        done.set()
        sampler.join()
        conn.close()
    assert lines == MESSAGES and size > 100_000_000
    assert (first, last) == (f"{BODY}0", f"{BODY}{MESSAGES - 1}")
    grown = max(peak[pid] - before[pid] for pid in before)
    # one browse page and one piece at a time: a few MB, never the ~120 MB sent
    assert grown < 25_000_000, f"a web worker grew by {grown / 1e6:.1f} MB"
    # the console still answers while (and after) an export held a thread
    assert served.get("/healthz").status == 200


def post_import(served: Served, qname: str, data: bytes) -> Response:
    """The queue page's Import form, as a browser posts it (multipart, its CSRF token)."""
    page = served.get(f"/c/default/rsmq/q/{qname}/")
    served.cookies.update(cookies(page))
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert csrf, page.text[:500]
    boundary = "----rsmqboundary7f3a"
    parts = [
        ("csrfmiddlewaretoken", None, html.unescape(csrf[1]).encode()),
        ("action", None, b"import"),
        ("file", "x.jsonl", data),
    ]
    body = b""
    for name, filename, value in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
        body += value + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return request(
        served.port, f"/c/default/rsmq/q/{qname}/act/", "POST", body=body, timeout=60,
        headers={"Cookie": "; ".join(f"{k}={v}" for k, v in served.cookies.items()),
                 "Content-Type": f"multipart/form-data; boundary={boundary}",
                 "Referer": f"http://127.0.0.1:{served.port}/c/default/rsmq/q/{qname}/",
                 "HX-Request": "true"},
    )  # fmt: skip


def test_the_import_form_through_the_served_process(served: Served) -> None:
    rsmq = RedisSMQ(url=f"redis://127.0.0.1:{served.redis_port}/0", ns="rsmq")
    rsmq.create_queue("restored", maxsize=-1)
    small = b"".join(json.dumps({"body": f"m{i}"}).encode() + b"\n" for i in range(1000))
    answer = post_import(served, "restored", small)
    assert answer.status == 200, answer.text[:500]
    assert "Imported 1000 messages in 2 batches" in answer.text
    assert rsmq.get_queue_attributes("restored").msgs == 1000
    big = json.dumps({"body": "x" * 1000}).encode() + b"\n"
    answer = post_import(served, "restored", big * 2200)  # 2.2 MB: past an import's 2 MB
    assert answer.status == 422, answer.text[:500]
    assert "use `rsmq message import` for a larger file" in html.unescape(answer.text)
    answer = post_import(served, "restored", big * 3500)  # 3.5 MB: past the server's limit
    assert answer.status == 413, answer.text[:500]  # refused before Django, never cut short
    assert rsmq.get_queue_attributes("restored").msgs == 1000


def test_a_client_gone_mid_export_stops_it(served: Served) -> None:
    """The export's thread stops reading Redis soon after its client leaves."""
    rsmq = RedisSMQ(url=f"redis://127.0.0.1:{served.redis_port}/0", ns="rsmq")
    rsmq.create_queue("leaving", maxsize=-1)
    for i in range(0, 200_000, 10_000):
        rsmq.send_messages("leaving", [f"{BODY}{n}" for n in range(i, i + 10_000)])
    token = make_token(served, "leaver", "viewer")
    raw = redis.Redis(port=served.redis_port)

    def calls() -> int:
        return int(raw.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=60)
    conn.request("GET", "/api/queues/leaving/export/", headers={"Authorization": f"Bearer {token}"})
    answer = conn.getresponse()
    assert answer.status == 200
    assert len(answer.read(1 << 20)) == 1 << 20
    conn.sock.close()  # type: ignore[union-attr]
    conn.close()
    time.sleep(2)
    settled = calls()
    time.sleep(2)
    assert calls() - settled <= 2  # stopped (an export of 80 MB would still be reading)
    assert served.get("/healthz").status == 200
