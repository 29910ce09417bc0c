"""The served console: gunicorn (gthread) vs granian (WSGI, ASGI) vs Django's runserver,
same run.

    .venv/bin/python -m bench.serve [--seconds 30] [--only granian "4×2"] [--write]

Each server serves the console (DEBUG off, static files collected) on the demo data of an
embedded Redis. Per server: the overview and a message page under 1, 8 and 32 concurrent
clients (each client one keep-alive connection) for ``--seconds`` each: requests/s,
p50/p99, errors; then one client, sequentially, keep-alive vs a new connection per request
(what keep-alive adds). Redis and the servers on core 0, the clients on core 1 (SPEC §10).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from bench.machine import describe
from bench.results import publish
from queues.server import EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def servers(port: int) -> dict[str, list[str]]:
    wsgi = "dashboard.wsgi:application"
    return {
        "gunicorn gthread, 2×8": [
            PY, "-m", "gunicorn", wsgi, "--bind", f"127.0.0.1:{port}", "--worker-class",
            "gthread", "--workers", "2", "--threads", "8", "--preload", "--keep-alive", "5",
            "--no-control-socket",
        ],
        "gunicorn gthread, 4×2": [
            PY, "-m", "gunicorn", wsgi, "--bind", f"127.0.0.1:{port}", "--worker-class",
            "gthread", "--workers", "4", "--threads", "2", "--preload", "--keep-alive", "5",
            "--no-control-socket",
        ],
        "granian wsgi, 2×8": [
            PY, "-m", "granian", "--interface", "wsgi", wsgi, "--host", "127.0.0.1", "--port",
            str(port), "--workers", "2", "--blocking-threads", "8", "--no-log",
        ],
        "granian wsgi, 4×2": [
            PY, "-m", "granian", "--interface", "wsgi", wsgi, "--host", "127.0.0.1", "--port",
            str(port), "--workers", "4", "--blocking-threads", "2", "--no-log",
        ],
        # ./run's (dashboard/management/commands/console.py): dashboard/asgi.py reads a
        # body in the event loop, then Django's WSGI handler runs in a pool of 2 threads
        # (RSMQ_WEB_THREADS) per process (the slow-client test).
        "granian asgi, 4×2 (./run)": [
            PY, "-m", "granian", "--interface", "asgi", "dashboard.asgi:application", "--host",
            "127.0.0.1", "--port", str(port), "--workers", "4", "--no-log",
            "--http1-header-read-timeout", "10000",
        ],
        "runserver (baseline)": [
            PY, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--insecure",
        ],
    }  # fmt: skip


def request(conn: http.client.HTTPConnection, path: str, cookie: str) -> float | None:
    """Seconds one GET took, or None if it failed (the connection is closed then)."""
    t = time.perf_counter()
    try:
        conn.request("GET", path, headers={"Cookie": cookie, "Accept-Encoding": "gzip"})
        r = conn.getresponse()
        r.read()
        if r.status == 200:
            return time.perf_counter() - t
    except (OSError, http.client.HTTPException):
        conn.close()  # the next request opens a new one
    return None


def connect(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def load(port: int, path: str, cookie: str, clients: int, seconds: float) -> dict[str, float]:
    """``clients`` threads, each on its own keep-alive connection, for ``seconds``."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    stop = time.monotonic() + seconds

    def client(i: int) -> None:
        conn = connect(port)
        while time.monotonic() < stop:
            took = request(conn, path, cookie)
            if took is None:
                errors[i] += 1
            else:
                latencies[i].append(took)
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    all_ = sorted(x for lat in latencies for x in lat)
    return {
        "rps": len(all_) / seconds,
        "p50": 1000 * all_[len(all_) // 2] if all_ else float("nan"),
        "p99": 1000 * all_[int(len(all_) * 0.99)] if all_ else float("nan"),
        "errors": sum(errors),
    }


def sequential(port: int, path: str, cookie: str, n: int, keep_alive: bool) -> tuple[float, int]:
    """p50 ms of ``n`` requests one after another, on one connection or each on a new one."""
    times = []
    conn = connect(port)
    for _ in range(n):
        if not keep_alive:
            conn.close()
            conn = connect(port)
        took = request(conn, path, cookie)
        if took is not None:
            times.append(took)
    conn.close()
    return 1000 * statistics.median(times) if times else float("nan"), n - len(times)


def login(port: int) -> str:
    page = urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=10)
    csrf = re.search(r"csrftoken=([^;]+)", page.headers["Set-Cookie"])[1]  # type: ignore[index]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.read().decode())[1]  # type: ignore[index]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = urlencode({"csrfmiddlewaretoken": token, "username": "admin", "password": "admin"})
    conn.request("POST", "/login/", body=body, headers={
        "Cookie": f"csrftoken={csrf}", "Content-Type": "application/x-www-form-urlencoded",
        "Referer": f"http://127.0.0.1:{port}/login/"})  # fmt: skip
    r = conn.getresponse()
    r.read()
    session = re.search(r"sessionid=([^;]+)", r.getheader("Set-Cookie") or "")
    assert r.status == 302 and session, r.status
    return f"csrftoken={csrf}; sessionid={session[1]}"


def wait_up(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("server did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30, help="per cell and round")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (median)")
    ap.add_argument("--sequential", type=int, default=300, help="requests per latency figure")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--only", nargs="*", help="only the servers whose names contain one of these")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    redis = EmbeddedRedis(tmp / "redis").start()
    env = dict(
        os.environ, RSMQ_DATA_DIR=str(tmp), RSMQ_REDIS_URL=redis.url, DEBUG="0",
        SECRET_KEY="bench-" + "x" * 60, PYTHONUNBUFFERED="1",
    )  # fmt: skip
    env.pop("RSMQ_CONNECTIONS", None)
    manage = [PY, "manage.py"]
    for cmd in (["migrate", "-v0"], ["collectstatic", "--noinput", "-v0"], ["demo"]):
        subprocess.run([*manage, *cmd], cwd=ROOT, env=env, check=True, capture_output=True)
    subprocess.run(["taskset", "-acp", "0", str(redis.process.pid)], check=True,  # type: ignore[union-attr]
                   capture_output=True)  # fmt: skip
    os.sched_setaffinity(0, {1})
    mid = json.loads(
        subprocess.run(
            [*manage, "rsmq", "message", "list", "-n", "emails", "--limit", "1"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout  # fmt: skip
    )["items"][0]["id"]
    pages = {"overview": "/c/default/rsmq/", "message page": f"/c/default/rsmq/q/emails/m/{mid}/"}
    ports = {
        name: free_port()
        for name in servers(0)
        if not args.only or any(part in name for part in args.only)
    }
    processes = {}
    try:
        for name, port in ports.items():
            processes[name] = subprocess.Popen(
                ["taskset", "-c", "0", *servers(port)[name]], cwd=ROOT, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        cookies = {}
        for name, port in ports.items():
            wait_up(port, processes[name])
            cookies[name] = login(port)
            for path in pages.values():
                load(port, path, cookies[name], 4, 2)  # warm up every thread / worker
        # Interleaved: each cell once per server per round, the median of the rounds, so
        # the other load of a shared machine falls on every server alike.
        cells: dict[tuple[str, str, int], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for page, path in pages.items():
                for clients in (1, 8, 32):
                    for name, port in ports.items():
                        r = load(port, path, cookies[name], clients, args.seconds)
                        cells.setdefault((name, page, clients), []).append(r)
                        print(name, page, clients, r, flush=True)
        rows = [(*key, median_of(runs)) for key, runs in sorted(cells.items(), key=order)]
        latency = []
        path = pages["message page"]
        for name, port in ports.items():
            ka, ka_err = sequential(port, path, cookies[name], args.sequential, True)
            new, new_err = sequential(port, path, cookies[name], args.sequential, False)
            latency.append((name, ka, new, ka_err + new_err))
            print(name, "keep-alive", ka, "new", new, ka_err + new_err, flush=True)
    finally:
        for process in processes.values():
            os.killpg(process.pid, 15)
            process.wait(30)
        redis.stop()
    publish(report(rows, latency, args), args.write)


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]} | {
        "errors": sum(r["errors"] for r in runs)
    }


def order(item: tuple[tuple[str, str, int], object]) -> tuple[int, str, int]:
    (name, page, clients), _ = item
    return list(servers(0)).index(name), page != "overview", clients


def report(rows: list, latency: list, args: argparse.Namespace) -> str:  # type: ignore[type-arg]
    out = [
        "## Served console (`bench/serve.py`)",
        "",
        f"{describe()}; load average {os.getloadavg()[0]:.1f} at the end (a shared machine)."
        f" {args.seconds:.0f} s per cell, median of {args.rounds} interleaved rounds (errors: the"
        " sum); servers and Redis on core 0, clients on core 1;"
        " each client one keep-alive connection; DEBUG off, demo data, logged in as admin.",
        "",
        "| server | page | clients | requests/s | p50 ms | p99 ms | errors |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for name, page, clients, r in rows:
        out.append(
            f"| {name} | {page} | {clients} | {r['rps']:.0f} | {r['p50']:.1f} | "
            f"{r['p99']:.1f} | {r['errors']} |"
        )
    out += [
        "",
        f"One client, {args.sequential} requests one after another to the message page: p50 "
        "on one keep-alive connection vs a new connection per request.",
        "",
        "| server | keep-alive p50 ms | new connection p50 ms | keep-alive adds | errors |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, ka, new, errors in latency:
        out.append(f"| {name} | {ka:.1f} | {new:.1f} | {ka - new:+.1f} ms | {errors} |")
    out += [
        "",
        'runserver\'s errors are 503s "Too many connections": it starts a thread per connection'
        " and queues/client.py keeps one Redis connection per thread that its pool never gets"
        " back, so after 100 connections every page fails (the leak of issue 9, fixed on the"
        " core branch). The gunicorn and granian pools have a fixed number of threads.",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    main()
