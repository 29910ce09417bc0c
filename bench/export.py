"""Export of 1,000,000 messages through the served console: the web
worker's memory, the time, Redis SLOWLOG — against the CLI's export of the same queue
(`rsmq message export`, the same core loop, no web server) in the same run.

    .venv/bin/python -m bench.export [--messages 1000000] [--write]

A redis-server of its own (core 0) holds one queue ("big": 1,000,000 messages of ~120
bytes, 1,000 of them in flight, 1,000 of them with a needle in the body); granian serves
dashboard.asgi (as ./run does: one worker, RSMQ_WEB_THREADS threads) on core 1, with the
reading client and the CLI. Each export is read to its end; the web
worker's resident memory is sampled every 20 ms while it runs (its growth over its
resident memory before is what the export held), the CLI's the same way; a second client
PINGs all along (the longest answer: the longest Redis was held for anyone else), and
INFO commandstats and SLOWLOG (over 5 ms) time the script calls.
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import psutil
import redis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.machine import describe  # noqa: E402
from bench.results import publish  # noqa: E402
from queues import RedisSMQ  # noqa: E402
from queues.server import EmbeddedRedis, free_port  # noqa: E402
from queues.transfer import EXPORT_STEP  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
NEEDLE = "needle-7f3a"


class Peak:
    """The largest resident memory of some processes while it runs (sampled every 20 ms)."""

    def __init__(self, processes: Callable[[], list[psutil.Process]]) -> None:
        self.processes = processes
        self.before = self.rss()
        self.peak = self.before
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def rss(self) -> int:
        total = 0
        for p in self.processes():
            try:
                total += p.memory_info().rss
            except psutil.NoSuchProcess:
                pass
        return total

    def run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(0.02)

    def __enter__(self) -> Peak:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


class Pings:
    """The longest PING answer another client sees while it runs."""

    def __init__(self, url: str) -> None:
        self.r = redis.Redis.from_url(url)
        self.worst = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self) -> None:
        while not self.stop.is_set():
            t0 = time.perf_counter()
            self.r.ping()
            self.worst = max(self.worst, time.perf_counter() - t0)
            time.sleep(0.001)

    def __enter__(self) -> Pings:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


class Calls:
    """The script calls a run made in Redis: how many and their mean time (INFO
    commandstats), and from SLOWLOG (over 5 ms; commands run inside a script are logged
    too, so no lower threshold) how many took longer than 5 ms and the longest."""

    def __init__(self, url: str) -> None:
        self.r = redis.Redis.from_url(url)
        self.r.config_set("slowlog-log-slower-than", 5000)
        self.r.config_set("slowlog-max-len", 10_000)

    def reset(self) -> None:
        self.r.slowlog_reset()
        self.r.config_resetstat()

    def summary(self) -> str:
        stats = self.r.info("commandstats").get("cmdstat_evalsha", {})
        slow = [
            e["duration"] for e in self.r.slowlog_get(10_000)
            if e["command"].startswith(b"EVALSHA")
        ]  # fmt: skip
        longest = f", longest {max(slow) / 1000:.1f} ms" if slow else ""
        return (
            f"{stats.get('calls', 0):,} calls, mean {stats.get('usec_per_call', 0) / 1000:.1f}"
            f" ms; {len(slow)} over 5 ms{longest}"
        )


def http_export(port: int, path: str, token: str) -> tuple[int, int]:
    """(lines, bytes) of a streamed export read to its end."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
    r = conn.getresponse()
    assert r.status == 200, r.read()[:500]
    lines = size = 0
    while piece := r.read(1 << 16):
        lines += piece.count(b"\n")
        size += len(piece)
    conn.close()
    return lines, size


IDLE = 5.0  # s: RSMQ_EXPORT_IDLE of the served console here
IDLE_CLIENTS = 8


class Drops:
    """When the served console logs that it dropped an export (its stderr, read as it comes)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream, self.at = stream, []  # type: list[float]
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        for line in self.stream:
            if b"RSMQ_EXPORT_IDLE" in line:
                self.at.append(time.perf_counter())


def idle_exports(
    port: int, token: str, drops: Drops, worker: Callable[[], int]
) -> dict[str, float]:
    """IDLE_CLIENTS exports whose clients send the request and never read: while they
    wait, another export is read to its end and the read API answers; each is dropped by
    the console once its piece waited RSMQ_EXPORT_IDLE seconds (its log line), its slot
    given back. (granian keeps the connection itself, and what it was handed, until the
    client reads or goes away.)"""
    request = (f"GET /api/queues/big/export/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
               f"Authorization: Bearer {token}\r\n\r\n").encode()  # fmt: skip
    before = worker()
    idle: list[socket.socket] = []
    for _ in range(IDLE_CLIENTS):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", port))
        s.sendall(request)
        idle.append(s)
    t0 = time.perf_counter()
    time.sleep(1.0)  # each has filled its socket's buffers and waits on its client
    other0 = time.perf_counter()
    lines, _ = http_export(port, "/api/queues/big/export/?state=inflight", token)
    other = time.perf_counter() - other0
    assert lines == 1000, lines
    reads = []
    for _ in range(10):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        r0 = time.perf_counter()
        c.request("GET", "/api/queues/", headers={"Authorization": f"Bearer {token}"})
        assert c.getresponse().status == 200
        reads.append(time.perf_counter() - r0)
        c.close()
    while len(drops.at) < IDLE_CLIENTS and time.perf_counter() - t0 < IDLE + 30:
        time.sleep(0.05)
    held = worker() - before
    for s in idle:
        s.close()
    assert len(drops.at) == IDLE_CLIENTS, f"{len(drops.at)} of {IDLE_CLIENTS} dropped"
    return {"other": other, "read_max": max(reads), "first": drops.at[0] - t0,
            "last": drops.at[-1] - t0, "held_mb": held / 2**20}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-export-"))
    server = EmbeddedRedis(tmp / "redis").start()
    env = dict(
        os.environ, RSMQ_DATA_DIR=str(tmp), RSMQ_REDIS_URL=server.url, DEBUG="0",
        SECRET_KEY="bench-" + "x" * 60, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT),
        RSMQ_EXPORT_IDLE=str(IDLE),
    )  # fmt: skip
    env.pop("RSMQ_CONNECTIONS", None)
    env.pop("RSMQ_NAMESPACE", None)
    web = None
    try:
        subprocess.run([PY, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        mint = (
            "from dashboard.access.tokens import mint;"
            " print(mint('bench', 'viewer', 'b', 10**6)[1])"
        )
        token = subprocess.run(
            [PY, "manage.py", "shell", "-c", mint], cwd=ROOT, env=env, check=True,
            capture_output=True, text=True,
        ).stdout.strip().splitlines()[-1]  # fmt: skip
        subprocess.run(["taskset", "-acp", "0", str(server.process.pid)], check=True,  # type: ignore[union-attr]
                       capture_output=True)  # fmt: skip
        os.sched_setaffinity(0, {1})
        rsmq = RedisSMQ(url=server.url, ns="rsmq")
        rsmq.create_queue("big")
        body = '{"order_id": 12345, "note": "' + "x" * 100 + '"}'
        print(f"filling {args.messages:,} messages ...", flush=True)
        every = max(1, args.messages // 1000)
        for k in range(0, args.messages, 1000):
            rsmq.send_messages(
                "big", [body if (k + i) % every else body + NEEDLE for i in range(1000)]
            )
        rsmq.receive_messages("big", 1000, vt=3600)
        port = free_port()
        web = subprocess.Popen(
            ["taskset", "-c", "1", PY, "-m", "granian", "--interface", "asgi",
             "dashboard.asgi:application", "--host", "127.0.0.1", "--port", str(port),
             "--workers", "1", "--no-ws"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        assert web.stderr is not None
        drops = Drops(web.stderr)
        deadline = time.monotonic() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "granian did not start"
            time.sleep(0.3)
        http_export(port, "/api/queues/big/export/?state=inflight", token)  # warm up
        tree = psutil.Process(web.pid)

        def workers() -> list[psutil.Process]:
            return [tree, *tree.children(recursive=True)]

        slow = Calls(server.url)
        rows = []
        for name, path in [
            (f"all {args.messages:,} (web)", "/api/queues/big/export/"),
            (f"body contains {NEEDLE!r}: 1,000 matches (web)",
             f"/api/queues/big/export/?search={NEEDLE}"),
        ]:  # fmt: skip
            slow.reset()
            with Peak(workers) as mem, Pings(server.url) as pings:
                t0 = time.perf_counter()
                lines, size = http_export(port, path, token)
                took = time.perf_counter() - t0
            rows.append((name, lines, size, took, mem.before, mem.peak, pings.worst,
                         slow.summary()))  # fmt: skip
            print(rows[-1], flush=True)
        # the peer: the CLI's export of the same queue (the same core loop, no server)
        slow.reset()
        out = tmp / "cli.jsonl"
        cli = [PY, "-m", "queues.cli", "--url", server.url, "--ns", "rsmq", "message",
               "export", "-n", "big", "-o", str(out)]  # fmt: skip
        with Pings(server.url) as pings:
            t0 = time.perf_counter()
            proc = subprocess.Popen(cli, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
            ps = psutil.Process(proc.pid)
            cli_peak = 0
            while proc.poll() is None:
                try:
                    cli_peak = max(cli_peak, ps.memory_info().rss)
                except psutil.NoSuchProcess:
                    break
                time.sleep(0.02)
            took = time.perf_counter() - t0
        size = out.stat().st_size
        with open(out, "rb") as f:
            lines = sum(1 for _ in f)
        rows.append((f"all {args.messages:,} (CLI, to a file)", lines, size, took, 0, cli_peak,
                     pings.worst, slow.summary()))  # fmt: skip
        print(rows[-1], flush=True)
        stuck = idle_exports(
            port, token, drops, lambda: sum(p.memory_info().rss for p in workers())
        )
        print(stuck, flush=True)
    finally:
        if web is not None:
            os.killpg(web.pid, 15)
            web.wait(30)
        server.stop()
    load = os.getloadavg()
    mb = 2**20
    lines_out = [
        "## Export of 1,000,000 messages (`bench/export.py`)",
        "",
        f"{describe()}; load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (a shared"
        " machine). One queue of 1,000,000 messages of ~120 bytes (1,000 in flight); the web"
        " export is `GET /api/queues/big/export/` from granian (dashboard.asgi, 1 worker, as"
        " ./run), read to its end; the CLI export (`rsmq message export`, the same core loop)"
        " is the peer, in the same run. Redis on core 0, granian, the reading client and the"
        " CLI on core 1. Script calls: INFO commandstats (count, mean) and SLOWLOG over 5 ms"
        " (a call's time in Redis includes any time the loaded machine's scheduler took the"
        " core away).",
        "",
        "| export | lines | bytes | time | messages/s | memory before → peak (growth) |"
        " longest PING | script calls in Redis (SLOWLOG) |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for name, n, size, took, before, peak, worst, slowlog in rows:
        memory = (
            f"{before / mb:.0f} → {peak / mb:.0f} MB (+{(peak - before) / mb:.1f} MB)"
            if before
            else f"peak {peak / mb:.0f} MB"
        )
        lines_out.append(
            f"| {name} | {n:,} | {size / 1e6:,.0f} MB | {took:.1f} s | {n / took:,.0f} |"
            f" {memory} | {worst * 1000:.1f} ms | {slowlog} |"
        )
    web, cli = rows[0], rows[-1]
    over = {
        row[0]: int(m[1]) if (m := re.search(r"(\d+) over 5 ms", row[7])) else 0 for row in rows
    }
    if not any(over.values()):
        verdict = "No script call of any export took over 5 ms: the scan's budget holds."
    elif not any(n for name, n in over.items() if "(web)" in name):
        verdict = (
            "No script call of the web exports took over 5 ms; the CLI's run (the same loop,"
            f" the same calls) had {over[cli[0]]}."
        )
    else:
        verdict = "Some web export calls took over 5 ms: the scan's 5 ms budget is not met."
    lines_out += [
        "",
        f"The web worker grew by {(web[5] - web[4]) / mb:.1f} MB while it sent"
        f" {web[2] / 1e6:,.0f} MB (pieces of 64 KB, each made once the client took the last:"
        " dashboard/serving/app.py `Console.stream`). Its script calls are the CLI's (count"
        f" and mean alike: {web[7].split(';')[0]} vs {cli[7].split(';')[0]}); each reads"
        f" {EXPORT_STEP} messages (queues/transfer.py EXPORT_STEP). {verdict}",
        "",
        f"**Idle clients.** {IDLE_CLIENTS} exports of the whole queue whose clients never read"
        f" (RSMQ_EXPORT_IDLE {IDLE:g} s here, 30 by default; granian's 2 threads for Django, as"
        f" ./run): meanwhile another export (the 1,000 in flight) was read whole in"
        f" {stuck['other']:.2f} s and the read API answered within"
        f" {stuck['read_max'] * 1000:.0f} ms (the longest of 10); the console dropped the idle"
        f" ones {stuck['first']:.1f} to {stuck['last']:.1f} s after they were sent, their"
        " slots given back. granian keeps each connection, and what it had been handed, until"
        f" its client reads or goes away: the web worker held {stuck['held_mb']:.1f} MB more"
        " for the eight then.",
    ]
    publish("\n".join(lines_out), args.write)


if __name__ == "__main__":
    main()
