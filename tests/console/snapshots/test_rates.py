"""Send / receive rates from counter deltas between snapshots (dashboard/snapshots/rates.py): right
across counter resets (a queue deleted and recreated) and gaps (missed snapshots)."""

from __future__ import annotations

import pytest

from dashboard.snapshots.rates import Counters, Interval, buckets, intervals, merge, recent


def test_it_counts_the_growth_of_each_counter_between_snapshots() -> None:
    parts = intervals([Counters(0, 10, 4), Counters(10_000, 40, 14), Counters(20_000, 40, 34)])
    assert parts == [Interval(0, 10_000, 30, 10), Interval(10_000, 20_000, 0, 20)]
    assert (parts[0].send_rate, parts[0].receive_rate) == (3.0, 1.0)
    assert (parts[1].send_rate, parts[1].receive_rate) == (0.0, 2.0)


def test_it_counts_from_zero_when_a_counter_went_down() -> None:
    # Deleted and recreated between the snapshots: 7 sent to the new queue, 2 received.
    parts = intervals([Counters(0, 500, 480), Counters(10_000, 7, 2)])
    assert parts == [Interval(0, 10_000, 7, 2)]


def test_it_counts_from_zero_when_the_queue_was_recreated_even_if_the_counter_grew() -> None:
    # The new queue already sent more than the old one had: only `created` tells.
    parts = intervals([Counters(0, 5, 5, created=100), Counters(10_000, 9, 1, created=105)])
    assert parts == [Interval(0, 10_000, 9, 1)]


def test_it_never_gives_a_negative_rate() -> None:
    snaps = [Counters(i * 1000, total, total // 2) for i, total in enumerate([9, 3, 8, 0, 4])]
    assert all(p.sent >= 0 and p.received >= 0 for p in intervals(snaps))


def test_it_divides_by_the_real_time_across_a_gap() -> None:
    # Two snapshots missed: 60 messages in 30 s is 2/s, not 6/s.
    parts = intervals([Counters(0, 0, 0), Counters(10_000, 20, 0), Counters(40_000, 80, 0)])
    assert [p.send_rate for p in parts] == [2.0, 2.0]
    assert parts[1].seconds == 30.0


def test_it_skips_a_snapshot_no_later_than_the_one_before() -> None:
    parts = intervals([Counters(0, 0, 0), Counters(0, 5, 0), Counters(5_000, 10, 0)])
    assert parts == [Interval(0, 5_000, 10, 0)]


def test_it_needs_two_snapshots_for_a_rate() -> None:
    assert intervals([Counters(0, 10, 10)]) == []
    assert intervals([]) == []
    assert recent([Counters(0, 10, 10)], since=0) is None


def test_it_merges_intervals_into_their_average() -> None:
    merged = merge([Interval(0, 10_000, 30, 0), Interval(10_000, 40_000, 30, 90)])
    assert merged == Interval(0, 40_000, 60, 90)
    assert (merged.send_rate, merged.receive_rate) == (1.5, 2.25)


def test_it_buckets_intervals_by_where_they_end_keeping_every_message() -> None:
    parts = [Interval(t, t + 10_000, 10, 1) for t in range(0, 100_000, 10_000)]
    out = buckets(parts, origin=0, width=30_000)
    # ends 10..20 s | 30..50 s | 60..80 s | 90..100 s
    assert [(b.start, b.end, b.sent) for b in out] == [
        (0, 20_000, 20),
        (20_000, 50_000, 30),
        (50_000, 80_000, 30),
        (80_000, 100_000, 20),
    ]
    assert sum(b.sent for b in out) == 100
    assert {b.send_rate for b in out} == {1.0}


@pytest.mark.parametrize(
    ("since", "expected"),
    [
        (25_000, Interval(20_000, 40_000, 30, 0)),  # from the last snapshot before since
        (20_000, Interval(20_000, 40_000, 30, 0)),  # one at since itself
        (-1, Interval(0, 40_000, 40, 0)),  # all of them are later: all of them
    ],
)
def test_it_gives_the_recent_rate_from_the_snapshot_before_the_window(
    since: int, expected: Interval
) -> None:
    snaps = [Counters(0, 0, 0), Counters(10_000, 5, 0), Counters(20_000, 10, 0)]
    snaps += [Counters(30_000, 25, 0), Counters(40_000, 40, 0)]
    assert recent(snaps, since) == expected


def test_it_has_no_recent_rate_when_the_last_snapshot_is_older_than_the_window() -> None:
    # The worker stopped: an old rate is not a current one.
    assert recent([Counters(0, 0, 0), Counters(10_000, 50, 0)], since=20_000) is None
