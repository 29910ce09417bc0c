"""Anomaly flags (pipeline/anomalies.py) on minute rollups built here: each rule firing
and not firing, episodes opening and closing, gaps ending runs."""

from __future__ import annotations

import json

import pytest
from support.pipeline_rows import at, utc

from pipeline import anomalies, rollups
from pipeline.anomalies import Rules
from pipeline.lake import spark_schema


@pytest.fixture(scope="module")
def minute_schema(spark):
    empty = spark.createDataFrame([], spark_schema())
    return rollups.rollup(rollups.intervals(empty)).schema


@pytest.fixture
def flags(spark, minute_schema):
    """``flags(rows, rules)``: the flags of minute rows made by ``minute(...)``."""

    def run(rows: list[dict], rules: Rules | None = None) -> list[dict]:
        df = spark.createDataFrame(
            [[r[c] for c in minute_schema.names] for r in rows], minute_schema
        )
        out = anomalies.flags(df, rules or Rules()).orderBy("queue", "kind", "start").collect()
        return [
            {
                **r.asDict(),
                "start": utc(r.start),
                "end": utc(r.end),
                "figures": json.loads(r.figures),
            }
            for r in out
        ]

    return run


def minute(time: str, queue: str = "q1", namespace: str = "n", **fields: object) -> dict:
    """A quiet minute of a queue (nothing waiting, nothing moving) with ``fields`` changed."""
    row: dict[str, object] = dict.fromkeys(rollups.ROLLUP_COLUMNS, 0)
    row.update(
        connection="c", namespace=namespace, queue=queue, grain="minute",
        bucket_start=at(time), date=at(time).date(), snapshots=6, seconds=60.0,
        sent=0, received=0, send_rate=0.0, receive_rate=0.0,
        backlog_avg=0.0, visible_avg=0.0, hidden_avg=0.0, inflight_avg=0.0, delayed_avg=0.0,
        oldest_age_max=None,
    )  # fmt: skip
    row.update(fields)
    return row


def series(field: str, values: list[object], start: int = 0, **fields: object) -> list[dict]:
    """Consecutive minutes from 10:<start> with ``field`` taking ``values``."""
    return [minute(f"10:{start + i:02d}:00", **{field: v}, **fields) for i, v in enumerate(values)]


def kinds(rows: list[dict]) -> list[str]:
    return [r["kind"] for r in rows]


# -- backlog growing -------------------------------------------------------------------


def test_a_backlog_growing_n_minutes_in_a_row_is_flagged_and_open(flags):
    (flag,) = flags(series("backlog_last", [1, 2, 3, 4]), Rules(growth_intervals=3))
    assert flag == {
        "connection": "c", "namespace": "n", "queue": "q1", "kind": "backlog_growing",
        "start": at("10:01:00"), "end": None, "intervals": 3,
        "figures": {"backlog_from": 1.0, "backlog_to": 4.0},
    }  # fmt: skip


def test_a_backlog_that_stops_growing_closes_its_flag(flags):
    (flag,) = flags(series("backlog_last", [1, 2, 3, 4, 2, 2]), Rules(growth_intervals=3))
    assert (flag["start"], flag["end"], flag["intervals"]) == (at("10:01:00"), at("10:04:00"), 3)


def test_a_backlog_growing_fewer_minutes_is_not_flagged(flags):
    assert flags(series("backlog_last", [1, 2, 3, 3, 4, 5]), Rules(growth_intervals=3)) == []


def test_a_missing_minute_ends_a_run(flags):
    rows = series("backlog_last", [1, 2, 3]) + series("backlog_last", [4, 5], start=4)
    assert flags(rows, Rules(growth_intervals=3)) == []


# -- consumers stalled -------------------------------------------------------------------


def test_messages_waiting_and_none_received_is_a_stall(flags):
    rows = series("received", [5, 0, 0, 0], visible_min=3, visible_max=8, receive_rate=0.0)
    (flag,) = flags(rows, Rules(stall_intervals=3))
    assert (flag["kind"], flag["start"], flag["end"]) == ("consumers_stalled", at("10:01:00"), None)
    assert flag["figures"] == {"visible_max": 8.0, "received": 0.0}


def test_a_receive_in_between_is_no_stall(flags):
    rows = series("received", [0, 0, 1, 0, 0], visible_min=3)
    assert flags(rows, Rules(stall_intervals=3)) == []


def test_an_empty_queue_with_no_receives_is_no_stall(flags):
    # visible_min 0: at some snapshot of each minute nothing was waiting.
    rows = series("received", [0, 0, 0, 0], visible_min=0, visible_max=2)
    assert flags(rows, Rules(stall_intervals=3)) == []


def test_minutes_without_an_interval_are_no_stall(flags):
    rows = series("received", [None, None, None], visible_min=3)
    assert flags(rows, Rules(stall_intervals=3)) == []


# -- oldest age over the SLO -----------------------------------------------------------


def test_an_oldest_message_older_than_the_slo_is_flagged_at_once(flags):
    rows = series("oldest_age_max", [100.0, 301.0, 420.0, 10.0])
    (flag,) = flags(rows)
    assert (flag["kind"], flag["start"], flag["end"]) == (
        "oldest_age",
        at("10:01:00"),
        at("10:03:00"),
    )
    assert flag["figures"] == {"oldest_age_max": 420.0, "slo": 300.0}


def test_an_oldest_age_at_the_slo_or_none_is_fine(flags):
    assert flags(series("oldest_age_max", [300.0, None, 299.5])) == []


def test_a_queue_has_its_own_slo_by_name_or_by_full_name(flags):
    rows = (
        series("oldest_age_max", [100.0], queue="emails")
        + series("oldest_age_max", [100.0], queue="reports")
        + series("oldest_age_max", [100.0], queue="other")
    )
    rules = Rules(slos={"emails": 60, "reports": 60, "c/n/reports": 3600})
    got = flags(rows, rules)
    assert [(f["queue"], f["figures"]["slo"]) for f in got] == [("emails", 60.0)]


# -- redelivery storm ------------------------------------------------------------------


def test_receives_far_above_sends_with_a_steady_backlog_are_a_storm(flags):
    rows = series(
        "receive_rate", [1.0, 12.0, 12.0, 12.0],
        send_rate=1.0, received=720, sent=60, backlog_last=500,
    )  # fmt: skip
    (flag,) = flags(rows, Rules(storm_intervals=3))
    assert (flag["kind"], flag["start"], flag["intervals"]) == (
        "redelivery_storm",
        at("10:01:00"),
        3,
    )
    assert flag["figures"] == {
        "received": 2160.0, "sent": 180.0, "receive_rate_max": 12.0, "redelivered": 1980.0
    }  # fmt: skip


def test_a_backlog_drained_fast_is_no_storm(flags):
    # Receiving far faster than sending while the backlog shrinks: consumers catching up.
    rows = [
        minute(f"10:0{i}:00", receive_rate=12.0, send_rate=1.0, backlog_last=b)
        for i, b in enumerate([3000, 2400, 1800, 1200])
    ]
    assert flags(rows, Rules(storm_intervals=3)) == []


def test_receives_only_a_little_above_sends_are_no_storm(flags):
    twice = series("receive_rate", [2.0] * 4, send_rate=1.0, backlog_last=50)
    slow = series("receive_rate", [0.5] * 4, send_rate=0.0, backlog_last=50, queue="q2")
    assert flags(twice + slow, Rules(storm_intervals=3)) == []


# -- episodes --------------------------------------------------------------------------


def test_a_queue_no_longer_seen_closes_its_flags(flags):
    # q1 is not in the snapshots after 10:02 (deleted) while q2 still is at 10:10.
    rows = series("oldest_age_max", [400.0, 400.0, 400.0]) + [minute("10:10:00", queue="q2")]
    (flag,) = flags(rows)
    assert (flag["queue"], flag["end"]) == ("q1", at("10:03:00"))


def test_the_last_queue_of_a_namespace_no_longer_seen_closes_its_flags(flags):
    # Nothing of namespace n after 10:02; another namespace goes on: the lake is newer.
    rows = series("oldest_age_max", [400.0, 400.0, 400.0])
    rows.append(minute("10:10:00", queue="q2", namespace="other"))
    (flag,) = flags(rows)
    assert (flag["namespace"], flag["end"]) == ("n", at("10:03:00"))


def test_a_rule_can_fire_twice_for_one_queue(flags):
    rows = series("oldest_age_max", [400.0, 1.0, 400.0, 400.0])
    got = flags(rows)
    assert [(f["start"], f["end"], f["intervals"]) for f in got] == [
        (at("10:00:00"), at("10:01:00"), 1),
        (at("10:02:00"), None, 2),
    ]


def test_flags_have_their_columns_and_every_kind_can_fire(flags):
    rows = series(
        "backlog_last", [10, 20, 30, 40],
        visible_min=5, received=0, oldest_age_max=900.0, receive_rate=0.0,
    ) + series("receive_rate", [9.0] * 3, send_rate=0.0, received=540, queue="q2")  # fmt: skip
    got = flags(rows, Rules(growth_intervals=3, stall_intervals=3, storm_intervals=3))
    assert list(got[0]) == anomalies.FLAG_COLUMNS
    assert sorted(kinds(got)) == sorted(anomalies.KINDS)
    assert {f["queue"] for f in got if f["kind"] == "redelivery_storm"} == {"q2"}
