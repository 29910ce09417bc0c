"""Drain and SLO-breach forecasts (dashboard/triage/forecast.py) on constructed snapshot
histories: the least-squares trend of the last window, exact numbers."""

from __future__ import annotations

import pytest

from dashboard.triage import forecast
from dashboard.triage.forecast import Drain, breach_in, breach_text, drain, trend

MIN = 60_000


def points(values: list[float], every: int = MIN, end: int = 10_000_000) -> list[tuple[int, float]]:
    return [(end - (len(values) - 1 - i) * every, v) for i, v in enumerate(values)]


def test_a_backlog_falling_by_a_steady_rate_drains_at_that_rate() -> None:
    # 30,000 down by 1,200 a minute (20/s): 24,000 left at the end, 1,200 s to go
    t = trend(points([30_000 - 1_200 * i for i in range(6)]))
    assert t is not None and t.slope == pytest.approx(-20.0)
    d = drain(t)
    assert d is not None and d.seconds == pytest.approx(24_000 / 20)
    assert str(d) == "drains in ~20 min at −20/s" and d.short == "~20 min"


def test_a_growing_backlog_is_not_draining() -> None:
    # +180 a minute: +3/s
    d = drain(trend(points([195_000 + 180 * i for i in range(11)])))
    assert d == Drain(pytest.approx(3.0), None)
    # a time or "never", not a rate, in the overview's cell; its title says the rate
    assert str(d) == "never drains: growing +3/s" and d.short == "never"
    assert d.sort_key() == float("inf")


def test_the_trend_is_a_least_squares_line_not_the_end_points() -> None:
    # 100, 80, 90, 70, 60 a minute apart: the least-squares slope is -9/min (the end
    # points alone would say -10/min); 60 left at 0.15/s: 400 s
    t = trend(points([100, 80, 90, 70, 60]))
    assert t is not None and t.slope * 60 == pytest.approx(-9.0)
    d = drain(t)
    assert d is not None and d.seconds == pytest.approx(60 / (9 / 60))  # 400 s


@pytest.mark.parametrize(
    "values",
    [
        [500, 500, 500, 500],  # flat
        [500, 500.2, 499.9, 500.1],  # flat: less than one message over the window
        [0, 0, 0],  # nothing at all
        [500, 400],  # too few snapshots
    ],
)
def test_nothing_is_said_when_the_trend_is_flat_or_data_is_missing(values: list[float]) -> None:
    assert drain(trend(points(values))) is None


def test_nothing_is_said_over_too_short_a_span() -> None:
    assert trend(points([10, 8, 6, 4], every=10_000)) is None  # 30 s
    assert trend(points([10, 8, 6, 4, 2, 0, 0], every=10_000)) is not None  # 60 s


def test_the_slo_breach_comes_when_the_oldest_age_reaches_its_slo() -> None:
    # the oldest message ages a second a second: 120 s old now, SLO 300 s -> 180 s
    age = trend(points([0.0 + 60 * i for i in range(3)], end=10_000_000))
    assert age is not None and age.last == 120.0
    assert breach_in(age, 300) == pytest.approx(180.0)
    assert breach_text(breach_in(age, 300)) == "oldest-age SLO breached in ~3 min"
    # ageing half as fast (some consumed): 360 s to go
    slow = trend(points([0.0 + 30 * i for i in range(5)]))
    assert breach_in(slow, 300) == pytest.approx((300 - 120) / 0.5)
    assert breach_in(age, 100) == 0.0
    assert breach_text(0.0) == "oldest-age SLO breached"


def test_no_slo_breach_when_the_age_is_flat_or_falling() -> None:
    assert breach_in(trend(points([50.0, 50.0, 50.0])), 300) is None
    assert breach_in(trend(points([200.0, 100.0, 10.0])), 300) is None
    assert breach_in(None, 300) is None
    assert breach_text(None) == ""


@pytest.mark.django_db
def test_the_overview_and_the_queue_page_read_the_same_outlook(
    console, settings, add_snapshot, redis_now
) -> None:
    settings.RSMQ_BACKLOG_WINDOW = 600
    settings.RSMQ_OLDEST_AGE_SLO = 300
    now = redis_now()
    for i in range(6):  # a snapshot a minute, the oldest message ageing
        add_snapshot(
            "q1", now - (5 - i) * MIN, msgs=30_000 - 1_200 * i, oldest_age=60.0 * i,
            wait_p50=0.5, wait_p95=2.0, wait_p99=4.0, wait_samples=10,
        )  # fmt: skip
    add_snapshot("q1", now - 20 * MIN, msgs=999_999)  # out of the window
    add_snapshot("q2", now - MIN, msgs=5)
    add_snapshot("q2", now, msgs=5)
    every = forecast.outlooks("default", console.ns, None, now)
    one = forecast.outlooks("default", console.ns, ["q1"], now)
    assert every["q1"] == one["q1"]
    o = one["q1"]
    assert o.drain is not None and o.drain.seconds == pytest.approx(24_000 / 20)
    assert o.breach_in == pytest.approx(0.0)  # 300 s old at the last: over
    assert o.wait is not None and (o.wait.p50, o.wait.p95, o.wait.p99) == (0.5, 2.0, 4.0)
    assert o.processing is None
    assert every["q2"].drain is None  # two snapshots only: too few


@pytest.mark.django_db
def test_the_age_trend_starts_again_after_nothing_was_visible(
    console, settings, add_snapshot, redis_now
) -> None:
    settings.RSMQ_OLDEST_AGE_SLO = 300
    now = redis_now()
    # old ages fall away when the queue empties: the trend is that of the new messages
    for i, age in enumerate([250.0, 280.0, None, 0.0, 30.0, 60.0, 90.0]):
        add_snapshot("q1", now - (6 - i) * 30_000, msgs=1 if age is not None else 0, oldest_age=age)
    o = forecast.outlooks("default", console.ns, ["q1"], now)["q1"]
    assert o.breach_in == pytest.approx((300 - 90) / 1.0)  # ageing a second a second
    # the same from the points alone
    points = [(now - (6 - i) * 30_000, a) for i, a in enumerate([0.0, 30.0, 60.0, 90.0], 3)]
    assert breach_in(trend(points), 300) == pytest.approx(o.breach_in)
    # nothing visible at the last snapshot: no age, no breach ahead
    add_snapshot("q1", now + 1, msgs=0, oldest_age=None)
    assert forecast.outlooks("default", console.ns, ["q1"], now + 1)["q1"].breach_in is None
