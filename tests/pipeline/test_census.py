"""The census (pipeline/census.py) on messages built here: states, the rc distribution,
age and size histograms, poison candidates; and the census job on the test Redis."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pipeline import census, jobs
from pipeline.source import MESSAGES
from queues import RedisSMQ

NOW = 1_800_000_000_000  # the read's Redis time, epoch ms


def message(n: int, queue: str = "q1", age: float = 10, rc: int = 0, size: int = 50,
            hidden: float = 0) -> tuple:  # fmt: skip
    """Message number n of a queue, sent ``age`` s before the read, visible ``hidden`` s
    after it (0: visible now)."""
    sent = NOW - round(age * 1000)
    fr = sent + 1000 if rc else None
    return (queue, f"id{n:030d}", sent, NOW + round(hidden * 1000), rc, fr, size, None, NOW)


@pytest.fixture
def frame(spark):
    def make(rows: list[tuple]):
        return spark.createDataFrame(rows, MESSAGES).selectExpr(
            "'c' AS connection", "'n' AS namespace", "*"
        )

    return make


def test_summary_counts_states_as_the_core_does(frame):
    rows = [
        message(1, age=30),  # visible
        message(2, rc=3, hidden=20, size=900),  # in flight
        message(3, hidden=600, age=5),  # delayed
        message(4, queue="q2", age=7200, rc=1),  # visible again after a receive
    ]
    got = {r.queue: r.asDict() for r in census.summary(frame(rows)).collect()}
    assert got["q1"] == {
        "connection": "c", "namespace": "n", "queue": "q1", "messages": 3,
        "visible": 1, "inflight": 1, "delayed": 1, "rc_max": 3, "bytes": 1000,
        "size_max": 900, "age_max": 30.0, "read_at": NOW,
    }  # fmt: skip
    assert (got["q2"]["visible"], got["q2"]["age_max"]) == (1, 7200.0)


def test_histograms_put_each_message_in_one_bin(frame):
    rows = [
        message(1, age=59, rc=0, size=99),
        message(2, age=60, rc=1, size=100),
        message(3, age=300, rc=7, size=1024),
        message(4, age=8 * 86_400, rc=150, size=70_000),
        message(5, age=59, rc=0, size=10),
    ]
    got = sorted(
        (r.histogram, r.bin, r.label, r.messages) for r in census.histograms(frame(rows)).collect()
    )
    assert got == [
        ("age", 0, "< 1 min", 2), ("age", 1, "1–5 min", 1), ("age", 2, "5–15 min", 1),
        ("age", 7, "> 7 days", 1),
        ("rc", 0, "0", 2), ("rc", 1, "1", 1), ("rc", 5, "5–9", 1), ("rc", 7, "100+", 1),
        ("size", 0, "< 100 B", 2), ("size", 1, "100 B–1 KB", 1), ("size", 2, "1–10 KB", 1),
        ("size", 4, "> 64 KB", 1),
    ]  # fmt: skip


def test_a_message_with_no_time_in_its_id_has_no_age(frame):
    """go-rsmq's ids hold no time: its messages' ``sent`` is null, so their age is
    unknown — in no age bin, not the oldest — while they count everywhere else."""
    go = ("q1", "Zr4kq0T1wXb8mN2pLc7vYd", None, NOW, 2, NOW - 1000, 10, None, NOW)
    rows = [message(1, age=30), go]
    (summary,) = census.summary(frame(rows)).collect()
    assert (summary.messages, summary.age_max, summary.rc_max) == (2, 30.0, 2)
    got = sorted((r.histogram, r.bin, r.messages) for r in census.histograms(frame(rows)).collect())
    assert [g for g in got if g[0] == "age"] == [("age", 0, 1)]
    assert sum(g[2] for g in got if g[0] == "rc") == 2


def test_poison_candidates_are_the_most_received_then_the_oldest(frame):
    rows = [
        message(1, rc=4),  # below min_rc
        message(2, rc=5, age=10),
        message(3, rc=9, age=10),
        message(4, rc=5, age=99),
        message(5, rc=6, hidden=30),
        message(6, queue="q2", rc=50),
    ]
    got = [
        (r.queue, r.rank, r.id[-1], r.rc, r.state)
        for r in census.poison(frame(rows), min_rc=5, top=3).orderBy("queue", "rank").collect()
    ]
    assert got == [
        ("q1", 1, "3", 9, "visible"),
        ("q1", 2, "5", 6, "inflight"),
        ("q1", 3, "4", 5, "visible"),  # older than message 2, same rc
        ("q2", 1, "6", 50, "visible"),
    ]


def test_the_census_job_writes_its_results_and_changes_nothing(
    spark, redis_url, ns, rsmq: RedisSMQ, ns_state, tmp_path
):
    rsmq.create_queue("jobs", vt=0)
    rsmq.send_message("jobs", "poison")
    for _ in range(6):  # vt 0: visible again at once, for the next receive
        rsmq.receive_message("jobs")
    rsmq.send_messages("jobs", ["x" * 10] * 3)
    rsmq.create_queue("idle")
    before = ns_state()
    run = jobs.run_census(
        spark, [jobs.Target("default", redis_url, ns)], tmp_path, min_rc=5, partition_size=3
    )
    assert ns_state() == before
    assert run.as_dict() == {"queues": 1, "messages": 4, "poison": 1}
    summary = pq.read_table(tmp_path / "census" / "summary").to_pylist()
    assert [(s["namespace"], s["queue"], s["messages"], s["rc_max"]) for s in summary] == [
        (ns, "jobs", 4, 6)
    ]
    poison = pq.read_table(tmp_path / "census" / "poison").to_pylist()
    assert [(p["queue"], p["rc"]) for p in poison] == [("jobs", 6)]
    histograms = pq.read_table(tmp_path / "census" / "histograms").to_pylist()
    rc = sorted((h["label"], h["messages"]) for h in histograms if h["histogram"] == "rc")
    assert rc == [("0", 3), ("5–9", 1)]
