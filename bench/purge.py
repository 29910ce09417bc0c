"""Purge of a big queue: how long Redis is held at a time (SPEC §10: never over 50 ms).

    python bench/purge.py [--messages 1000000] [--write]

Fills a queue on its own redis-server (pinned to core 0; this process on core 1), then
purges it while a second client PINGs in a loop: the longest PING answer is the longest
time Redis was unavailable to anyone else. SLOWLOG confirms it from the server's side.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.results import record  # noqa: E402
from queues import RedisSMQ  # noqa: E402
from queues.server import EmbeddedRedis  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()

    with EmbeddedRedis(Path(tempfile.mkdtemp(prefix="rsmq-bench-purge-"))) as server:
        subprocess.run(["taskset", "-acp", "0", str(server.process.pid)], check=True,
                       capture_output=True)  # fmt: skip
        os.sched_setaffinity(0, {1})
        rsmq = RedisSMQ(url=server.url, ns="bench")
        r = redis.Redis.from_url(server.url)
        rsmq.create_queue("big")
        body = '{"order_id": 12345, "note": "' + "x" * 100 + '"}'
        print(f"filling {args.messages:,} messages ...", flush=True)
        for _ in range(args.messages // 1000):
            rsmq.send_messages("big", [body] * 1000)
        rsmq.receive_messages("big", 1000, vt=3600)  # some in flight, with rc and fr fields
        before = rsmq.get_queue_attributes("big")
        used_before = r.info("memory")["used_memory"]
        version = r.info("server")["redis_version"]
        r.config_set("slowlog-log-slower-than", 10_000)  # 10 ms
        r.slowlog_reset()

        worst = [0.0]
        stop = threading.Event()

        def probe() -> None:
            p = redis.Redis.from_url(server.url)
            while not stop.is_set():
                t0 = time.perf_counter()
                p.ping()
                worst[0] = max(worst[0], time.perf_counter() - t0)

        t = threading.Thread(target=probe)
        t.start()
        t0 = time.perf_counter()
        purged = rsmq.purge_queue("big")
        total = time.perf_counter() - t0
        stop.set()
        t.join()
        slow = r.slowlog_get(128)
        after = rsmq.get_queue_attributes("big")
        used_after = r.info("memory")["used_memory"]

    assert purged == args.messages and after.msgs == 0
    assert (after.totalsent, after.totalrecv, after.vt) == (
        before.totalsent, before.totalrecv, before.vt,
    )  # fmt: skip
    longest_server = max((e["duration"] for e in slow), default=0) / 1000
    steps = -(-args.messages // 1000) + 1
    report = (
        f"{time.strftime('%Y-%m-%d')}: purge of {args.messages:,} messages (1,000 in flight)"
        f" on redis-server {version},"
        " redis-server on core 0, client on core 1.\n\n"
        "| what | measured | budget |\n|---|---:|---|\n"
        f"| purged | {purged:,} messages in {total:.1f} s ({steps:,} script calls) | |\n"
        f"| longest PING answer seen by another client during the purge | {worst[0] * 1000:.1f} ms"
        f" | ≤ 50 ms: {'PASS' if worst[0] <= 0.05 else 'FAIL'} |\n"
        f"| SLOWLOG entries over 10 ms | {len(slow)} (longest {longest_server:.1f} ms) | |\n"
        f"| memory | {used_before / 2**20:.0f} MiB → {used_after / 2**20:.0f} MiB | |\n"
        "| attributes and totals | kept (totalsent, totalrecv, vt unchanged) | kept |\n"
    )
    print(report)
    if args.write:
        record("Purge (`bench/purge.py`)", report)


if __name__ == "__main__":
    main()
