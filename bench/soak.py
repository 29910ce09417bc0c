"""A long run of `./run` under steady traffic: memory per process, failed requests, a clean stop.

    .venv/bin/python -m bench.soak [--minutes 120] [--warmup 15] [--write]

Starts ``./run 127.0.0.1:<free port>`` as a newcomer would (the embedded Redis, the demo
data, granian, the Celery worker with beat in it, supervised), with a data folder of its own.
Then, for ``--minutes``:

* an API client (an operator's token) sends, receives and deletes on a queue of its own,
  about 20 calls a second;
* an operator's browser session loads the overview, a queue page and the incident page,
  and polls the overview's and the queue page's live refresh (htmx) every 2 s;
* Prometheus scrapes ``/metrics`` every 15 s.

Every minute it reads each process of the tree (RSS, PSS: what it holds alone plus its
share of what it shares). Any answer but the one expected, or an exception, is a failed
request. At the end it sends SIGTERM to ./run and checks that every process of the tree
is gone within 60 s. The report: each long-lived process's RSS at the end of the warm-up
and at the end (its change in %), the tree's RSS and PSS, the requests and failures.
Children that come and go (the pipeline's hourly run and its JVM) are counted apart.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import psutil

from bench.machine import describe
from bench.results import publish
from queues.server import free_port

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
Headers = dict[str, str] | None
OVERVIEW = "/c/default/rsmq/"
#: the long-lived processes of ./run, by what their command line holds
ROLES = (
    ("supervisor", "manage.py console"),
    ("redis", "redis-server"),
    ("worker", "celery --app dashboard worker"),
    ("web", "granian"),
)


@dataclass
class Tally:
    requests: int = 0
    failures: int = 0
    failed: list[str] = field(default_factory=list)  # the first 50
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str, ok: bool) -> None:
        with self.lock:
            self.requests += 1
            if not ok:
                self.failures += 1
                if len(self.failed) < 50:
                    self.failed.append(f"{time.strftime('%H:%M:%S', time.gmtime())} {what}")


class Client:
    """One keep-alive connection (opened again after an error), cookies kept."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.cookies: dict[str, str] = {}

    def call(
        self, method: str, path: str, body: bytes | None = None, headers: Headers = None
    ) -> tuple[int, str]:
        h = dict(headers or {})
        if self.cookies:
            h["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        for attempt in (1, 2):
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                text = r.read().decode("utf-8", "replace")
                break
            except (OSError, http.client.HTTPException) as e:
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                # a keep-alive connection the server closed while it was idle: sent again
                # on a new one, as HTTP clients do (once)
                if attempt == 2 or not isinstance(e, http.client.RemoteDisconnected):
                    raise
        for value in r.headers.get_all("Set-Cookie") or []:
            name, _, rest = value.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        return r.status, text


def login(c: Client) -> None:
    _, page = c.call("GET", "/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert csrf, page[:300]
    form = urlencode({"csrfmiddlewaretoken": csrf[1], "username": "admin", "password": "admin"})
    status, _ = c.call("POST", "/login/", form.encode(), {
        "Content-Type": "application/x-www-form-urlencoded",
        "Referer": f"http://127.0.0.1:{c.port}/login/",
    })  # fmt: skip
    assert status == 302, f"login answered {status}"


def mint(env: dict[str, str], role: str) -> str:
    code = (
        "from dashboard.access import tokens; "
        f"print(tokens.mint('soak-{role}', '{role}', 'soak', 100000)[1])"
    )
    out = subprocess.run(
        [PY, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip().splitlines()[-1]


def api_loop(port: int, token: str, tally: Tally, stop: threading.Event) -> None:
    c = Client(port)
    auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    n = 0
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            status, text = c.call("POST", "/api/queues/soak/messages/",
                                  json.dumps({"message": f"soak {n}"}).encode(), auth)  # fmt: skip
            tally.count("send", status == 201)
            status, text = c.call("POST", "/api/queues/soak/receive/", b"{}", auth)
            got = json.loads(text).get("messages") if status == 200 else None
            tally.count("receive", bool(got))
            if got:
                mid = got[0]["id"]
                status, _ = c.call("DELETE", f"/api/queues/soak/messages/{mid}/", None, auth)
                tally.count("delete", status == 200)
        except (OSError, http.client.HTTPException, ValueError) as e:
            tally.count(f"api: {e}", False)
        n += 1
        stop.wait(max(0.0, 0.15 - (time.monotonic() - t0)))


def page_loop(port: int, tally: Tally, stop: threading.Event) -> None:
    c = Client(port)
    login(c)
    live = {"HX-Request": "true"}
    k = 0
    while not stop.is_set():
        visits = [(OVERVIEW, None), ("/c/default/rsmq/q/orders/", None), (OVERVIEW, live),
                  ("/c/default/rsmq/q/orders/", live)]  # fmt: skip
        if k % 15 == 0:
            visits.append(("/incidents/", None))
        for path, headers in visits:
            try:
                status, _ = c.call("GET", path, None, headers)
                tally.count(f"GET {path}", status == 200)
            except (OSError, http.client.HTTPException) as e:
                tally.count(f"GET {path}: {e}", False)
        k += 1
        stop.wait(2.0)


def metrics_loop(port: int, token: str, tally: Tally, stop: threading.Event) -> None:
    c = Client(port)
    while not stop.is_set():
        try:
            status, text = c.call("GET", "/metrics", None, {"Authorization": f"Bearer {token}"})
            tally.count("GET /metrics", status == 200 and "rsmq_up" in text)
        except (OSError, http.client.HTTPException) as e:
            tally.count(f"GET /metrics: {e}", False)
        stop.wait(15.0)


def role_of(p: psutil.Process) -> str:
    line = " ".join(p.cmdline())
    for role, marker in ROLES:
        if marker in line:
            return role
    return "other: " + (p.name() or "?")


def sample(root: psutil.Process) -> dict[int, tuple[str, float, float]]:
    """Each process of the tree: (role, RSS MB, PSS MB)."""
    out = {}
    for p in [root, *root.children(recursive=True)]:
        try:
            m = p.memory_full_info()
            out[p.pid] = (role_of(p), m.rss / 2**20, m.pss / 2**20)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=120)
    ap.add_argument("--warmup", type=float, default=15, help="minutes before the baseline")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()

    data = Path(tempfile.mkdtemp(prefix="rsmq-soak-"))
    port = free_port()
    env = dict(os.environ, RSMQ_DATA_DIR=str(data))
    env.pop("RSMQ_REDIS_URL", None)
    run = subprocess.Popen([str(ROOT / "run"), f"127.0.0.1:{port}"], cwd=ROOT, env=env,
                           stdout=open(data / "run.log", "wb"), stderr=subprocess.STDOUT,
                           start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 180
    while True:
        try:
            if Client(port).call("GET", "/healthz")[0] == 200:
                break
        except OSError:
            pass
        if run.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"./run did not come up: {(data / 'run.log').read_text()[-2000:]}")
        time.sleep(1)
    root = psutil.Process(run.pid)
    while "manage.py" not in " ".join(root.cmdline()):  # ./run execs the supervisor
        time.sleep(0.2)
    env["RSMQ_REDIS_URL"] = (data / "redis.url").read_text().strip()
    operator, viewer = mint(env, "operator"), mint(env, "viewer")
    admin = {"Authorization": f"Bearer {mint(env, 'admin')}", "Content-Type": "application/json"}
    assert Client(port).call("PUT", "/api/queues/soak/", b"{}", admin)[0] == 201
    print(f"./run on port {port}, data in {data}; {args.minutes:g} min", flush=True)

    tally, stop = Tally(), threading.Event()
    loops = [threading.Thread(target=api_loop, args=(port, operator, tally, stop)),
             threading.Thread(target=page_loop, args=(port, tally, stop)),
             threading.Thread(target=metrics_loop, args=(port, viewer, tally, stop))]  # fmt: skip
    for t in loops:
        t.start()
    started = time.monotonic()
    samples: list[tuple[float, dict[int, tuple[str, float, float]]]] = []
    baseline: dict[int, tuple[str, float, float]] | None = None
    while (minute := (time.monotonic() - started) / 60) < args.minutes:
        now = sample(root)
        samples.append((minute, now))
        if baseline is None and minute >= args.warmup:
            baseline = now
        rss = sum(v[1] for v in now.values())
        print(f"{minute:6.1f} min  tree RSS {rss:5.0f} MB  requests {tally.requests:,}"
              f"  failed {tally.failures}", flush=True)  # fmt: skip
        time.sleep(60)
    stop.set()
    for t in loops:
        t.join(60)
    end = sample(root)
    pids = {root.pid, *(p.pid for p in root.children(recursive=True))}
    t0 = time.monotonic()
    os.killpg(run.pid, signal.SIGTERM)
    code = run.wait(90)
    left = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    stopped = time.monotonic() - t0
    publish(report(args, baseline or samples[0][1], end, tally, code, left, stopped), args.write)


def report(
    args: argparse.Namespace,
    base: dict[int, tuple[str, float, float]],
    end: dict[int, tuple[str, float, float]],
    tally: Tally,
    code: int,
    left: list[int],
    stopped: float,
) -> str:
    lines = [
        "## Soak (`bench/soak.py`)",
        "",
        f"{describe()}. `./run` on the demo for {args.minutes:g} min under steady traffic (the"
        " API's send, receive and delete about 20 calls a second; an operator's pages and"
        " their live refresh every 2 s; /metrics every 15 s); the baseline after"
        f" {args.warmup:g} min of warm-up. Load average at the end:"
        f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}.",
        "",
        "| process | pid | RSS at warm-up | RSS at the end | change | PSS at the end |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    worst = 0.0
    for pid, (role, rss, pss) in sorted(end.items(), key=lambda kv: kv[1][0]):
        if pid in base and not role.startswith("other"):
            was = base[pid][1]
            change = (rss - was) / was * 100
            worst = max(worst, abs(change))
            lines.append(f"| {role} | {pid} | {was:.0f} MB | {rss:.0f} MB | {change:+.1f}% |"
                         f" {pss:.0f} MB |")  # fmt: skip
    lived = [v for pid, v in end.items() if not v[0].startswith("other")]
    passing = [v for v in end.values() if v[0].startswith("other")]
    lines += [
        "",
        f"- The long-lived processes at the end: RSS {sum(v[1] for v in lived):.0f} MB in all,"
        f" PSS {sum(v[2] for v in lived):.0f} MB (what they hold alone plus their share of"
        " what they share); the largest change of one since the warm-up"
        f" {worst:.1f}%. Passing children at the end (the pipeline's run):"
        f" {len(passing)}, RSS {sum(v[1] for v in passing):.0f} MB.",
        f"- Requests: {tally.requests:,}; failed: {tally.failures:,}"
        + (f" ({'; '.join(tally.failed[:5])})" if tally.failed else "")
        + ".",
        f"- SIGTERM: ./run exited {code} after {stopped:.1f} s; processes of the tree left:"
        f" {len(left)}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
