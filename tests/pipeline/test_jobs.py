"""The rollups job (pipeline/jobs.py) over a lake written by the console's own writer
(dashboard/snapshots/lake.py): exact rows, a rerun that changes nothing, late files, the day after
a late snapshot, a run from scratch equal to the incremental ones, flags written."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from support.pipeline_rows import at, ms

from dashboard.snapshots import lake as lake_writer
from pipeline import jobs, results, rollup_driver
from pipeline.anomalies import Rules
from pipeline.lake import files as listed


def row(time: str, sent: int, recv: int = 0, queue: str = "q1", **counts: object) -> dict:
    """A snapshot row as the snapshot task hands it to the lake writer."""
    return {
        "connection": "c", "namespace": "n", "queue": queue, "taken_at": ms(time),
        "msgs": 0, "hiddenmsgs": 0, "inflight": 0, "delayed": 0,
        "totalsent": sent, "totalrecv": recv, "oldest_age": None, "created": 1, **counts,
    }  # fmt: skip


def rollup_rows(out: Path, grain: str = "minute") -> list[tuple]:
    """(bucket start, sent, seconds, send rate) of each bucket written, in time order."""
    rows = [b for day in results.days(out, grain) for b in results.buckets(out, grain, day)]
    return sorted(
        (dt.datetime.fromtimestamp(b.bucket_start / 1000, dt.UTC), b.sent, b.seconds, b.send_rate)
        for b in rows
    )


def files_of(out: Path) -> dict[str, float]:
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "out"


def test_a_run_rolls_up_the_lake_and_a_rerun_changes_nothing(spark, lake, out):
    lake_writer.append(lake, [row("10:00:00", 0), row("10:00:30", 30)])
    lake_writer.append(lake, [row("10:01:00", 90)])
    run = jobs.run_rollups(spark, lake, out)
    assert run.as_dict() == {
        "new_files": 2, "days": ["2026-11-21"], "rows": 3, "flags": 0, "open_flags": 0,
        "watermark": ms("10:01:00"), "compacted": 0, "engine": "driver",
    }  # fmt: skip
    assert rollup_rows(out) == [
        (at("10:00:00"), 30, 30.0, 1.0),
        (at("10:01:00"), 60, 30.0, 2.0),
    ]
    assert rollup_rows(out, "hour") == [(at("10:00:00"), 90, 60.0, 1.5)]
    before = files_of(out)

    again = jobs.run_rollups(spark, lake, out)
    assert (again.new_files, again.days, again.watermark) == (0, [], ms("10:01:00"))
    assert files_of(out) == before


def test_a_late_file_is_picked_up_and_gives_what_a_run_from_scratch_gives(
    spark, lake, out, tmp_path
):
    lake_writer.append(lake, [row("10:00:00", 0), row("10:00:30", 30)])
    lake_writer.append(lake, [row("10:02:30", 150)])
    jobs.run_rollups(spark, lake, out)
    # The minute after a missed one: 120 messages over the 120 s since the last snapshot.
    assert rollup_rows(out)[-1] == (at("10:02:00"), 120, 120.0, 1.0)

    lake_writer.append(lake, [row("10:01:30", 30)])  # late: the worker was slow to write it
    run = jobs.run_rollups(spark, lake, out)
    assert (run.new_files, run.days) == (1, [at("10:00:00").date()])
    expected = [
        (at("10:00:00"), 30, 30.0, 1.0),
        (at("10:01:00"), 0, 60.0, 0.0),
        (at("10:02:00"), 120, 60.0, 2.0),
    ]
    assert rollup_rows(out) == expected
    scratch = tmp_path / "scratch"
    jobs.run_rollups(spark, lake, scratch, full=True)
    assert rollup_rows(scratch) == expected
    assert rollup_rows(scratch, "hour") == rollup_rows(out, "hour")


def test_a_late_snapshot_before_midnight_redoes_the_next_day(spark, lake, out):
    lake_writer.append(lake, [row("2026-11-21 23:59:00", 0), row("2026-11-22 00:00:30", 90)])
    jobs.run_rollups(spark, lake, out)
    assert rollup_rows(out)[-1] == (at("2026-11-22 00:00:00"), 90, 90.0, 1.0)

    lake_writer.append(lake, [row("2026-11-21 23:59:50", 0)])
    run = jobs.run_rollups(spark, lake, out)
    assert [d.isoformat() for d in run.days] == ["2026-11-21", "2026-11-22"]
    # Its first interval now starts at 23:59:50: 90 messages over 40 s.
    assert rollup_rows(out)[-1] == (at("2026-11-22 00:00:00"), 90, 40.0, 2.25)


def test_the_job_writes_flags_and_its_state(spark, lake, out):
    lake_writer.append(lake, [
        row(f"10:0{i}:00", 0, msgs=3, oldest_age=400.0 + 60 * i) for i in range(3)
    ])  # fmt: skip
    run = jobs.run_rollups(spark, lake, out, rules=Rules(slos={"q1": 450}))
    assert (run.flags, run.open_flags) == (1, 1)
    (flag,) = ds.dataset(out / "flags", format="parquet").to_table().to_pylist()
    assert (flag["kind"], flag["start"], flag["end"]) == ("oldest_age", at("10:01:00"), None)
    assert json.loads(flag["figures"]) == {"oldest_age_max": 520.0, "slo": 450.0}
    state = json.loads((out / "_state.json").read_text())
    assert state["newest"] == ms("10:02:00")
    assert [len(names) for names in state["files"].values()] == [1]


def test_files_being_written_are_left_for_the_next_run(spark, lake, out):
    lake_writer.append(lake, [row("10:00:00", 0)])
    (lake / "date=2026-11-21" / ".1763719200000-x.parquet.tmp").write_bytes(b"half")
    assert jobs.run_rollups(spark, lake, out).new_files == 1


def test_an_empty_lake_is_nothing_to_do(spark, lake, out):
    assert jobs.run_rollups(spark, lake, out).as_dict()["new_files"] == 0


# -- exact across silent days, late files, duplicates; flags that close (issue 12) ---------


def minute_of(out: Path, when: str) -> tuple:
    [found] = [r for r in rollup_rows(out) if r[0] == at(when)]
    return found


def test_a_day_without_snapshots_changes_nothing(spark, lake, out, tmp_path):
    lake_writer.append(lake, [row("2026-11-20 23:59:40", 1000), row("2026-11-20 23:59:50", 1010)])
    jobs.run_rollups(spark, lake, out)
    lake_writer.append(lake, [row("2026-11-22 00:00:10", 2000), row("2026-11-22 00:00:20", 2010)])
    jobs.run_rollups(spark, lake, out)
    # Its first interval started at 23:59:50 two days before: 1,000 messages over 86,430 s.
    expected = (at("2026-11-22 00:00:00"), 1000, 86_430.0, 1000 / 86_430)
    assert minute_of(out, "2026-11-22 00:00:00") == expected
    jobs.run_rollups(spark, lake, tmp_path / "scratch", full=True)
    assert rollup_rows(tmp_path / "scratch") == rollup_rows(out)


def test_a_late_file_redoes_the_queues_next_snapshot_days_later(spark, lake, out):
    lake_writer.append(lake, [row("2026-11-20 10:00:00", 0, queue="q1")])
    lake_writer.append(lake, [row("2026-11-22 10:00:00", 100, queue="q1")])
    jobs.run_rollups(spark, lake, out)
    lake_writer.append(lake, [row("2026-11-20 10:00:00", 50, queue="q2")])  # another queue
    jobs.run_rollups(spark, lake, out)
    assert minute_of(out, "2026-11-22 10:00:00")[1:3] == (100, 172_800.0)

    lake_writer.append(lake, [row("2026-11-21 10:00:00", 40, queue="q1")])  # late, day between
    run = jobs.run_rollups(spark, lake, out)
    assert [d.isoformat() for d in run.days] == ["2026-11-21", "2026-11-22"]
    assert minute_of(out, "2026-11-21 10:00:00")[1:3] == (40, 86_400.0)
    assert minute_of(out, "2026-11-22 10:00:00")[1:3] == (60, 86_400.0)


def test_duplicate_readings_at_one_instant_count_the_same_in_any_file_layout(spark, tmp_path):
    # Equal counters, different hidden counts and ages: every column decides, not the files.
    a = row("10:00:00", 5, msgs=9, hiddenmsgs=9, oldest_age=None)
    b = row("10:00:00", 5, msgs=9, hiddenmsgs=0, oldest_age=500.0)
    got = []
    for i, files in enumerate([[[a], [b]], [[b], [a]], [[a, b]], [[b, a]]]):
        lake_dir, out = tmp_path / f"lake{i}", tmp_path / f"out{i}"
        for f in files:
            lake_writer.append(lake_dir, f)
        jobs.run_rollups(spark, lake_dir, out, rules=Rules(slo=300))
        [hour] = results.buckets(out, "hour", at("10:00:00").date())
        got.append((hour.hidden_avg, hour.oldest_age_max, len(results.flags(out))))
    assert got == [(9.0, None, 0)] * 4


def test_the_last_queue_of_a_namespace_no_longer_snapshotted_closes_its_flags(spark, lake, out):
    old = {"msgs": 3, "oldest_age": 900.0}
    lake_writer.append(lake, [row("10:00:00", 0, **old), row("10:00:00", 0, queue="q2")])
    lake_writer.append(lake, [row("10:01:00", 0, **old), row("10:01:00", 0, queue="q2")])
    run = jobs.run_rollups(spark, lake, out)
    assert run.open_flags == 1
    # q1 (namespace n) is deleted; q2 of another namespace is still snapshotted.
    for t in ("10:02:00", "10:03:00", "10:04:00", "10:05:00"):
        lake_writer.append(lake, [row(t, 0, queue="q2", namespace="other")])
    run = jobs.run_rollups(spark, lake, out)
    [flag] = results.flags(out)
    assert (flag.queue, flag.end, run.open_flags) == ("q1", ms("10:02:00"), 0)


def test_a_full_run_keeps_the_rollups_of_days_the_lake_no_longer_has(spark, lake, out):
    lake_writer.append(lake, [row("2026-11-20 10:00:00", 0), row("2026-11-20 10:00:30", 30)])
    lake_writer.append(lake, [row("10:00:00", 40), row("10:00:30", 70)])
    jobs.run_rollups(spark, lake, out)
    lake_writer.prune(lake, at("10:00:00"))  # retention: 2026-11-20 goes
    jobs.run_rollups(spark, lake, out, full=True)
    assert [d.isoformat() for d in results.days(out, "hour")] == ["2026-11-20", "2026-11-21"]
    assert minute_of(out, "2026-11-20 10:00:00")[1] == 30


def test_the_hourly_run_compacts_finished_hours_and_reads_only_what_is_new(spark, lake, out):
    for t in ("10:00:00", "10:00:10", "10:59:50", "11:00:00", "11:00:10"):
        lake_writer.append(lake, [row(t, 0)])
    run = jobs.run_rollups(spark, lake, out)
    assert run.compacted == 3  # 10:00 is finished: one file; 11:00 is not
    names = lake_files(lake)
    assert len(names) == 3 and sum("-compact-" in n for n in names) == 1
    # Make the compacted hour unreadable: the next hour's run must not need it.
    [compacted] = [n for n in names if "-compact-" in n]
    (lake / "date=2026-11-21" / compacted).write_bytes(b"not parquet")
    lake_writer.append(lake, [row("12:00:00", 120)])
    run = jobs.run_rollups(spark, lake, out)
    assert (run.new_files, run.compacted) == (1, 2)
    assert minute_of(out, "12:00:00")[1:3] == (120, 3590.0)


def lake_files(lake_dir: Path) -> list[str]:
    return [n for names in listed(lake_dir).values() for n in names]


def test_a_run_that_died_after_rewriting_a_partition_is_simply_done_again(spark, lake, out):
    lake_writer.append(lake, [row("10:00:00", 0), row("10:00:00", 0, queue="q2")])
    lake_writer.append(lake, [row("10:00:30", 30), row("10:00:30", 5, queue="q2")])
    jobs.run_rollups(spark, lake, out, full=True)  # Spark writes the partitions
    partition = results.day_dir(out, "minute", at("10:00").date()) / "hour=10"
    spark_files = {f.name: f.read_bytes() for f in partition.glob("*.parquet")}
    state = results.state_file(out).read_bytes()

    lake_writer.append(lake, [row("10:01:00", 90)])
    assert jobs.run_rollups(spark, lake, out).engine == "driver"
    assert [f.name for f in partition.glob("*.parquet")] == [rollup_driver.ROLLUP_FILE]
    # As if it died after its rename: Spark's files back, the state not yet written.
    for name, data in spark_files.items():
        (partition / name).write_bytes(data)
    results.state_file(out).write_bytes(state)

    jobs.run_rollups(spark, lake, out)
    scratch = lake.parent / "scratch"
    jobs.run_rollups(spark, lake, scratch, full=True)
    both = [
        sorted(map(repr, results.buckets(o, "minute", at("10:00").date()))) for o in (out, scratch)
    ]
    assert both[0] == both[1]
    assert len(both[0]) == 3  # q1 at 10:00 and 10:01, q2 at 10:00: nothing twice
