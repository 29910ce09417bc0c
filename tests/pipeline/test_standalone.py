"""The pipeline on a real Spark standalone cluster (a master and a worker started from the
installed pyspark, tests/support/spark_standalone.py): the census equals a plain redis-py read of
the same messages, its tasks run on the worker's executors with the code the driver
ships them (``queues/`` zipped: the Lua scripts load from the zip), and the rollups its
Spark jobs make equal those made in the driver process (pipeline/inmemory.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import redis

from dashboard.snapshots import lake as lake_writer
from pipeline import jobs, results
from pipeline.results import RC_BINS, SIZE_BINS
from queues import RedisSMQ

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

MIN_RC = 3

# A driver process on the cluster: the census and the rollups, as `python -m pipeline`
# runs them (pipeline.spark.session, then the job), and where the executors' Python
# found ``queues``.
DRIVER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from pipeline import jobs
    from pipeline.spark import session

    master, url, ns, lake, out = sys.argv[1:6]
    spark = session(master, app="rsmq-standalone-test")
    try:
        census = jobs.run_census(
            spark, [jobs.Target("default", url, ns)], Path(out), min_rc=%d, top=1000,
            partition_size=7,
        )
        rollups = jobs.run_rollups(spark, Path(lake), Path(out), full=True)  # Spark's jobs
        def where(_):
            import queues, queues.scripts
            return (queues.__file__, len(queues.scripts.CENSUS.source) > 0)
        executors = spark.sparkContext.parallelize(range(2), 2).map(where).collect()
    finally:
        spark.stop()
    print(json.dumps({"census": census.as_dict(), "rollups": rollups.as_dict(),
                      "executors": executors}))
    """.replace("%d", str(MIN_RC))
)


def fill(rsmq: RedisSMQ) -> None:
    """Messages in every state whose state can't change during the test: visible (sent
    long enough ago), in flight and delayed for an hour; rc from 0 to 5; bodies of many
    sizes, multi-byte ones among them."""
    rsmq.create_queue("orders", vt=0)
    rsmq.send_messages("orders", [f"order {i} " + "é" * (i * 37) for i in range(30)])
    for _ in range(5):  # vt 0: visible again at once, rc grows
        rsmq.receive_messages("orders", 4, vt=0)
    rsmq.receive_messages("orders", 3, vt=3600)  # in flight
    rsmq.create_queue("later")
    for i in range(12):
        rsmq.send_message("later", "x" * (i * 900), delay=3600)
    rsmq.send_messages("later", ["now"] * 5)
    rsmq.create_queue("empty")


def redis_py_read(url: str, ns: str) -> dict[str, list[dict]]:
    """Every message of the namespace the plain way: the zset, then the hash fields."""
    r = redis.Redis.from_url(url)
    now_s, now_us = r.time()
    now = now_s * 1000 + now_us // 1000
    out: dict[str, list[dict]] = {}
    for q in sorted(m.decode() for m in r.smembers(f"{ns}:QUEUES")):
        members = r.zrange(f"{ns}:{q}", 0, -1, withscores=True)
        h = r.hgetall(f"{ns}:{q}:Q")
        msgs = []
        for member, score in members:
            mid = member.decode()
            rc = int(h.get(f"{mid}:rc".encode(), b"0"))
            msgs.append({
                "id": mid, "rc": rc, "size": len(h[member]),
                "state": "visible" if score <= now else ("inflight" if rc else "delayed"),
            })  # fmt: skip
        out[q] = msgs
    r.close()
    return out


def bin_of(value: float, bins) -> str:
    for label, upper in bins:
        if upper is None or value < upper:
            return str(label)
    raise AssertionError(value)


def small_lake(lake_dir: Path) -> None:
    """Two queues over a few minutes, one recreated (its counters reset) half-way."""
    t0 = 1_795_000_000_000 - 1_795_000_000_000 % 3_600_000
    for k in range(30):
        rows = []
        for q, rate in (("a", 3), ("b", 11)):
            created = 1 if q == "a" or k < 15 else 2
            sent = rate * (k if created == 1 else k - 15)
            rows.append({
                "connection": "c", "namespace": "n", "queue": q, "taken_at": t0 + k * 10_000,
                "msgs": k % 7, "hiddenmsgs": k % 3, "inflight": k % 3, "delayed": 0,
                "totalsent": sent, "totalrecv": max(0, sent - 4), "created": created,
                "oldest_age": None if k % 7 == 0 else float(k * 20),
            })  # fmt: skip
        lake_writer.append(lake_dir, rows)


def test_the_census_and_rollups_on_a_standalone_cluster_equal_a_plain_read(
    spark_cluster, spark, redis_url, ns, rsmq: RedisSMQ, tmp_path
):
    fill(rsmq)
    lake_dir, out = tmp_path / "lake", tmp_path / "out"
    small_lake(lake_dir)
    want = redis_py_read(redis_url, ns)

    done = subprocess.run(
        [sys.executable, "-c", DRIVER, spark_cluster.master, redis_url, ns, str(lake_dir),
         str(out)],
        env=spark_cluster.env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:] + spark_cluster.log_tail()
    report = json.loads(done.stdout.strip().splitlines()[-1])

    # The tasks ran on the worker's executors, with the code the driver shipped.
    assert all("rsmq_pipeline.zip" in f and lua for f, lua in report["executors"])
    assert report["census"] == {
        "queues": 2,  # the empty queue has no message to count
        "messages": sum(len(m) for m in want.values()),
        "poison": sum(1 for m in want.values() for x in m if x["rc"] >= MIN_RC),
    }

    summary = {s["queue"]: s for s in pq.read_table(results.census_dir(out, "summary")).to_pylist()}
    assert set(summary) == {q for q, m in want.items() if m}
    for q, msgs in want.items():
        if not msgs:
            continue
        states = Counter(m["state"] for m in msgs)
        got = summary[q]
        assert (got["messages"], got["visible"], got["inflight"], got["delayed"]) == (
            len(msgs),
            states["visible"],
            states["inflight"],
            states["delayed"],
        ), q
        assert got["rc_max"] == max(m["rc"] for m in msgs)
        assert (got["bytes"], got["size_max"]) == (
            sum(m["size"] for m in msgs),
            max(m["size"] for m in msgs),
        )

    poison = pq.read_table(results.census_dir(out, "poison")).to_pylist()
    assert sorted((p["queue"], p["id"], p["rc"]) for p in poison) == sorted(
        (q, m["id"], m["rc"]) for q, msgs in want.items() for m in msgs if m["rc"] >= MIN_RC
    )

    histograms = pq.read_table(results.census_dir(out, "histograms")).to_pylist()
    got_bins: dict[tuple, int] = {
        (h["queue"], h["histogram"], h["label"]): h["messages"]
        for h in histograms
        if h["histogram"] in ("rc", "size")
    }
    want_bins: dict[tuple, int] = defaultdict(int)
    for q, msgs in want.items():
        for m in msgs:
            want_bins[(q, "rc", bin_of(m["rc"], RC_BINS))] += 1
            want_bins[(q, "size", bin_of(m["size"], SIZE_BINS))] += 1
    assert got_bins == dict(want_bins)

    # The rollups the cluster made are those made in this process of the same lake.
    local = tmp_path / "local"
    assert jobs.run_rollups(spark, lake_dir, local).engine == "driver"
    assert report["rollups"]["rows"] > 0 and report["rollups"]["engine"] == "spark"
    for grain in ("minute", "hour"):
        days = results.days(out, grain)
        assert days == results.days(local, grain)
        for day in days:
            assert sorted(map(repr, results.buckets(out, grain, day))) == sorted(
                map(repr, results.buckets(local, grain, day))
            )
    assert sorted(map(repr, results.flags(out))) == sorted(map(repr, results.flags(local)))
