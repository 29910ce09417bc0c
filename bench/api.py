"""The HTTP API's cost: send + receive over HTTP vs the same operations through the
Python client (queues.RedisSMQ), in the same run.

    .venv/bin/python -m bench.api [--seconds 10] [--rounds 1] [--write]

The console is served as ./run serves it (granian, 4 processes × 2 Django threads;
``--server gunicorn``: gthread 4×2, --preload, as before issue 23; DEBUG off; SQLite,
where every call's audit row and its token's rate count are written) on an embedded
Redis. Each client, in a loop: send one message, receive one
— over the native routes (``POST /api/queues/<q>/messages/``, ``POST …/receive/``), over
rest-rsmq's (``POST`` / ``GET /api/rest-rsmq/messages/<q>``), each client on its own
keep-alive connection with an operator's token; and through ``RedisSMQ``, each client
thread its own. 1, 8 and 32 concurrent clients. Redis and the server on core 0, the clients
on core 1 (SPEC §10). Any answer but a 2xx, or an exception, is an error.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from bench.machine import describe
from bench.results import publish
from bench.serve import wait_up
from queues import RedisSMQ
from queues.server import EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CLIENTS = (1, 8, 32)
QUEUE = "bench-api"


def granian(port: int) -> list[str]:
    """./run's web server (dashboard/management/commands/console.py), on ``port``."""
    return [
        PY, "-m", "granian", "--interface", "asgi", "dashboard.asgi:application", "--host",
        "127.0.0.1", "--port", str(port), "--workers", "4", "--no-log",
        "--http1-header-read-timeout", "10000", "--no-ws",
    ]  # fmt: skip


def gunicorn(port: int) -> list[str]:
    """The web server ./run had before issue 23 (``--server gunicorn``), on ``port``."""
    return [
        PY, "-m", "gunicorn", "dashboard.wsgi:application", "--bind", f"127.0.0.1:{port}",
        "--worker-class", "gthread", "--workers", "4", "--threads", "2", "--preload",
        "--graceful-timeout", "10", "--keep-alive", "5", "--no-control-socket",
    ]  # fmt: skip


class Http:
    """One client's keep-alive connection, its token, and the two calls of a loop."""

    def __init__(self, port: int, token: str, routes: str) -> None:
        self.port, self.routes = port, routes
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body: dict[str, object] | None) -> bool:
        try:
            data = json.dumps(body).encode() if body is not None else None
            self.conn.request(method, path, body=data, headers=self.headers)
            r = self.conn.getresponse()
            r.read()
            return 200 <= r.status < 300
        except (OSError, http.client.HTTPException):
            self.conn.close()  # the next call opens a new one
            return False

    def loop(self) -> int:
        """One send and one receive: how many of the two failed."""
        if self.routes == "native":
            sent = self.call("POST", f"/api/queues/{QUEUE}/messages/", {"message": "hello"})
            got = self.call("POST", f"/api/queues/{QUEUE}/receive/", {"n": 1, "vt": 30})
        else:
            sent = self.call("POST", f"/api/rest-rsmq/messages/{QUEUE}", {"message": "hello"})
            got = self.call("GET", f"/api/rest-rsmq/messages/{QUEUE}?vt=30", None)
        return (not sent) + (not got)


class Direct:
    """The same loop through the Python client, a RedisSMQ of the client thread's own."""

    def __init__(self, url: str) -> None:
        self.rsmq = RedisSMQ(url=url, ns="rsmq")

    def loop(self) -> int:
        try:
            self.rsmq.send_message(QUEUE, "hello")
            self.rsmq.receive_message(QUEUE, vt=30)
            return 0
        except Exception:
            return 2


def load(make: Callable[[], Http | Direct], clients: int, seconds: float) -> dict[str, float]:
    """``clients`` threads looping for ``seconds``: operations (a send or a receive) per s."""
    loops, errors = [0] * clients, [0] * clients
    workers = [make() for _ in range(clients)]
    stop = time.monotonic() + seconds

    def run(i: int) -> None:
        while time.monotonic() < stop:
            errors[i] += workers[i].loop()
            loops[i] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"ops": 2 * sum(loops) / seconds, "errors": sum(errors)}


SERVED = {
    "granian": "./run's granian (4 processes × 2 Django threads, dashboard/asgi.py)",
    "gunicorn": "gunicorn (gthread 4×2, --preload; ./run's before issue 23)",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10, help="per cell and round")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (median)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument(
        "--server", choices=("granian", "gunicorn"), default="granian",
        help="granian: ./run's (dashboard/asgi.py); gunicorn: gthread 4×2, as before",
    )  # fmt: skip
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-api-"))
    redis = EmbeddedRedis(tmp / "redis").start()
    env = dict(
        os.environ, RSMQ_DATA_DIR=str(tmp), RSMQ_REDIS_URL=redis.url, DEBUG="0",
        SECRET_KEY="bench-" + "x" * 60, PYTHONUNBUFFERED="1",
    )  # fmt: skip
    for k in ("RSMQ_CONNECTIONS", "RSMQ_NAMESPACE", "DATABASE_URL", "RSMQ_READ_ONLY"):
        env.pop(k, None)
    manage = [PY, "manage.py"]
    for cmd in (["migrate", "-v0"], ["collectstatic", "--noinput", "-v0"]):
        subprocess.run([*manage, *cmd], cwd=ROOT, env=env, check=True, capture_output=True)
    mint = (
        "from dashboard.tokens import mint; "
        "print(mint('bench', 'operator', 'bench/api.py', 1_000_000)[1])"
    )
    token = subprocess.run(
        [*manage, "shell", "-c", mint], cwd=ROOT, env=env, check=True, capture_output=True,
        text=True,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    RedisSMQ(url=redis.url, ns="rsmq").create_queue(QUEUE)
    subprocess.run(["taskset", "-acp", "0", str(redis.process.pid)], check=True,  # type: ignore[union-attr]
                   capture_output=True)  # fmt: skip
    port = free_port()
    server = subprocess.Popen(
        ["taskset", "-c", "0", *{"granian": granian, "gunicorn": gunicorn}[args.server](port)],
        cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    os.sched_setaffinity(0, {1})
    contenders: dict[str, Callable[[], Http | Direct]] = {
        "HTTP, /api/ routes": lambda: Http(port, token, "native"),
        "HTTP, /api/rest-rsmq/": lambda: Http(port, token, "rest"),
        "Python client (RedisSMQ)": lambda: Direct(redis.url),
    }
    cells: dict[tuple[str, int], list[dict[str, float]]] = {}
    try:
        wait_up(port, server)
        for make in contenders.values():
            load(make, 8, 2)  # warm up every worker and thread
        # Interleaved: each cell once per contender per round, the median of the rounds.
        for _ in range(args.rounds):
            for clients in CLIENTS:
                for name, make in contenders.items():
                    r = load(make, clients, args.seconds)
                    cells.setdefault((name, clients), []).append(r)
                    print(name, clients, r, flush=True)
        load_end = os.getloadavg()[0]
    finally:
        os.killpg(server.pid, 15)
        server.wait(30)
        redis.stop()
    publish(report(cells, args, load_end), args.write)


def report(cells: dict[tuple[str, int], list[dict[str, float]]], args: argparse.Namespace,
           load_end: float) -> str:  # fmt: skip
    def ops(name: str, clients: int) -> float:
        return statistics.median(r["ops"] for r in cells[(name, clients)])

    direct = "Python client (RedisSMQ)"
    out = [
        "## HTTP API vs the Python client (`bench/api.py`)",
        "",
        f"{describe()}; load average {load_end:.1f} at the end (a shared machine: other"
        f" engineers' runs too). {args.seconds:.0f} s per cell, median of {args.rounds}"
        " interleaved rounds (errors: the sum). Each client loops send one + receive one;"
        f" ops/s counts both. HTTP: {SERVED[args.server]} (DEBUG off,"
        " SQLite: an audit row and the token's rate count per call), an operator's token,"
        " a keep-alive connection per client. Redis and the server on core 0, clients on core 1.",
        "",
        "What bounds HTTP here: each call is one database transaction (the token's rate"
        " count and the audit row, bench/api.py's docstring) committed durably on SQLite, and"
        " SQLite takes one writer at a time, so more clients do not add throughput; the"
        " Python client writes no audit row.",
        "",
        "| contender | clients | ops/s | × the Python client | errors |",
        "|---|---:|---:|---:|---:|",
    ]
    for clients in CLIENTS:
        for name in (n for n, c in cells if c == clients):
            errors = sum(r["errors"] for r in cells[(name, clients)])
            ratio = ops(name, clients) / ops(direct, clients)
            out.append(
                f"| {name} | {clients} | {ops(name, clients):,.0f} | {ratio:.3f} | {errors:.0f} |"
            )
    return "\n".join(out)


if __name__ == "__main__":
    main()
