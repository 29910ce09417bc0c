"""Body search on 8 MB messages: how long one Redis call holds the server.

    python bench/search_stall.py [--seconds 10] [--viewers 4] [--rounds 2]
                                 [--before /work/main] [--write]

One redis-server of its own (pinned to core 0), a queue with ``maxsize -1`` holding one
8 MB message of ``a`` and 50 small ones; ``--viewers`` processes (on core 1) each run the
console's body search (``browse(contains=...)``) for ``a`` x 3900 + ``b`` in a loop for
``--seconds``, while this process PINGs every 10 ms. Redis's SLOWLOG (every call over
5 ms) says how long single calls held it; the PING latencies say what another client
waited. With ``--before TREE`` the same rounds run with that tree's ``queues/`` too,
interleaved (before, after, before, after ...), on the same server: the before/after
figures come from one run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.results import record  # noqa: E402
from queues.server import EmbeddedRedis  # noqa: E402

NEEDLE = "a" * 3900 + "b"
BODY_MB = 8


def child(url: str, seconds: float) -> None:
    """One viewer: searches until ``seconds`` are spent; prints the searches made."""
    # the tree in PYTHONPATH's queues/, not this file's (imported above for the server)
    for name in [m for m in sys.modules if m == "queues" or m.startswith("queues.")]:
        del sys.modules[name]
    sys.path[:] = [os.environ["PYTHONPATH"]] + [p for p in sys.path if p != str(ROOT)]
    from queues import RedisSMQ

    assert RedisSMQ.__module__ and sys.modules["queues"].__file__.startswith(  # type: ignore[union-attr]
        os.environ["PYTHONPATH"]
    )
    rsmq = RedisSMQ(url=url, ns="bench")
    searches = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            rsmq.browse("big", contains=NEEDLE, limit=50, preview=200)
        except Exception as e:  # the server busy past a timeout: said, not counted
            print(f"search failed: {e}", file=sys.stderr)
            continue
        searches += 1
    print(searches)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else 0.0


def round_(server: EmbeddedRedis, tree: Path, viewers: int, seconds: float) -> dict[str, float]:
    r = redis.Redis.from_url(server.url)
    r.config_set("slowlog-log-slower-than", 5000)
    r.config_set("slowlog-max-len", 100_000)
    r.slowlog_reset()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    procs = [
        subprocess.Popen(
            [
                "taskset",
                "-c",
                "1",
                sys.executable,
                __file__,
                "--child",
                server.url,
                "--seconds",
                str(seconds),
            ],
            env=env,
            cwd=tree,
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(viewers)
    ]
    pings: list[float] = []
    p = redis.Redis.from_url(server.url, socket_timeout=60)
    end = time.monotonic() + seconds + 1.0
    while time.monotonic() < end and any(x.poll() is None for x in procs):
        t0 = time.perf_counter()
        p.ping()
        pings.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.01)
    searches = sum(int(x.communicate()[0].strip() or 0) for x in procs)
    entries = r.slowlog_get(100_000)
    slow = [e["duration"] / 1000 for e in entries]
    scripts = [e["duration"] / 1000 for e in entries if e["command"].startswith(b"EVAL")]
    return {
        "searches": searches,
        "over5": len(slow),
        "scripts5": len(scripts),
        "longest_script": max(scripts, default=0.0),
        "over50": sum(d > 50 for d in slow),
        "held50": sum(d for d in slow if d > 50) / 1000,
        "longest": max(slow, default=0.0),
        "ping_p50": statistics.median(pings) if pings else 0.0,
        "ping_p90": pct(pings, 0.9),
        "ping_max": max(pings, default=0.0),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", metavar="URL")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--viewers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--before", type=Path, help="a tree whose queues/ is measured too")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.seconds)
        return

    trees = [("before", args.before)] if args.before else []
    trees.append(("after", ROOT))
    with EmbeddedRedis(Path(tempfile.mkdtemp(prefix="rsmq-bench-stall-"))) as server:
        subprocess.run(["taskset", "-acp", "0", str(server.process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        r = redis.Redis.from_url(server.url)
        version = r.info("server")["redis_version"]
        sys.path.insert(0, str(ROOT))
        from queues import RedisSMQ

        rsmq = RedisSMQ(url=server.url, ns="bench")
        rsmq.create_queue("big", maxsize=-1)
        rsmq.send_message("big", "x" * 100)
        rsmq.send_message("big", "a" * (BODY_MB * 1024 * 1024))
        for _ in range(49):
            rsmq.send_message("big", "x" * 100)
        idle = []
        for _ in range(200):
            t0 = time.perf_counter()
            r.ping()
            idle.append((time.perf_counter() - t0) * 1000)
            time.sleep(0.002)
        results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
        for _ in range(args.rounds):
            for name, tree in trees:
                results[name].append(round_(server, tree, args.viewers, args.seconds))
                print(name, results[name][-1], flush=True)
    load = os.getloadavg()
    rows = []
    for name, _ in trees:
        rs = results[name]
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        rows.append(
            f"| {name} | {med['searches']:,.0f} | {med['over5']:,.0f} | {med['scripts5']:,.0f} |"
            f" {med['over50']:,.0f} | {med['held50']:.1f} | {max(x['longest'] for x in rs):.1f} |"
            f" {max(x['longest_script'] for x in rs):.1f} | {med['ping_p50']:.2f} |"
            f" {med['ping_p90']:.2f} | {max(x['ping_max'] for x in rs):.1f} |"
        )
    report = (
        f"{time.strftime('%Y-%m-%d')}: redis-server {version} on core 0, {args.viewers} viewer"
        f" processes on core 1, each searching bodies for `a`×3900 + `b` in a loop for"
        f" {args.seconds:.0f} s; a queue with `maxsize -1`, one {BODY_MB} MB body of `a` and 50"
        f" small ones; {args.rounds} interleaved rounds per tree (medians; longest and max"
        f" over the rounds). Idle PING before the load: median"
        f" {statistics.median(idle):.2f} ms. Load average {load[0]:.1f} (shared machine)."
        + ("  `before`: " + str(args.before) + "'s queues/ (main)." if args.before else "")
        + "\n\n| code | searches | calls > 5 ms | of them scripts | calls > 50 ms |"
        " s held by them |"
        " longest call (ms) | longest script (ms) | PING p50 (ms) | PING p90 (ms) |"
        " PING max (ms) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        + "\n".join(rows)
        + "\n\nA call over 5 ms that is no script is a plain HGET of the 8 MB body (~1.2 ms on"
        " a quiet machine): Redis has no way to read part of a hash field, so one HGET per"
        " long body is the floor; the scripts no longer read long bodies at all. The PING"
        " columns are per sample, every 10 ms: a PING that waited 2 s behind one call is one"
        " sample, so the seconds Redis was held by calls over 50 ms say more.\n"
    )
    print(report)
    if args.write:
        record("Body search on 8 MB bodies (`bench/search_stall.py`)", report)


if __name__ == "__main__":
    main()
