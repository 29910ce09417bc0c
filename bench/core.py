"""Core throughput, side by side in one run on one redis-server (§10).

Compares our ``queues`` client with the original Node rsmq 0.12.4, PyRSMQ 0.6.1 and
redis-py's own PING rate (same redis-py + hiredis):

* sequential send / receive / delete, one call at a time, each awaited;
* batch send / receive of 100 messages per call (``queues`` only).

redis-server runs pinned to core 0 and every measured client to core 1. Measurements are
interleaved: each round measures every (client, op) once, in an order rotated from round
to round; the figure reported is the median over the rounds. Every receive finds a
message: its queue is pre-filled before the measurement (untimed), and each client has
queues of its own. Node runs as one persistent process (tests/node/bench.js, with the
rsmq 0.12.4 that tests/node/package-lock.json pins), timing its own loops.

    python bench/core.py            # full run, 1-3 minutes
    python bench/core.py --quick    # under a minute
    python bench/core.py --write    # also record the figures in bench/RESULTS.md
    python bench/core.py --async    # AsyncRedisSMQ with 1, 8, 64 coroutines vs the limit:
                                    # redis-benchmark sending the same EVALSHA, 50 clients
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import redis.utils  # noqa: E402
from rsmq import RedisSMQ as PyRSMQ  # noqa: E402
from rsmq.cmd import NoMessageInQueue  # noqa: E402

from bench.results import RESULTS, record  # noqa: E402
from queues import AsyncRedisSMQ, RedisSMQ  # noqa: E402
from queues.server import EmbeddedRedis  # noqa: E402

NODE_DIR = ROOT / "tests" / "node"
NS = "bench"
BODY = '{"event": "order.created", "id": 1234567, "payload": "' + "x" * 48 + '"}'
BATCH = 100
FILL_CHUNK = 1000
REDIS_CORE, CLIENT_CORE = 0, 1

#: (client, op): what is measured, in the order of the first round
MEASUREMENTS = [
    ("queues", "send"),
    ("node", "send"),
    ("pyrsmq", "send"),
    ("redis-py", "ping"),
    ("redis-py", "ping held"),
    ("queues", "receive"),
    ("node", "receive"),
    ("pyrsmq", "receive"),
    ("queues", "delete"),
    ("node", "delete"),
    ("pyrsmq", "delete"),
    ("queues", "batch send"),
    ("queues", "batch receive"),
]

#: (name, numerator, denominator, budget): ratios of median rates; budget None = info only
RATIOS = [
    ("send: queues / node", ("queues", "send"), ("node", "send"), 1.3),
    ("send: queues / pyrsmq", ("queues", "send"), ("pyrsmq", "send"), 2.0),
    ("send: queues / PING", ("queues", "send"), ("redis-py", "ping"), 0.75),
    ("receive: queues / node", ("queues", "receive"), ("node", "receive"), 1.3),
    ("receive: queues / pyrsmq", ("queues", "receive"), ("pyrsmq", "receive"), 2.0),
    ("receive: queues / PING", ("queues", "receive"), ("redis-py", "ping"), 0.75),
    ("batch send msgs/s / node sequential send", ("queues", "batch send"), ("node", "send"), 20),
    (
        "batch receive msgs/s / node sequential receive",
        ("queues", "batch receive"),
        ("node", "receive"),
        20,
    ),
    ("delete: queues / node", ("queues", "delete"), ("node", "delete"), None),
    ("delete: queues / pyrsmq", ("queues", "delete"), ("pyrsmq", "delete"), None),
    ("delete: queues / PING", ("queues", "delete"), ("redis-py", "ping"), None),
    # queues sends on one redis-py Connection per thread; PING the same way, for reference
    (
        "send: queues / PING on a held connection",
        ("queues", "send"),
        ("redis-py", "ping held"),
        None,
    ),
    (
        "receive: queues / PING on a held connection",
        ("queues", "receive"),
        ("redis-py", "ping held"),
        None,
    ),
]


def sh(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def pin_all_threads(pid: int, core: int) -> None:
    """Pin every thread of a process (redis-server has background threads) to one core."""
    sh("taskset", "-a", "-cp", str(core), str(pid))


def ensure_node_modules() -> None:
    if not (NODE_DIR / "node_modules" / "rsmq" / "package.json").exists():
        npm = shutil.which("npm")
        if not npm:
            raise SystemExit("npm is needed to install rsmq 0.12.4 in tests/node")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True)


class NodeBench:
    """The persistent node process of tests/node/bench.js, pinned to the client core."""

    def __init__(self, port: int) -> None:
        config = json.dumps({"port": port, "ns": NS})
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(CLIENT_CORE), "node", str(NODE_DIR / "bench.js"), config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, **cmd: Any) -> tuple[int, float, int]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"node bench driver exited with {self.proc.wait()}")
        out = json.loads(line)
        if "error" in out:
            raise RuntimeError(f"node bench driver: {out}")
        return out["n"], out["seconds"], out["misses"]

    def close(self) -> None:
        assert self.proc.stdin
        try:
            self.proc.stdin.write('{"op": "quit"}\n')
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@dataclass
class Sample:
    """One timed measurement: ``calls`` calls moving ``units`` messages (or PINGs)."""

    calls: int
    units: int
    seconds: float
    misses: int = 0

    @property
    def rate(self) -> float:
        return self.units / self.seconds


class Bench:
    def __init__(self, server: EmbeddedRedis) -> None:
        self.server = server
        self.queues = RedisSMQ(url=server.url, ns=NS)
        self.ping_client = redis.Redis.from_url(server.url)
        self.py = PyRSMQ(host="127.0.0.1", port=server.port, ns=NS, exceptions=True)
        self.node = NodeBench(server.port)
        self.qname = {c: f"q-{c}" for c in ("queues", "queues-batch", "node", "pyrsmq")}
        for q in self.qname.values():
            self.queues.create_queue(q, vt=3600)
        self._check_hiredis()

    def _check_hiredis(self) -> None:
        assert redis.utils.HIREDIS_AVAILABLE, "hiredis is not installed: pip install hiredis"
        for client in (self.queues.redis, self.ping_client, self.py.client):
            client.ping()
            conn = client.connection_pool.get_connection()
            try:
                parser = type(conn._parser).__name__
            finally:
                client.connection_pool.release(conn)
            assert "Hiredis" in parser, f"redis-py is not using hiredis: {parser}"

    def close(self) -> None:
        self.node.close()
        self.queues.close()
        self.ping_client.close()
        self.py.client.close()

    # -- untimed preparation ---------------------------------------------------------

    def _queue_of(self, client: str, op: str) -> str:
        if op.startswith("ping"):
            return ""
        return self.qname["queues-batch" if op.startswith("batch") else client]

    def _fill(self, qname: str, n: int) -> list[str]:
        ids: list[str] = []
        for k in range(0, n, FILL_CHUNK):
            ids += self.queues.send_messages(qname, [BODY] * min(FILL_CHUNK, n - k))
        return ids

    def prepare(self, client: str, op: str, calls: int) -> list[str]:
        """Empty the queue of the measurement, then fill it with what it will consume."""
        qname = self._queue_of(client, op)
        if not qname:
            return []
        self.queues.purge_queue(qname)
        if op in ("receive", "delete"):
            return self._fill(qname, calls + 10)[:calls]
        if op == "batch receive":
            self._fill(qname, calls * BATCH + 10)
        return []

    # -- timed -----------------------------------------------------------------------

    def measure(self, client: str, op: str, calls: int) -> Sample:
        ids = self.prepare(client, op, calls)
        qname = self._queue_of(client, op)
        if client == "node":
            if op == "delete":
                n, seconds, misses = self.node.run(op=op, qname=qname, ids=ids)
            else:
                n, seconds, misses = self.node.run(op=op, qname=qname, n=calls, message=BODY)
            return Sample(n, n, seconds, misses)
        fn = getattr(self, f"_{client.replace('-', '_')}_{op.replace(' ', '_')}")
        return fn(qname, calls, ids)

    @staticmethod
    def _timed(loop: Callable[[], int], calls: int, units: int) -> Sample:
        start = time.perf_counter()
        misses = loop()
        return Sample(calls, units, time.perf_counter() - start, misses)

    def _queues_send(self, q: str, calls: int, ids: list[str]) -> Sample:
        send = self.queues.send_message

        def loop() -> int:
            for _ in range(calls):
                send(q, BODY)
            return 0

        return self._timed(loop, calls, calls)

    def _queues_receive(self, q: str, calls: int, ids: list[str]) -> Sample:
        receive = self.queues.receive_message

        def loop() -> int:
            misses = 0
            for _ in range(calls):
                if receive(q) is None:
                    misses += 1
            return misses

        return self._timed(loop, calls, calls)

    def _queues_delete(self, q: str, calls: int, ids: list[str]) -> Sample:
        delete = self.queues.delete_message

        def loop() -> int:
            misses = 0
            for mid in ids:
                if not delete(q, mid):
                    misses += 1
            return misses

        return self._timed(loop, calls, calls)

    def _queues_batch_send(self, q: str, calls: int, ids: list[str]) -> Sample:
        send = self.queues.send_messages
        bodies = [BODY] * BATCH

        def loop() -> int:
            for _ in range(calls):
                send(q, bodies)
            return 0

        return self._timed(loop, calls, calls * BATCH)

    def _queues_batch_receive(self, q: str, calls: int, ids: list[str]) -> Sample:
        receive = self.queues.receive_messages

        def loop() -> int:
            misses = 0
            for _ in range(calls):
                misses += BATCH - len(receive(q, BATCH))
            return misses

        return self._timed(loop, calls, calls * BATCH)

    def _pyrsmq_send(self, q: str, calls: int, ids: list[str]) -> Sample:
        py = self.py

        def loop() -> int:
            for _ in range(calls):
                py.sendMessage(qname=q, message=BODY).execute()
            return 0

        return self._timed(loop, calls, calls)

    def _pyrsmq_receive(self, q: str, calls: int, ids: list[str]) -> Sample:
        py = self.py

        def loop() -> int:
            misses = 0
            for _ in range(calls):
                try:
                    py.receiveMessage(qname=q).execute()
                except NoMessageInQueue:
                    misses += 1
            return misses

        return self._timed(loop, calls, calls)

    def _pyrsmq_delete(self, q: str, calls: int, ids: list[str]) -> Sample:
        py = self.py

        def loop() -> int:
            # PyRSMQ answers False for a message never received (it had no rc / fr
            # fields to delete), though it deleted it: misses are not counted here.
            for mid in ids:
                py.deleteMessage(qname=q, id=mid).execute()
            return 0

        return self._timed(loop, calls, calls)

    def _redis_py_ping_held(self, q: str, calls: int, ids: list[str]) -> Sample:
        """PING on one redis-py Connection, without the pool: what queues' calls ride on."""
        conn = self.ping_client.connection_pool.make_connection()
        conn.connect()

        def loop() -> int:
            for _ in range(calls):
                conn.send_command("PING")
                conn.read_response()
            return 0

        try:
            return self._timed(loop, calls, calls)
        finally:
            conn.disconnect()

    def _redis_py_ping(self, q: str, calls: int, ids: list[str]) -> Sample:
        ping = self.ping_client.ping

        def loop() -> int:
            for _ in range(calls):
                ping()
            return 0

        return self._timed(loop, calls, calls)


# -- the run -------------------------------------------------------------------------


def machine_info(server: EmbeddedRedis) -> dict[str, str]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    client = redis.Redis.from_url(server.url)
    redis_version = client.info("server")["redis_version"]
    client.close()
    from importlib.metadata import version

    rsmq_pkg = json.loads((NODE_DIR / "node_modules" / "rsmq" / "package.json").read_text())
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": sh("nproc"),
        "cpu": cpu,
        "kernel": platform.release(),
        "redis-server": redis_version,
        "python": platform.python_version(),
        "redis-py": version("redis"),
        "hiredis": version("hiredis"),
        "PyRSMQ": version("PyRSMQ"),
        "node": sh("node", "--version"),
        "rsmq (node)": rsmq_pkg["version"],
    }


class CpuMeter:
    """CPU the rest of the machine used meanwhile: other work skews the figures."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.hz = os.sysconf("SC_CLK_TCK")
        self.start = self._read()

    def _read(self) -> tuple[float, int, int]:
        cpu = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        busy = sum(cpu) - cpu[3] - cpu[4]  # all but idle and iowait
        ours = 0
        for pid in self.pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ours += int(fields[11]) + int(fields[12])  # utime + stime, every thread
        return time.monotonic(), busy, ours

    def others(self) -> str:
        t1, busy1, ours1 = self._read()
        t0, busy0, ours0 = self.start
        capacity = (t1 - t0) * self.hz * (os.cpu_count() or 1)
        other = max(0, (busy1 - busy0) - (ours1 - ours0))
        return f"{other / capacity:.0%} of the machine ({os.cpu_count()} cores)"


def calibrate(bench: Bench, seconds: float) -> dict[tuple[str, str], int]:
    """Warm every client up and size each measurement to take about ``seconds``."""
    calls = {}
    for client, op in MEASUREMENTS:
        probe = 20 if op.startswith("batch") else 1000
        bench.measure(client, op, probe // 4)  # warm-up: connections, scripts, JIT
        sample = bench.measure(client, op, probe)
        calls[(client, op)] = max(probe // 4, int(sample.calls / sample.seconds * seconds))
    return calls


def interleave(
    measure: Callable[[str, str, int], Sample],
    measurements: list[tuple[str, str]],
    calls: dict[tuple[str, str], int],
    rounds: int,
    step: int,
    log: Callable[[str], None],
) -> dict[tuple[str, str], list[Sample]]:
    """Every measurement once per round, in an order rotated by ``step`` each round."""
    samples: dict[tuple[str, str], list[Sample]] = {m: [] for m in measurements}
    for r in range(rounds):
        shift = (r * step) % len(measurements)
        for m in measurements[shift:] + measurements[:shift]:
            s = measure(*m, calls[m])
            if s.misses:
                raise RuntimeError(f"{m}: {s.misses} of {s.calls} calls found nothing")
            samples[m].append(s)
        log(f"round {r + 1}/{rounds} done")
    return samples


def run(rounds: int, seconds: float, log: Callable[[str], None]) -> tuple[dict, dict]:
    ensure_node_modules()
    with tempfile.TemporaryDirectory(prefix="rsmq-bench-") as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis")
        server.start()
        try:
            assert server.process is not None
            info = machine_info(server)  # before pinning: nproc counts the usable cores
            pin_all_threads(server.process.pid, REDIS_CORE)
            os.sched_setaffinity(0, {CLIENT_CORE})
            info["pinning"] = (
                f"redis-server on core {REDIS_CORE} (taskset -a -cp), clients on core {CLIENT_CORE}"
            )
            info["rounds"] = f"{rounds} interleaved, ~{seconds:g} s per (client, op)"
            info["load average at start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
            bench = Bench(server)
            meter = CpuMeter([os.getpid(), server.process.pid, bench.node.proc.pid])
            try:
                calls = calibrate(bench, seconds)
                samples = interleave(bench.measure, MEASUREMENTS, calls, rounds, 5, log)
                info["CPU used by other processes during the run"] = meter.others()
            finally:
                bench.close()
        finally:
            server.stop()
    return info, samples


def summarize(samples: dict[tuple[str, str], list[Sample]]) -> dict[tuple[str, str], float]:
    return {m: statistics.median(s.rate for s in ss) for m, ss in samples.items()}


def render(info: dict[str, str], samples: dict, medians: dict) -> str:
    lines = [
        "| client | op | median | min | max | unit | calls per run |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for client, op in MEASUREMENTS:
        rates = [s.rate for s in samples[(client, op)]]
        unit = (
            "msgs/s" if op.startswith("batch") else ("PING/s" if op.startswith("ping") else "ops/s")
        )
        lines.append(
            f"| {client} | {op} | {medians[(client, op)]:,.0f} | {min(rates):,.0f} | "
            f"{max(rates):,.0f} | {unit} | {samples[(client, op)][0].calls:,} |"
        )
    lines += ["", "| ratio (of medians) | measured | budget | result |", "|---|---:|---:|---|"]
    for name, num, den, budget in RATIOS:
        ratio = medians[num] / medians[den]
        if budget is None:
            lines.append(f"| {name} | {ratio:.2f}× | — | info |")
        else:
            verdict = "PASS" if ratio >= budget else f"FAIL ({ratio / budget:.0%} of budget)"
            lines.append(f"| {name} | {ratio:.2f}× | ≥ {budget:g}× | {verdict} |")
    lines += ["", "| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in info.items()]
    return "\n".join(lines)


# -- asyncio under concurrency vs the server's own script limit ---------------------

#: what the asyncio section measures, each in every round: the limit (redis-benchmark),
#: then AsyncRedisSMQ with this many coroutines
LIMIT_CLIENTS = 50
COROUTINES = (1, 8, 64)
ASYNC_SECTION = (
    "AsyncRedisSMQ under concurrency vs the server's script limit (`bench/core.py --async`)"
)


def script_command(rsmq: RedisSMQ, op: str, qname: str) -> list[str]:
    """The EVALSHA our client sends for one send / receive, as redis-benchmark arguments
    (a send's 22 random id characters become 10 fixed ones and __rand_int__'s 12 digits)."""
    from queues.driver import Call

    fn = type(rsmq).send_message if op == "send" else type(rsmq).receive_message
    args = (rsmq, qname, BODY) if op == "send" else (rsmq, qname)
    call = next(fn.__wrapped__(*args))
    assert isinstance(call, Call)
    words = [str(a) for a in call.command()]
    if op == "send":
        words[-2] = "abcdefghij__rand_int__"
    return words


class AsyncBench:
    """redis-benchmark and AsyncRedisSMQ on one queue each, the same scripts."""

    def __init__(self, server: EmbeddedRedis) -> None:
        self.server = server
        self.sync = RedisSMQ(url=server.url, ns=NS)
        for q in ("limit", "aio"):
            self.sync.create_queue(q, vt=3600)
        self.sync.send_message("limit", BODY)
        self.sync.receive_message("limit")  # both scripts loaded for EVALSHA

    def prepare(self, qname: str, op: str, calls: int) -> None:
        self.sync.purge_queue(qname)
        if op == "receive":
            for k in range(0, calls + 10, FILL_CHUNK):
                self.sync.send_messages(qname, [BODY] * min(FILL_CHUNK, calls + 10 - k))

    def measure(self, who: str, op: str, calls: int) -> Sample:
        qname = "limit" if who == "limit" else "aio"
        self.prepare(qname, op, calls)
        if who == "limit":
            return self._redis_benchmark(op, calls)
        return asyncio.run(self._coroutines(int(who), op, calls))

    def _redis_benchmark(self, op: str, calls: int) -> Sample:
        words = script_command(self.sync, op, "limit")
        out = sh(
            "taskset", "-c", str(CLIENT_CORE), "redis-benchmark", "-p", str(self.server.port),
            "-c", str(LIMIT_CLIENTS), "-n", str(calls), "-r", "1000000000000", "-q", *words,
        )  # fmt: skip
        rate = float(re.findall(r"([\d.]+) requests per second", out)[-1])
        return Sample(calls, calls, calls / rate)

    async def _coroutines(self, n: int, op: str, calls: int) -> Sample:
        async with AsyncRedisSMQ(url=self.server.url, ns=NS) as a:
            call: Callable[[], Awaitable[object]] = (
                (lambda: a.send_message("aio", BODY))
                if op == "send"
                else (lambda: a.receive_message("aio"))
            )
            await asyncio.gather(*(call() for _ in range(n)))  # connected, scripts loaded
            each = max(1, (calls - n) // n)
            misses = 0

            async def loop() -> None:
                nonlocal misses
                for _ in range(each):
                    if await call() is None:
                        misses += 1

            start = time.perf_counter()
            await asyncio.gather(*(loop() for _ in range(n)))
            return Sample(n * each, n * each, time.perf_counter() - start, misses)

    def close(self) -> None:
        self.sync.close()


def run_async(rounds: int, seconds: float, log: Callable[[str], None]) -> tuple[dict, dict]:
    if not shutil.which("redis-benchmark"):
        raise SystemExit("needs redis-benchmark (Debian: apt-get install redis-tools)")
    measurements = [
        (who, op) for op in ("send", "receive") for who in ("limit", *map(str, COROUTINES))
    ]
    with tempfile.TemporaryDirectory(prefix="rsmq-bench-aio-") as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis")
        server.start()
        try:
            assert server.process is not None
            info = {
                "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "redis-benchmark": sh("redis-benchmark", "--version"),
                "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            }
            pin_all_threads(server.process.pid, REDIS_CORE)
            os.sched_setaffinity(0, {CLIENT_CORE})
            bench = AsyncBench(server)
            meter = CpuMeter([os.getpid(), server.process.pid])
            try:
                calls = {}
                for m in measurements:  # warm up and size each to about `seconds`
                    probe = bench.measure(*m, 2000)
                    calls[m] = max(2000, int(probe.rate * seconds))
                samples = interleave(bench.measure, measurements, calls, rounds, 1, log)
                info["CPU used by other processes during the run"] = meter.others()
                info["load average at the end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
            finally:
                bench.close()
        finally:
            server.stop()
    return info, samples


def render_async(info: dict[str, str], samples: dict[tuple[str, str], list[Sample]]) -> str:
    medians = summarize(samples)
    lines = [
        "| op | client | median | min | max | of the limit |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (who, op), ss in samples.items():
        rates = [s.rate for s in ss]
        client = (
            f"redis-benchmark, {LIMIT_CLIENTS} clients (the limit)"
            if who == "limit"
            else f"AsyncRedisSMQ, {who} coroutine{'s' if who != '1' else ''}"
        )
        share = medians[(who, op)] / medians[("limit", op)]
        lines.append(
            f"| {op} | {client} | {medians[(who, op)]:,.0f} ops/s | {min(rates):,.0f} | "
            f"{max(rates):,.0f} | {share:.0%} |"
        )
    lines += ["", "| budget (§10) | measured | result |", "|---|---:|---|"]
    for op in ("send", "receive"):
        share = medians[(str(COROUTINES[-1]), op)] / medians[("limit", op)]
        verdict = "PASS" if share >= 0.6 else "FAIL"
        lines.append(f"| {op}: 64 coroutines ≥ 60% of the limit | {share:.0%} | {verdict} |")
    lines += ["", "| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in info.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 short rounds, under a minute")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 7, quick 3)")
    parser.add_argument("--seconds", type=float, help="per (client, op) per round")
    parser.add_argument("--write", action="store_true", help="record in bench/RESULTS.md")
    parser.add_argument(
        "--async", dest="aio", action="store_true",
        help="AsyncRedisSMQ with 1, 8, 64 coroutines vs redis-benchmark's EVALSHA instead",
    )  # fmt: skip
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    seconds = args.seconds or (0.25 if args.quick else 0.75)
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("needs 2 cores: redis-server on core 0, the clients on core 1")

    started = time.monotonic()
    if args.aio:
        return main_async(rounds, seconds, args.write)
    info, samples = run(rounds, seconds, lambda m: print(m, file=sys.stderr, flush=True))
    medians = summarize(samples)
    table = render(info, samples, medians)
    print(table)
    print(f"\n({time.monotonic() - started:.0f} s)", file=sys.stderr)
    if args.write:
        record(
            "Core throughput: queues vs Node rsmq 0.12.4 vs PyRSMQ 0.6.1 vs PING",
            "Recorded by `python bench/core.py --write` (§10): one redis-server "
            "(`queues.server.EmbeddedRedis`) pinned to core 0, every client pinned to core 1; "
            f"{rounds} interleaved rounds, each measuring every (client, op) once for about "
            f"{seconds:g} s in a rotated order; figures are medians over the rounds. "
            "Sequential ops await each call; batch ops move 100 messages per call. "
            f"Message body: {len(BODY)} bytes. queues sends every command over one redis-py "
            "Connection per thread (hiredis parser), not through the pool checkout of "
            "`Redis.execute_command`; the budget's reference is redis-py's own `Redis.ping()`, "
            "and PING over a held connection is shown too, so the saving is visible.\n\n" + table,
        )
        print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0


def main_async(rounds: int, seconds: float, write: bool) -> int:
    info, samples = run_async(rounds, seconds, lambda m: print(m, file=sys.stderr, flush=True))
    table = render_async(info, samples)
    print(table)
    if write:
        record(
            ASYNC_SECTION,
            "Recorded by `python bench/core.py --async --write` (§10): one redis-server pinned "
            f"to core 0; redis-benchmark and AsyncRedisSMQ (one process, one event loop) "
            f"pinned to core 1; {rounds} interleaved rounds of about {seconds:g} s per "
            "measurement, rotated; medians over the rounds. The limit is redis-benchmark "
            f"with {LIMIT_CLIENTS} clients sending the very EVALSHA our client sends "
            "(`send.lua`, `receive.lua`; a receive always finds a message). Our coroutines "
            "share the client's pipelined connections (`queues/aio.py`).\n\n" + table,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
