"""The pieces of the server-drawn charts (dashboard/display/charts.py) that are plain arithmetic."""

from __future__ import annotations

import pytest

from dashboard.display.charts import amount, nice_ceiling, split


@pytest.mark.parametrize(
    ("peak", "top"),
    [(0, 1), (0.3, 0.5), (1, 1), (1.01, 2), (17, 20), (21, 25), (250, 250), (251, 500),
     (999, 1000), (4200, 5000)],
)  # fmt: skip
def test_the_y_axis_ends_at_a_round_number_over_the_peak(peak: float, top: float) -> None:
    assert nice_ceiling(peak) == pytest.approx(top)


def test_it_breaks_a_line_where_points_are_further_apart_than_the_gap() -> None:
    points = [(0, 1.0), (10, 2.0), (20, 3.0), (60, 4.0), (70, 5.0), (200, 6.0)]
    assert split(points, gap=30) == [
        [(0, 1.0), (10, 2.0), (20, 3.0)],
        [(60, 4.0), (70, 5.0)],
        [(200, 6.0)],
    ]
    assert split([], gap=30) == []


@pytest.mark.parametrize(
    ("value", "text"),
    [(0, "0"), (3, "3"), (2.5, "2.5"), (0.0167, "0.017"), (12.4, "12"), (340, "340"),
     (1250, "1.2k"), (2_000_000, "2M")],
)  # fmt: skip
def test_it_writes_counts_and_rates_short(value: float, text: str) -> None:
    assert amount(value) == text
