"""Rollups (pipeline/rollups.py) on small frames built here: rates from counter deltas
over real elapsed time, counter resets, gaps, duplicates, the counts, minutes into hours."""

from __future__ import annotations

import pytest
from support.pipeline_rows import at, snap, utc

from pipeline import rollups
from pipeline.lake import spark_schema


def minutes(spark, rows: list[tuple], grain: str = "minute") -> list[dict]:
    df = spark.createDataFrame(rows, spark_schema())
    out = rollups.rollup(rollups.intervals(df), (grain,))
    return [r.asDict() for r in out.orderBy(*rollups.KEY, "bucket_start").collect()]


def rates(rows: list[dict]) -> list[tuple]:
    return [
        (r["queue"], utc(r["bucket_start"]), r["sent"], r["received"], r["seconds"],
         r["send_rate"], r["receive_rate"])
        for r in rows
    ]  # fmt: skip


def test_rates_are_counter_growth_over_the_real_time_between_snapshots(spark):
    rows = minutes(spark, [
        snap("10:00:00", 100, 50),
        snap("10:00:20", 110, 60),
        snap("10:00:40", 130, 62),
        snap("10:01:00", 160, 92),
    ])  # fmt: skip
    # An interval belongs to the minute its end falls in: 10:00 has the two ending at :20
    # and :40 (30 sent, 12 received over 40 s); 10:01 the one ending at 10:01:00.
    assert rates(rows) == [
        ("q1", at("10:00:00"), 30, 12, 40.0, 0.75, 0.3),
        ("q1", at("10:01:00"), 30, 30, 20.0, 1.5, 1.5),
    ]


def test_a_queues_first_snapshot_has_no_interval(spark):
    rows = minutes(spark, [snap("10:00:30", 7, 3)])
    assert rates(rows) == [("q1", at("10:00:00"), None, None, None, None, None)]
    assert rows[0]["snapshots"] == 1


def test_a_new_created_means_the_counters_started_again(spark):
    # Deleted and made again between :20 and :40: 5 sent since, not 5 - 120.
    rows = minutes(spark, [
        snap("10:00:00", 100, 100),
        snap("10:00:20", 120, 110),
        snap("10:00:40", 5, 2, created=2),
        snap("10:01:00", 9, 8, created=2),
    ])  # fmt: skip
    assert rates(rows) == [
        ("q1", at("10:00:00"), 25, 12, 40.0, 0.625, 0.3),
        ("q1", at("10:01:00"), 4, 6, 20.0, 0.2, 0.3),
    ]


def test_a_counter_that_went_down_counts_its_new_value(spark):
    # Same created (a FLUSHALL and a client that recreated the queue within the second):
    # the drop still says the counters started again.
    rows = minutes(spark, [snap("10:00:00", 500, 500), snap("10:00:30", 6, 3)])
    assert rates(rows) == [("q1", at("10:00:00"), 6, 3, 30.0, 0.2, 0.1)]


def test_a_gap_averages_over_the_missing_minutes_and_makes_none_up(spark):
    rows = minutes(spark, [
        snap("10:00:00", 0, 0),
        snap("10:00:30", 30, 30),
        snap("10:04:30", 270, 30),  # 10:01 .. 10:03 missed
    ])  # fmt: skip
    assert rates(rows) == [
        ("q1", at("10:00:00"), 30, 30, 30.0, 1.0, 1.0),
        ("q1", at("10:04:00"), 240, 0, 240.0, 1.0, 0.0),
    ]


def test_the_same_instant_twice_counts_once(spark):
    rows = minutes(spark, [
        snap("10:00:00", 0, 0),
        snap("10:00:30", 30, 10),
        snap("10:00:30", 30, 10),
        snap("10:00:50", 40, 20),
    ])  # fmt: skip
    assert rates(rows) == [("q1", at("10:00:00"), 40, 20, 50.0, 0.8, 0.4)]
    assert rows[0]["snapshots"] == 3


def test_the_counts_of_a_bucket(spark):
    rows = minutes(spark, [
        snap("10:00:00", 0, 0, msgs=10, hiddenmsgs=4, inflight=3, delayed=1, oldest_age=5.0),
        snap("10:00:20", 0, 0, msgs=20, hiddenmsgs=2, inflight=2, delayed=0, oldest_age=None),
        snap("10:00:40", 0, 0, msgs=6, hiddenmsgs=6, inflight=6, delayed=0, oldest_age=None),
    ])  # fmt: skip
    (r,) = rows
    counts = {k: v for k, v in r.items() if k.split("_")[0] in
              ("backlog", "visible", "hidden", "inflight", "delayed", "oldest")}  # fmt: skip
    assert counts == {
        "backlog_avg": 12.0, "backlog_max": 20, "backlog_last": 6,
        "visible_min": 0, "visible_avg": 8.0, "visible_max": 18,
        "hidden_avg": 4.0, "hidden_max": 6,
        "inflight_avg": 11 / 3, "inflight_max": 6,
        "delayed_avg": 1 / 3, "delayed_max": 1,
        "oldest_age_max": 5.0,
    }  # fmt: skip
    assert (r["grain"], r["snapshots"], str(r["date"])) == ("minute", 3, "2026-11-21")


def test_nothing_visible_all_minute_leaves_oldest_age_null(spark):
    (r,) = minutes(spark, [snap("10:00:00", 0, 0, msgs=2, hiddenmsgs=2)])
    assert r["oldest_age_max"] is None


def test_an_hour_is_its_minutes_merged(spark):
    snaps = [
        snap("10:00:00", 0, 0, msgs=4),
        snap("10:00:30", 30, 0, msgs=8),
        snap("10:17:30", 90, 60, msgs=2, oldest_age=40.0),  # a gap inside the hour
        snap("10:59:30", 150, 60, msgs=3),
        snap("11:00:30", 151, 160, created=1, msgs=0),
    ]
    hours = minutes(spark, snaps, "hour")
    assert rates(hours) == [
        ("q1", at("10:00:00"), 150, 60, 3570.0, 150 / 3570, 60 / 3570),
        ("q1", at("11:00:00"), 1, 100, 60.0, 1 / 60, 100 / 60),
    ]
    first = hours[0]
    assert (first["snapshots"], first["backlog_avg"], first["backlog_max"]) == (4, 4.25, 8)
    assert (first["backlog_last"], first["oldest_age_max"]) == (3, 40.0)
    # The same as rolling the snapshots straight into hours, and as the minutes summed.
    all_minutes = [r for r in minutes(spark, snaps) if utc(r["bucket_start"]) < at("11:00:00")]
    assert first["sent"] == sum(r["sent"] or 0 for r in all_minutes)


def test_queues_namespaces_and_connections_are_rolled_up_apart(spark):
    rows = minutes(spark, [
        snap("10:00:00", 0, 0),
        snap("10:00:30", 30, 0),
        snap("10:00:10", 1000, 0, queue="q2"),
        snap("10:00:40", 1003, 0, queue="q2"),
        snap("10:00:15", 0, 0, namespace="other"),
        snap("10:00:45", 60, 0, namespace="other"),
        snap("10:00:05", 50, 0, connection="d"),
        snap("10:00:35", 50, 0, connection="d"),
    ])  # fmt: skip
    got = {(r["connection"], r["namespace"], r["queue"]): r["send_rate"] for r in rows}
    assert got == {
        ("c", "n", "q1"): 1.0,
        ("c", "n", "q2"): 0.1,
        ("c", "other", "q1"): 2.0,
        ("d", "n", "q1"): 0.0,
    }


def test_rollups_has_minutes_and_hours_with_the_same_columns(spark):
    df = spark.createDataFrame([snap("10:00:00", 0, 0), snap("10:00:30", 3, 0)], spark_schema())
    out = rollups.rollups(df)
    assert out.columns == rollups.ROLLUP_COLUMNS
    got = sorted((r.grain, utc(r.bucket_start), r.sent) for r in out.collect())
    assert got == [("hour", at("10:00:00"), 3), ("minute", at("10:00:00"), 3)]


@pytest.mark.parametrize("day", ["2026-11-21 23:59:59", "2026-11-22 00:00:00"])
def test_a_bucket_is_dated_by_its_start_in_utc(spark, day):
    (r,) = minutes(spark, [snap(day, 0, 0)], "hour")
    assert str(r["date"]) == day[:10]
