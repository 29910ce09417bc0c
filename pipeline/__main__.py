"""``python -m pipeline rollups|census``: a job without Django (the console runs them with
``python manage.py pipeline``, which also loads the results into its database).

    python -m pipeline rollups --lake .data/lake --out .data/pipeline [--master spark://host:7077]
    python -m pipeline census --url redis://localhost:6379/0 --namespace rsmq --out .data/pipeline

Prints what the job did as JSON; without Java 17+ it says so in one line and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from queues.server import default_redis_url

from .spark import java_problem


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m pipeline", description=__doc__.split("\n")[0])
    common(ap, default=None)
    jobs = ap.add_subparsers(dest="job", required=True)
    # The same options after the job's name too (`rollups --master URL`): not given there,
    # they keep what was given before it.
    after = common(argparse.ArgumentParser(add_help=False), default=argparse.SUPPRESS)

    r = jobs.add_parser(
        "rollups", parents=[after], help="the snapshot lake into rollups and anomaly flags"
    )
    r.add_argument("--lake", type=Path, required=True, help="the snapshot lake folder")
    r.add_argument("--out", type=Path, required=True, help="where the results go")
    r.add_argument("--full", action="store_true", help="roll everything up again from scratch")
    r.add_argument("--flag-days", type=int, default=7, help="days closed flags are kept")
    r.add_argument("--slo", type=float, default=300, help="oldest visible age SLO, s")
    r.add_argument(
        "--slo-for", action="append", default=[], metavar="QUEUE=SECONDS",
        help="a queue's own SLO (queue name or connection/namespace/queue); repeatable",
    )  # fmt: skip
    r.add_argument("--growth-intervals", type=int, default=5)
    r.add_argument("--stall-intervals", type=int, default=5)
    r.add_argument("--storm-factor", type=float, default=5.0)
    r.add_argument("--storm-min-rate", type=float, default=1.0)
    r.add_argument("--storm-intervals", type=int, default=3)

    c = jobs.add_parser(
        "census", parents=[after], help="every message of a namespace, straight from Redis"
    )
    c.add_argument(
        "--url", help="the Redis holding the queues (default: RSMQ_REDIS_URL or ./run's)"
    )
    c.add_argument("--namespace", default="rsmq")
    c.add_argument("--connection", default="default", help="the name results are filed under")
    c.add_argument("--queues", help="comma-separated queue names (default: all)")
    c.add_argument("--out", type=Path, required=True)
    c.add_argument("--min-rc", type=int, default=5, help="poison candidates: rc >= this")
    c.add_argument("--top", type=int, default=20, help="poison candidates kept per queue")
    c.add_argument("--partition-size", type=int, default=50_000)
    c.add_argument("--body", action="store_true", help="read message bodies too")
    return ap


def common(ap: argparse.ArgumentParser, default: object) -> argparse.ArgumentParser:
    ap.add_argument("--master", default=default, help="Spark master URL (default local[*])")
    ap.add_argument("--log-level", default=default, help="Spark's log level (default WARN)")
    ap.add_argument("--ui", action="store_true", default=default, help="start the Spark web UI")
    return ap


def slos(pairs: list[str]) -> dict[str, float]:
    out = {}
    for pair in pairs:
        name, sep, seconds = pair.rpartition("=")
        if not sep or not name:
            raise SystemExit(f"--slo-for {pair!r}: expected QUEUE=SECONDS")
        out[name] = float(seconds)
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    problem = java_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1
    from . import jobs
    from .anomalies import Rules
    from .spark import session

    spark = session(args.master or "local[*]", log_level=args.log_level or "WARN", ui=bool(args.ui))
    try:
        if args.job == "rollups":
            rules = Rules(
                growth_intervals=args.growth_intervals,
                stall_intervals=args.stall_intervals,
                slo=args.slo,
                slos=slos(args.slo_for),
                storm_factor=args.storm_factor,
                storm_min_rate=args.storm_min_rate,
                storm_intervals=args.storm_intervals,
            )
            result = jobs.run_rollups(
                spark, args.lake, args.out, rules, full=args.full, flag_days=args.flag_days
            ).as_dict()
        else:
            queues = tuple(q for q in args.queues.split(",") if q) if args.queues else None
            url = args.url or default_redis_url()
            target = jobs.Target(args.connection, url, args.namespace, queues)
            result = jobs.run_census(
                spark, [target], args.out, min_rc=args.min_rc, top=args.top, body=args.body,
                partition_size=args.partition_size,
            ).as_dict()  # fmt: skip
    finally:
        spark.stop()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
