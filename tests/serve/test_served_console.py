"""`./run` from a fresh clone, served for real: one console for the whole module, in order —
2,000 requests on new connections (pages, /readyz and the API in turn), static files, a
second ./run, Redis and the worker killed, then SIGTERM leaving nothing behind."""

from __future__ import annotations

import gzip
import re
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from support.served import Served, make_token, processes_in, request, run_env, start

pytestmark = pytest.mark.slow

PAGE = "/c/default/rsmq/q/emails/"  # reads Redis: counts, attributes, a page of messages


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    console = start(clone)
    try:
        console.wait_ready()
        console.login()
        yield console
    finally:
        console.stop()


def child(served: Served, marker: str) -> psutil.Process:
    found = [
        p for p in processes_in(served.clone) if marker in " ".join(p.cmdline())
    ]  # fmt: skip
    assert len(found) == 1, [p.cmdline() for p in found]
    return found[0]


def test_it_answers_2000_requests_on_new_connections_all_200(served: Served) -> None:
    """Each request on a connection of its own, from 8 clients at once, to the three ways
    a request is answered, in turn: a page Django renders from Redis, a Django view that
    asks every Redis and the database (/readyz), and the API's fast path (the pipelined
    client). A page costs the server ~40 ms of CPU, the others a few: 2,000 pages would
    be most of a minute of a core for what a third of them shows as well."""
    bearer = {"Authorization": f"Bearer {make_token(served, 'many', 'viewer', 100_000)}"}
    routes = [
        lambda: served.get(PAGE),
        lambda: request(served.port, "/readyz"),
        lambda: request(served.port, "/api/queues/emails/", headers=bearer),
    ]

    def one(i: int) -> tuple[int, int]:
        route = i % len(routes)
        return route, routes[route]().status

    with ThreadPoolExecutor(8) as pool:
        answers = Counter(pool.map(one, range(2000)))
    assert answers == {(0, 200): 667, (1, 200): 667, (2, 200): 666}, answers
    metrics = served.get("/metrics").text
    assert 'rsmq_up{connection="default",namespace="rsmq"} 1.0' in metrics


def test_it_serves_hashed_compressed_css_with_debug_off(served: Served) -> None:
    page = served.get(PAGE, {"Accept-Encoding": "gzip"})
    assert page.headers.get("content-encoding") == "gzip"
    text = gzip.decompress(page.body).decode()
    assert "Traceback" not in text
    css = re.search(r'href="(/static/css/console\.[0-9a-f]{12}\.css)"', text)
    assert css, "a hashed name: collectstatic ran, DEBUG is off"
    answer = served.get(css[1], {"Accept-Encoding": "gzip"})
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("text/css")
    assert answer.headers["content-encoding"] == "gzip"
    assert "immutable" in answer.headers["cache-control"]
    assert served.get("/static/css/console.css").status == 200  # the plain name too


def test_favicon_ico_leads_to_the_icon(served: Served) -> None:
    """Browsers ask for /favicon.ico whatever a page links: no 404 in their console."""
    answer = served.get("/favicon.ico")
    assert answer.status == 302
    icon = re.fullmatch(r"/static/favicon\.[0-9a-f]{12}\.svg", answer.headers["location"])
    assert icon, answer.headers["location"]
    got = served.get(icon[0])
    assert got.status == 200 and got.headers["content-type"].startswith("image/svg+xml")
    assert got.body.startswith(b"<svg")
    page = served.get(PAGE).text
    assert f'<link rel="icon" href="{icon[0]}"' in page


def test_health_endpoints_answer_without_a_login(served: Served) -> None:
    assert request(served.port, "/healthz").status == 200
    ready = request(served.port, "/readyz")
    assert ready.status == 200, ready.text
    assert '"redis:default": "ok"' in ready.text and '"database": "ok"' in ready.text


def test_a_second_run_on_the_same_address_exits_and_starts_nothing(served: Served) -> None:
    before = {p.pid for p in processes_in(served.clone)}
    second = subprocess.run(
        [str(served.clone / "run"), f"127.0.0.1:{served.port}"],
        cwd=served.clone, env=run_env(), stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=60,
    )  # fmt: skip
    assert second.returncode != 0
    lines = second.stderr.strip().splitlines()
    assert lines and f"127.0.0.1:{served.port} is in use" in lines[-1], second.stderr
    assert {p.pid for p in processes_in(served.clone)} == before


def test_redis_killed_is_restarted_and_pages_answer_again_within_30s(served: Served) -> None:
    redis = child(served, f":{served.redis_port}")
    redis.send_signal(signal.SIGKILL)
    redis.wait(5)
    deadline = time.monotonic() + 30
    status = None
    while time.monotonic() < deadline and served.process.poll() is None:
        try:
            status = served.get(PAGE).status
        except OSError:
            status = None
        if status == 200:
            break
        time.sleep(0.5)
    assert status == 200 or (served.process.poll() or 0) != 0, served.output()[-2000:]
    assert "the embedded Redis killed by SIGKILL: restarting it" in served.output()
    # The data survived: the demo queue is still there (the append-only file).
    assert "emails" in served.get("/c/default/rsmq/").text


def test_the_celery_worker_killed_is_restarted(served: Served) -> None:
    worker = child(served, "celery --app dashboard worker")
    worker.send_signal(signal.SIGKILL)
    worker.wait(5)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        again = [
            p for p in processes_in(served.clone) if "dashboard worker" in " ".join(p.cmdline())
        ]
        if again and again[0].pid != worker.pid:
            break
        time.sleep(0.3)
    else:
        pytest.fail("no new worker:\n" + served.output()[-2000:])
    assert "the Celery worker killed by SIGKILL: restarting it (1/5)" in served.output()


def test_sigterm_stops_everything_in_order_and_leaves_nothing(served: Served) -> None:
    pids = {p.pid for p in processes_in(served.clone)}
    assert len(pids) >= 5  # run (python), granian + its workers, worker (beat in it), redis
    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(60) == 0, served.output()[-2000:]
    assert processes_in(served.clone) == []
    out = served.output()
    assert "stopping the web server, the Celery worker, the embedded Redis" in out
    assert not (served.clone / ".data" / "redis.url").exists()
