"""A wait-scan script call at its worst, against the stats script in the same run:
redis-server's own CPU time per call (from /proc/<pid>/stat).

    python bench/wait_scan.py [--calls N]

A queue with 100,000 members scored after ``since`` (so WAIT_SAMPLE ranks are sampled,
each read with ZRANGE + HGET) and TIMINGS_MAX worker records (one LRANGE). Redis on
core 0, this process on core 1 (bench/machine.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()

    from bench.machine import describe, pinned_redis
    from queues import RedisSMQ
    from queues.limits import TIMINGS_MAX, WAIT_SAMPLE

    with pinned_redis("wait-scan-") as (server, _):
        pid = server.process.pid

        def cpu() -> float:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

        q = RedisSMQ(url=server.url, ns="bench")
        q.create_queue("big")
        since = q.queue_stats(["big"])[0].now
        for _ in range(100):
            q.send_messages("big", [f"m{j}" for j in range(1000)])
        for _ in range(20):
            q.receive_messages("big", 1000, vt=600)
        q.record_timings("big", [(0, 1, 2.0, 3.0)] * TIMINGS_MAX)
        [reading] = q.wait_readings({"big": since})  # warm: the scripts loaded
        q.queue_stats(["big"])
        assert reading.looked == WAIT_SAMPLE and len(reading.records) == TIMINGS_MAX
        c0 = cpu()
        for _ in range(args.calls):
            q.wait_readings({"big": since})
        c1 = cpu()
        for _ in range(args.calls):
            q.queue_stats(["big"])
        c2 = cpu()
        load = os.getloadavg()
        print(f"{describe()}; load average {load[0]:.1f}; {args.calls} calls each")
        print(
            f"redis-server CPU per call: wait_scan ({WAIT_SAMPLE} looked at among"
            f" {reading.scored:,}, {TIMINGS_MAX} records) {(c1 - c0) / args.calls * 1000:.2f} ms;"
            f" stats script {(c2 - c1) / args.calls * 1000:.2f} ms"
        )


if __name__ == "__main__":
    main()
