"""Numbers, durations and state labels: one module formats them for every page and chart."""

from __future__ import annotations

import pytest

from dashboard import charts, formatting
from dashboard.templatetags.console import state_label


@pytest.mark.parametrize(
    ("n", "text"), [(None, "–"), (950, "950"), (1234, "1.2k"), (150_000, "150k"), (3e7, "30M")]
)
def test_it_writes_counts_short(n: float | None, text: str) -> None:
    assert formatting.compact(n) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "–"), (0.4, "now"), (40, "40 s"), (180, "3 min"), (7200, "2 h"), (3 * 86400, "3 d")],
)
def test_it_writes_durations_in_the_unit_a_person_reads(seconds: float | None, text: str) -> None:
    assert formatting.duration(seconds) == text


def test_it_writes_rates_per_second() -> None:
    assert (formatting.per_second(2.5), formatting.per_second(None)) == ("2.5/s", "–")


def test_it_draws_chart_labels_with_the_same_numbers() -> None:
    assert charts.amount is formatting.amount


@pytest.mark.parametrize(
    ("state", "use", "label"),
    [
        ("inflight", "", "in flight"),
        ("inflight", "attributive", "in-flight"),
        ("delayed", "", "delayed"),
        ("visible", "attributive", "visible"),
    ],
)
def test_it_labels_a_state_in_one_place(state: str, use: str, label: str) -> None:
    assert state_label(state, use) == label
