"""The HTTP API against rest-rsmq (Express 3 + Node rsmq), in the same run, on the same Redis.

    .venv/bin/python -m bench.api --rest-rsmq DIR [--seconds 5] [--rounds 3] [--write]

DIR holds rest-rsmq's ``app.js`` (smrchy/rest-rsmq, from its repository: it is not on
npm) and a ``node_modules`` with what its package.json asks for (``npm install
express@3 rsmq@0.4.0`` in DIR). No code of rest-rsmq is kept here: a small launcher
(NODE_LAUNCHER) loads DIR/app.js unchanged, its rsmq pointed at the bench's Redis, and
listens on a free port.

The console is served as ./run serves it (the command line of
``dashboard/management/commands/console.py``'s ``web_argv``: granian serving
dashboard/asgi.py, one process a core and RSMQ_WEB_THREADS Django threads each, as
./run's defaults here; DEBUG off; SQLite) with tokens, rate limits and the audit on: an
operator's token, every data-plane call's audit record written to Redis with the call and
drained into the database by the web processes as they go.

Each client, on its own queue and its own keep-alive connection, loops send one →
receive it → delete it; ops/s counts the three calls. Contenders: the console's native
routes (``POST /api/queues/<q>/messages/``, ``POST …/receive/``, ``DELETE
…/messages/<id>/``), the console's rest-rsmq routes (``/api/rest-rsmq/…``), rest-rsmq
itself (the same paths on Node), the Python client (RedisSMQ), and — what the web server
alone costs — the native paths as a bare WSGI function (bench/bare_wsgi.py) under the
same server. The batch
cells: the native routes sending BATCH messages in one call and receiving them in
another (no route deletes a batch: the queue is purged after the cell); messages/s is
messages sent and received, against rest-rsmq's messages sent, received and deleted per
second. 1 and 16 clients; interleaved rounds, the median of each cell. Redis and both
servers on core 0, the clients on core 1 (SPEC §10). Any answer but a 2xx, or an
exception, is an error.
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
from typing import Any, Protocol

from bench.machine import describe
from bench.results import publish
from bench.serve import wait_up
from dashboard.serving.defaults import default_threads, default_workers
from queues import RedisSMQ
from queues.console import ConsoleRSMQ
from queues.server import EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CLIENTS = (1, 16)
BATCH = 100
NATIVE, REST, NODE, DIRECT = (
    "console, /api/ routes",
    "console, /api/rest-rsmq/",
    "rest-rsmq (Node)",
    "Python client (RedisSMQ)",
)
BATCHED = f"console, /api/ batch of {BATCH}"
BARE = "bare WSGI function, same server (reference)"

#: loads rest-rsmq's app.js unchanged, its `new RSMQ()` pointed at our Redis
NODE_LAUNCHER = """
const [dir, port, redisPort] = process.argv.slice(1);
const path = require.resolve("rsmq", {paths: [dir]});
const RSMQ = require(path);
function Pointed(options) { return new RSMQ(Object.assign({}, options || {},
  {host: "127.0.0.1", port: Number(redisPort)})); }
require.cache[path].exports = Pointed;
require(dir + "/app.js").listen(Number(port), "127.0.0.1");
"""


def web_argv(port: int, env: dict[str, str], workers: int = 4, threads: int = 2) -> list[str]:
    """./run's web server command line, as console.py makes it (``--workers``
    processes; ``threads``: RSMQ_WEB_THREADS, set in ``env`` by the caller)."""
    code = (
        "import django, json, os; "
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'dashboard.settings'); django.setup(); "
        "from dashboard.management.commands.console import web_argv; "
        f"print(json.dumps(web_argv('127.0.0.1', {port}, "
        f"{{'dev': False, 'workers': {workers}, 'threads': {threads}}})))"
    )
    out = subprocess.run([PY, "-c", code], cwd=ROOT, env=env, check=True, capture_output=True,
                         text=True).stdout  # fmt: skip
    argv: list[str] = json.loads(out.strip().splitlines()[-1])
    return argv


def bare_server(argv: list[str], port: int) -> list[str]:
    """The same server command line serving bench/bare_wsgi.py (the server's own cost):
    granian's ASGI app swapped for the WSGI function, gunicorn's application likewise."""
    out = [a.replace("dashboard.wsgi:application", "bench.bare_wsgi:application") for a in argv]
    if "dashboard.asgi:application" in out:
        i = out.index("dashboard.asgi:application")
        out[i] = "bench.bare_wsgi:application"
        if out[i - 1] == "asgi" and out[i - 2] == "--interface":
            out[i - 1] = "wsgi"
    return out


class Loop(Protocol):
    def loop(self) -> tuple[int, int]:
        """One loop: (operations or messages done, failures)."""
        ...


class Http:
    """One client's keep-alive connection and queue, and its send → receive → delete."""

    def __init__(
        self, port: int, token: str, routes: str, queue: str, proxied: bool = False
    ) -> None:
        self.routes, self.queue = routes, queue
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        if proxied:  # through docs/production.md's HTTPS proxy
            self.headers["X-Forwarded-Proto"] = "https"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(self, method: str, path: str, body: dict[str, object] | None) -> Any:
        """The answer's JSON, or None when it was not a 2xx."""
        try:
            data = json.dumps(body).encode() if body is not None else None
            self.conn.request(method, path, body=data, headers=self.headers)
            r = self.conn.getresponse()
            raw = r.read()
            return json.loads(raw) if 200 <= r.status < 300 else None
        except (OSError, http.client.HTTPException, ValueError):
            self.conn.close()  # the next call opens a new one
            return None

    def loop(self) -> tuple[int, int]:
        q = self.queue
        if self.routes == "native":
            sent = self.call("POST", f"/api/queues/{q}/messages/", {"message": "hello"})
            got = self.call("POST", f"/api/queues/{q}/receive/", {"n": 1, "vt": 30})
            mid = got["messages"][0]["id"] if got and got["messages"] else None
            done = mid and self.call("DELETE", f"/api/queues/{q}/messages/{mid}/", None)
        else:
            base = "/api/rest-rsmq" if self.routes == "rest" else ""
            sent = self.call("POST", f"{base}/messages/{q}", {"message": "hello"})
            got = self.call("GET", f"{base}/messages/{q}?vt=30", None)
            mid = got.get("id") if got else None
            done = mid and self.call("DELETE", f"{base}/messages/{q}/{mid}", None)
        failed = (sent is None) + (got is None or mid is None) + (not done)
        return 3, failed


class Batched(Http):
    """BATCH messages sent in one call, received in another."""

    def loop(self) -> tuple[int, int]:
        q = self.queue
        sent = self.call("POST", f"/api/queues/{q}/messages/", {"messages": ["hello"] * BATCH})
        got = self.call("POST", f"/api/queues/{q}/receive/", {"n": BATCH, "vt": 30})
        n = len(got["messages"]) if got else 0
        return n, (sent is None) + (n != BATCH)


class Direct:
    """The same loop through the Python client, a RedisSMQ of the client thread's own."""

    def __init__(self, url: str, queue: str) -> None:
        self.rsmq, self.queue = RedisSMQ(url=url, ns="rsmq"), queue

    def loop(self) -> tuple[int, int]:
        try:
            self.rsmq.send_message(self.queue, "hello")
            m = self.rsmq.receive_message(self.queue, vt=30)
            ok = m is not None and self.rsmq.delete_message(self.queue, m.id)
            return 3, 0 if ok else 1
        except Exception:
            return 3, 3


def load(make: Callable[[str], Loop], clients: int, seconds: float) -> dict[str, float]:
    """``clients`` threads, each on its queue, looping for ``seconds``: done per s."""
    done, errors = [0] * clients, [0] * clients
    workers = [make(f"bench-api-{i}") for i in range(clients)]
    stop = time.monotonic() + seconds

    def run(i: int) -> None:
        while time.monotonic() < stop:
            n, failed = workers[i].loop()
            done[i] += n
            errors[i] += failed

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"ops": sum(done) / seconds, "errors": sum(errors)}


SERVED = {
    "granian": "./run's granian (dashboard/asgi.py)",
    "gunicorn": "gunicorn (gthread 4×2, --preload; ./run's before issue 23)",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rest-rsmq", required=True, type=Path,
                    help="rest-rsmq's app.js with its node_modules (the docstring)")  # fmt: skip
    ap.add_argument("--seconds", type=float, default=5, help="per cell and round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument(
        "--server", choices=("granian", "gunicorn"), default="granian",
        help="granian: ./run's (dashboard/asgi.py); gunicorn: gthread 4×2, as before",
    )  # fmt: skip
    ap.add_argument("--workers", type=int, help="web processes (default: ./run's here)")
    ap.add_argument("--threads", type=int, help="threads a process (default: ./run's here)")
    ap.add_argument(
        "--settings", choices=("production", "run"), default="production",
        help="production: docs/production.md's (behind an HTTPS proxy: the clients send"
        " X-Forwarded-Proto: https; HSTS, secure cookies; Postgres); run: ./run's (SQLite)",
    )  # fmt: skip
    args = ap.parse_args()
    args.workers = args.workers or default_workers()
    args.threads = args.threads or default_threads(args.workers)
    rest_dir = args.rest_rsmq.resolve()
    if not (rest_dir / "app.js").exists():
        sys.exit(f"{rest_dir}/app.js not found: see bench/api.py's docstring")
    tmp = Path(tempfile.mkdtemp(prefix="bench-api-"))
    redis = EmbeddedRedis(tmp / "redis").start()
    env = dict(
        os.environ, RSMQ_DATA_DIR=str(tmp), RSMQ_REDIS_URL=redis.url, DEBUG="0",
        SECRET_KEY="bench-" + "x" * 60, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT),
        RSMQ_WEB_THREADS=str(args.threads),
    )  # fmt: skip
    for k in ("RSMQ_CONNECTIONS", "RSMQ_NAMESPACE", "DATABASE_URL", "RSMQ_READ_ONLY"):
        env.pop(k, None)
    proxied = args.settings == "production"
    postgres = None
    if proxied:
        sys.path.insert(0, str(ROOT / "tests"))
        from support.postgres_fixtures import EmbeddedPostgres, postgres_bindir

        bindir = postgres_bindir()
        if bindir is None:
            sys.exit("bench/api.py --settings production: no initdb (apt-get install postgresql)")
        postgres = EmbeddedPostgres(bindir, durable=True).__enter__()
        postmaster = (postgres.dir / "data" / "postmaster.pid").read_text().split()[0]
        subprocess.run(["taskset", "-acp", "0", postmaster], check=True, capture_output=True)
        env.update(
            DATABASE_URL=postgres.url, ALLOWED_HOSTS="127.0.0.1",
            SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto", SECURE_SSL_REDIRECT="1",
            SESSION_COOKIE_SECURE="1", CSRF_COOKIE_SECURE="1", SECURE_HSTS_SECONDS="31536000",
            SECURE_HSTS_INCLUDE_SUBDOMAINS="1", SECURE_HSTS_PRELOAD="1",
        )  # fmt: skip
    manage = [PY, "manage.py"]
    for cmd in (["migrate", "-v0"], ["collectstatic", "--noinput", "-v0"]):
        subprocess.run([*manage, *cmd], cwd=ROOT, env=env, check=True, capture_output=True)
    mint = (
        "from dashboard.access.tokens import mint; "
        "print(mint('bench', 'operator', 'bench/api.py', 1_000_000_000,"
        " queues='bench-api-*')[1])"
    )
    token = subprocess.run(
        [*manage, "shell", "-c", mint], cwd=ROOT, env=env, check=True, capture_output=True,
        text=True,
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    admin = ConsoleRSMQ(url=redis.url, ns="rsmq")
    for i in range(max(CLIENTS)):
        admin.create_queue(f"bench-api-{i}")
    subprocess.run(["taskset", "-acp", "0", str(redis.process.pid)], check=True,  # type: ignore[union-attr]
                   capture_output=True)  # fmt: skip
    port, node_port, bare_port = free_port(), free_port(), free_port()
    server = subprocess.Popen(
        ["taskset", "-c", "0", *web_argv(port, env, args.workers, args.threads)], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    bare_argv = bare_server(web_argv(bare_port, env, args.workers, args.threads), bare_port)
    bare = subprocess.Popen(
        ["taskset", "-c", "0", *bare_argv], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    node = subprocess.Popen(
        ["taskset", "-c", "0", "node", "-e", NODE_LAUNCHER, str(rest_dir), str(node_port),
         str(redis.port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    os.sched_setaffinity(0, {1})
    contenders: dict[str, Callable[[str], Loop]] = {
        NATIVE: lambda q: Http(port, token, "native", q, proxied),
        REST: lambda q: Http(port, token, "rest", q, proxied),
        NODE: lambda q: Http(node_port, "", "node", q),
        DIRECT: lambda q: Direct(redis.url, q),
        BATCHED: lambda q: Batched(port, token, "native", q, proxied),
        BARE: lambda q: Http(bare_port, "", "native", q),
    }
    cells: dict[tuple[str, int], list[dict[str, float]]] = {}
    load_start = os.getloadavg()[0]
    try:
        wait_up(port, server)
        _wait_node(node_port, node)
        _wait_port(bare_port, bare)
        for make in contenders.values():
            load(make, 8, 1)  # warm up every process and thread
        _purge(admin)
        # Interleaved: each cell once per contender per round, the median of the rounds.
        for _ in range(args.rounds):
            for clients in CLIENTS:
                for name, make in contenders.items():
                    r = load(make, clients, args.seconds)
                    _purge(admin)
                    cells.setdefault((name, clients), []).append(r)
                    print(name, clients, r, flush=True)
        load_end = os.getloadavg()[0]
        pending = admin.audit_pending()
    finally:
        os.killpg(server.pid, 15)
        os.killpg(node.pid, 15)
        os.killpg(bare.pid, 15)
        bare.wait(30)
        server.wait(30)
        node.wait(30)
        redis.stop()
        if postgres is not None:
            postgres.__exit__(None, None, None)
    publish(report(cells, args, load_start, load_end, pending), args.write)


def _purge(admin: RedisSMQ) -> None:
    for i in range(max(CLIENTS)):
        admin.purge_queue(f"bench-api-{i}")


def _wait_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=2).connect()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("the bare WSGI server did not start")


def _wait_node(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/queues")
            if c.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("rest-rsmq did not start")


def report(cells: dict[tuple[str, int], list[dict[str, float]]], args: argparse.Namespace,
           load_start: float, load_end: float, pending: int) -> str:  # fmt: skip
    def ops(name: str, clients: int) -> float:
        return statistics.median(r["ops"] for r in cells[(name, clients)])

    out = [
        "## HTTP API vs rest-rsmq (`bench/api.py`)",
        "",
        f"{describe()}; load average {load_start:.1f} at the start, {load_end:.1f} at the end"
        f" (a shared machine: other engineers' runs too). {args.seconds:.0f} s per cell,"
        f" {args.rounds} interleaved rounds: ops/s the median of the rounds, × rest-rsmq the"
        " median of the rounds' own ratios (errors: the sum). Each client, on its"
        " own queue and keep-alive connection, loops send → receive → delete; ops/s counts"
        " the three calls. The console: ./run's web server (console.py's web_argv), "
        + (
            "docs/production.md's settings (behind an HTTPS proxy: X-Forwarded-Proto: https"
            " on every call, HSTS, secure cookies, SSL redirect; Postgres, fsync on),"
            if args.settings == "production"
            else "./run's settings (SQLite),"
        )
        + " an operator's token scoped to bench-api-* (a grant checked on every call;"
        " rate-limited in Redis), every call audited (data-plane"
        " records written in the operation's own script, drained into the database as it"
        f" runs; {pending} not yet drained when the run ended). rest-rsmq: its app.js on"
        " express 3 + rsmq 0.4.0 from npm, Node, no token, no audit. Redis and both servers"
        " on core 0, clients on core 1. Batch: messages sent and received per s (a batch of"
        f" {BATCH} sent in one call, received in another) against rest-rsmq's messages sent,"
        " received and deleted per s.",
        "",
        "| contender | clients | ops/s | × rest-rsmq | × in each round | errors |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for clients in CLIENTS:
        for name in (n for n, c in cells if c == clients):
            errors = sum(r["errors"] for r in cells[(name, clients)])
            mine = ops(name, clients)
            per = 3 if name == BATCHED else 1  # rest-rsmq's messages/s: its ops/s / 3
            unit = "msgs/s" if name == BATCHED else ""
            rounds = [
                r["ops"] / (n["ops"] / per)
                for r, n in zip(cells[(name, clients)], cells[(NODE, clients)], strict=True)
            ]
            # Each round's ratio pairs cells measured seconds apart; on a shared machine the
            # load moves between rounds, so their median, not the ratio of the medians
            # (which can pair one round's quiet with another's storm).
            ratio = statistics.median(rounds)
            each = ", ".join(f"{x:.2f}" for x in rounds)
            out.append(
                f"| {name} | {clients} | {mine:,.0f} {unit} | {ratio:.2f} | {each} | {errors:.0f} |"
            )
    return "\n".join(out)


if __name__ == "__main__":
    main()
