"""Worker throughput, side by side in one run on one redis-server (§10).

End-to-end processed messages/s of a worker whose handler does nothing, with 1, 2 and 4
worker processes, for:

* ``queues``: ``rsmq worker bench.worker:worker --processes N`` (queues/worker.py);
* ``pyrsmq``: PyRSMQ 0.6.1's consumer (``rsmq.consumer.RedisSMQConsumer``), N processes;
* ``rsmq-worker``: rsmq-worker 0.5.2 from npm on Node rsmq 0.12.4 (tests/node/worker.js),
  N node processes.

A run: start the N processes on an empty queue of the run's own and wait until they are
up and polling; fill a staging queue with M messages (untimed); move them into the
workers' queue (``move_messages``, 1,000 per script call: the start) and time until the
queue is empty, i.e. every message was received, handled and deleted. M is sized from a
first, untimed warm-up round so that each run takes about ``--seconds``. Rounds are
interleaved (every (mode, client, processes) once per round, in an order rotated from
round to round); the figures are the medians over the rounds.

Two modes, interleaved too: ``pinned`` (§10: redis-server on core 0, every worker
process and this script on core 1) and ``unpinned`` (everything may use both cores).
On this 2-core machine, pinned measures what N processes get out of one core (their
scaling is then mostly the overlap of one process's Redis waits with another's work);
unpinned lets them use the second core, which redis-server needs too.

    python bench/worker.py            # full run, ~8 minutes
    python bench/worker.py --quick    # ~3 minutes
    python bench/worker.py --write    # also record the figures in bench/RESULTS.md

It is also the worker app it measures (``worker`` below, set up by environment
variables) and, with ``--pyrsmq-consumer``, the PyRSMQ consumer process.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.core import CpuMeter, machine_info, pin_all_threads  # noqa: E402
from bench.results import RESULTS, record  # noqa: E402
from queues import RedisSMQ  # noqa: E402
from queues.models import Message  # noqa: E402
from queues.server import EmbeddedRedis  # noqa: E402
from queues.worker import Worker  # noqa: E402

NODE_DIR = ROOT / "tests" / "node"
NS = "bench"
BODY = '{"event": "order.created", "id": 1234567, "payload": "' + "x" * 48 + '"}'
REDIS_CORE, CLIENT_CORE = 0, 1
PROCESSES = (1, 2, 4)
MODES = ("pinned", "unpinned")
CLIENTS = ("queues", "pyrsmq", "rsmq-worker")
#: (client, processes) measured besides: rsmq-worker with the interval array as its
#: README writes it ([0, ...]): Node's setTimeout(0) is at least 1 ms per message
EXTRA = [("rsmq-worker [0, …]", 1)]
#: queues' handler threads per process (receives in batches of as many)
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "16"))
POLL = 0.01  # s: every client polls an empty queue this often
WARMUP_MESSAGES = 1000
MIN_MESSAGES = 500

# -- the measured worker app: `rsmq worker bench.worker:worker` --------------------------

worker = Worker(poll_interval=POLL, realtime=False)
if os.environ.get("BENCH_QUEUE"):

    @worker.handler(os.environ["BENCH_QUEUE"], concurrency=CONCURRENCY, batch=CONCURRENCY)
    def noop(msg: Message) -> None:
        pass


def pyrsmq_consumer(config: dict[str, Any]) -> None:
    """One PyRSMQ 0.6.1 consumer process with a no-op processor; SIGTERM stops it."""
    from rsmq.consumer import RedisSMQConsumer

    consumer = RedisSMQConsumer(
        config["qname"],
        lambda **msg: True,
        host="127.0.0.1",
        port=config["port"],
        ns=config["ns"],
        empty_queue_delay=POLL,
    )
    signal.signal(signal.SIGTERM, lambda *_: consumer.stop())
    print("ready", flush=True)
    consumer.run()


# -- the bench ---------------------------------------------------------------------------


class CpuMeterWithChildren(CpuMeter):
    """CpuMeter that counts the worker processes (our reaped children) as ours too."""

    def _read(self) -> tuple[float, int, int]:
        t, busy, ours = super()._read()
        fields = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()
        return t, busy, ours + int(fields[13]) + int(fields[14])  # cutime + cstime


def ensure_node_modules() -> None:
    if not (NODE_DIR / "node_modules" / "rsmq-worker" / "package.json").exists():
        npm = shutil.which("npm")
        if not npm:
            raise SystemExit("npm is needed to install rsmq-worker in tests/node")
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True)


@dataclass
class Sample:
    messages: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.messages / self.seconds


class Workers:
    """The N processes of one client on one queue; each says when it is up."""

    def __init__(
        self, client: str, n: int, qname: str, server: EmbeddedRedis, pinned: bool, log: Path
    ) -> None:
        self.log = log
        pin = ["taskset", "-c", str(CLIENT_CORE)] if pinned else []
        env = {**os.environ, "BENCH_QUEUE": qname, "PYTHONPATH": str(ROOT)}
        env.pop("RSMQ_REDIS_URL", None)
        config = {"port": server.port, "ns": NS, "qname": qname}
        if client == "queues":
            commands = [
                [*pin, sys.executable, "-m", "queues.cli", "--url", server.url, "--ns", NS,
                 "worker", "bench.worker:worker", "--processes", str(n), "--log-level", "INFO"]
            ]  # fmt: skip
            self.ready_text, self.ready_count = "worker started", n
        elif client == "pyrsmq":
            commands = [
                [*pin, sys.executable, __file__, "--pyrsmq-consumer", json.dumps(config)]
            ] * n
            self.ready_text, self.ready_count = "ready", n
        else:
            config["interval"] = [0, POLL] if "[0" in client else [-1, POLL]
            node = ["node", "--no-deprecation", str(NODE_DIR / "worker.js"), json.dumps(config)]
            commands = [[*pin, *node]] * n
            self.ready_text, self.ready_count = "ready", n
        with log.open("w") as out:
            self.procs = [
                subprocess.Popen(c, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
                for c in commands
            ]

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while self.log.read_text().count(self.ready_text) < self.ready_count:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                raise RuntimeError(f"workers did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.02)
        time.sleep(0.3)  # past start-up: every process is polling the empty queue

    def stop(self) -> None:
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class Bench:
    def __init__(self, server: EmbeddedRedis, tmp: Path) -> None:
        self.server = server
        self.tmp = tmp
        self.rsmq = RedisSMQ(url=server.url, ns=NS)
        self.rsmq.create_queue("staging")
        self.runs = 0
        assert server.process is not None
        self.redis_pid = server.process.pid

    def pin(self, mode: str) -> None:
        if mode == "pinned":
            pin_all_threads(self.redis_pid, REDIS_CORE)
            os.sched_setaffinity(0, {CLIENT_CORE})
        else:
            cores = sorted(os.sched_getaffinity(0) | {REDIS_CORE, CLIENT_CORE})
            subprocess.run(
                ["taskset", "-a", "-cp", ",".join(map(str, cores)), str(self.redis_pid)],
                check=True,
                capture_output=True,
            )
            os.sched_setaffinity(0, set(cores))

    def measure(self, mode: str, client: str, n: int, messages: int) -> Sample:
        self.pin(mode)
        self.runs += 1
        qname = f"q{self.runs}"
        self.rsmq.create_queue(qname, vt=60)
        for k in range(0, messages, 10_000):
            self.rsmq.send_messages("staging", [BODY] * min(10_000, messages - k))
        log = self.tmp / f"run-{self.runs}.log"
        workers = Workers(client, n, qname, self.server, mode == "pinned", log)
        try:
            workers.wait_ready()
            start = time.perf_counter()
            self.rsmq.move_messages("staging", qname)
            while self.rsmq.get_queue_attributes(qname).msgs:
                time.sleep(0.002)
            seconds = time.perf_counter() - start
        finally:
            workers.stop()
        attrs = self.rsmq.get_queue_attributes(qname)
        if attrs.totalrecv < messages:
            raise RuntimeError(f"{client}: {attrs.totalrecv} of {messages} received")
        self.rsmq.delete_queue(qname)
        return Sample(messages, seconds)

    def close(self) -> None:
        self.rsmq.close()


def measurements(
    modes: tuple[str, ...] = MODES,
    clients: tuple[str, ...] = CLIENTS,
    processes: tuple[int, ...] = PROCESSES,
) -> list[tuple[str, str, int]]:
    return [(m, c, n) for m in modes for c in clients for n in processes] + [
        (m, c, n) for m in modes for c, n in EXTRA if c.split()[0] in clients and n in processes
    ]


def run(
    rounds: int, seconds: float, log: Any, runs: list[tuple[str, str, int]] | None = None
) -> tuple[dict[str, str], dict]:
    ensure_node_modules()
    runs = runs or measurements()
    with tempfile.TemporaryDirectory(prefix="rsmq-bench-worker-") as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis")
        server.start()
        try:
            info = machine_info(server)
            worker_pkg = NODE_DIR / "node_modules" / "rsmq-worker" / "package.json"
            info["rsmq-worker (node)"] = json.loads(worker_pkg.read_text())["version"]
            info["pinning"] = (
                f"pinned: redis-server on core {REDIS_CORE} (taskset -a -cp), every worker "
                f"process and the timer on core {CLIENT_CORE}; unpinned: no affinity"
            )
            info["rounds"] = f"{rounds} interleaved (after a warm-up round), ~{seconds:g} s per run"
            info["load average at start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
            assert server.process is not None
            bench = Bench(server, Path(tmp))
            meter = CpuMeterWithChildren([os.getpid(), server.process.pid])
            try:
                size = {}
                for m in runs:  # warm-up: sizes each run to about `seconds`
                    s = bench.measure(*m, WARMUP_MESSAGES)
                    size[m] = max(MIN_MESSAGES, int(s.rate * seconds))
                    log(f"warm-up {m}: {s.rate:,.0f} msgs/s")
                samples: dict[tuple[str, str, int], list[Sample]] = {m: [] for m in runs}
                for r in range(rounds):
                    shift = (r * 7) % len(runs)
                    for m in runs[shift:] + runs[:shift]:
                        samples[m].append(bench.measure(*m, size[m]))
                    log(f"round {r + 1}/{rounds} done")
                info["CPU used by other processes during the run"] = meter.others()
            finally:
                bench.close()
        finally:
            server.stop()
    return info, samples


def render(info: dict[str, str], samples: dict) -> str:
    medians = {m: statistics.median(s.rate for s in ss) for m, ss in samples.items()}
    lines = []
    for mode in MODES:
        lines += [
            f"**{mode}** — processed msgs/s (median; min–max)",
            "",
            "| client | 1 process | 2 processes | 4 processes | messages per run (1/2/4) |",
            "|---|---:|---:|---:|---:|",
        ]
        for client in CLIENTS:
            cells = []
            for n in PROCESSES:
                rates = [s.rate for s in samples[(mode, client, n)]]
                cells.append(
                    f"{medians[(mode, client, n)]:,.0f} ({min(rates):,.0f}–{max(rates):,.0f})"
                )
            sizes = "/".join(f"{samples[(mode, client, n)][0].messages:,}" for n in PROCESSES)
            lines.append(f"| {client} | {' | '.join(cells)} | {sizes} |")
        for client, n in EXTRA:
            rates = [s.rate for s in samples[(mode, client, n)]]
            lines.append(
                f"| {client} | {medians[(mode, client, n)]:,.0f} ({min(rates):,.0f}–"
                f"{max(rates):,.0f}) | — | — | {samples[(mode, client, n)][0].messages:,} |"
            )
        lines += ["", "| ratio (of medians) | 1 process | 2 processes | 4 processes |"]
        lines += ["|---|---:|---:|---:|"]
        for peer in CLIENTS[1:]:
            ratios = [medians[(mode, "queues", n)] / medians[(mode, peer, n)] for n in PROCESSES]
            lines.append(f"| queues / {peer} | " + " | ".join(f"{x:.2f}×" for x in ratios) + " |")
        scaling = [medians[(mode, "queues", n)] / medians[(mode, "queues", 1)] for n in PROCESSES]
        lines.append("| queues N / queues 1 | " + " | ".join(f"{x:.2f}×" for x in scaling) + " |")
        lines.append("")
    lines += ["| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in info.items()]
    return "\n".join(lines)


HEADING = "Worker throughput (`bench/worker.py`)"


def describe(rounds: int) -> str:
    """What a recorded run measured, as RESULTS.md says it above the table."""
    return (
        f"Recorded by `python bench/worker.py --write` on "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d}: end-to-end processed messages/s "
        "(received, handled by a handler that does nothing, deleted) of 1, 2 and 4 "
        "worker processes on one redis-server: queues' `rsmq worker --processes N` "
        f"({CONCURRENCY} handler threads per process, batch receives of up to "
        f"{CONCURRENCY}, finished messages deleted in batches: ack_batch "
        f"{worker.ack_batch}, ack_linger {worker.ack_linger * 1000:g} ms), PyRSMQ 0.6.1's "
        "`RedisSMQConsumer` (N processes, one message "
        "at a time) and rsmq-worker 0.5.2 (N node processes on rsmq 0.12.4, one "
        "message at a time; its interval array [-1, 0.01] so that the next receive "
        "follows a message at once: with [0, …], as its README writes it, Node's "
        "setTimeout(0) costs at least 1 ms per message, shown for 1 process). Every "
        f"client polls an empty queue every {POLL * 1000:g} ms. A run pre-fills a "
        "staging queue, starts the processes and waits until they poll, moves the "
        "messages in and times until the queue is empty; "
        f"{rounds} interleaved rounds after a warm-up round, medians. Message body: "
        f"{len(BODY)} bytes."
    )


def busy_note(info: dict[str, str]) -> str:
    """A warning above the table when other work took a fifth of the machine or more."""
    other = info.get("CPU used by other processes during the run", "0%")
    if int(other.split("%")[0]) < 20:
        return ""
    return (
        f"\n\n**A busy machine**: other work used {other.split(' (')[0]} during this run "
        f"(load average {info['load average at start']} at its start), so every client's "
        "absolute figures are low and spread (min–max); the ratios, measured side by side "
        "in the same rounds, are the comparison. Pinned runs suffer most: on core 1 a "
        "worker can't move off a core that other processes hold."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 short rounds")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--seconds", type=float, help="per run (default 2, quick 1)")
    parser.add_argument("--write", action="store_true", help="record in bench/RESULTS.md")
    parser.add_argument("--only", metavar="CLIENT,...", help="measure these clients only")
    parser.add_argument("--processes", metavar="N,...", help="these process counts only")
    parser.add_argument("--mode", choices=MODES, help="this mode only")
    parser.add_argument("--pyrsmq-consumer", metavar="CONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.pyrsmq_consumer:
        pyrsmq_consumer(json.loads(args.pyrsmq_consumer))
        return 0
    rounds = args.rounds or (2 if args.quick else 5)
    seconds = args.seconds or (1.0 if args.quick else 2.0)
    if len(os.sched_getaffinity(0)) < 2:
        raise SystemExit("needs 2 cores: redis-server on core 0, the workers on core 1")

    started = time.monotonic()
    runs = measurements(
        (args.mode,) if args.mode else MODES,
        tuple(args.only.split(",")) if args.only else CLIENTS,
        tuple(int(n) for n in args.processes.split(",")) if args.processes else PROCESSES,
    )
    if args.write and len(runs) < len(measurements()):
        raise SystemExit("--write records a full run: drop --only / --processes / --mode")
    info, samples = run(rounds, seconds, lambda m: print(m, file=sys.stderr, flush=True), runs)
    if len(runs) < len(measurements()):
        for m, ss in samples.items():
            rates = [s.rate for s in ss]
            print(f"{m}: {statistics.median(rates):,.0f} ({min(rates):,.0f}–{max(rates):,.0f})")
        return 0
    table = render(info, samples)
    print(table)
    print(f"\n({time.monotonic() - started:.0f} s)", file=sys.stderr)
    if args.write:
        record(HEADING, describe(rounds) + busy_note(info) + "\n\n" + table)
        print(f"wrote {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
