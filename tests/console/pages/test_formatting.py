"""Numbers, durations and state labels: one module formats them for every page and chart."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils.html import conditional_escape

from dashboard.display import charts, formatting
from dashboard.templatetags.console import abs_time, state_label, when


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


# -- absolute times carry their zone (issue 22) ---------------------------------------------

AT = dt.datetime(2026, 11, 26, 1, 39, 4, 456_000, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("precision", "text"),
    [
        ("minutes", "2026-11-26 01:39 UTC"),
        ("seconds", "2026-11-26 01:39:04 UTC"),
        ("ms", "2026-11-26 01:39:04.456 UTC"),
    ],
)
def test_an_absolute_time_says_its_zone(precision: str, text: str) -> None:
    assert formatting.absolute(AT, dt.UTC, precision) == text


def test_an_absolute_time_is_in_the_consoles_zone_and_names_it(settings) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    assert abs_time(AT) == '<time datetime="2026-11-26T01:39:04Z">2026-11-26 02:39:04 CET</time>'
    assert abs_time(AT.timestamp() * 1000, "minutes").endswith(">2026-11-26 02:39 CET</time>")
    assert abs_time(None) == "–"
    # the relative time's hover says the same zone
    assert 'title="2026-11-26 02:39:04.456 CET"' in when(AT.timestamp() * 1000, 0)


def test_a_linked_answer_is_plain_text_outside_a_page() -> None:
    text = formatting.Linked("Created queue <b>.", "<b>", "/q/<b>/")
    assert str(text) == "Created queue <b>." and text == "Created queue <b>."
    assert conditional_escape(text) == 'Created queue <a href="/q/&lt;b&gt;/">&lt;b&gt;</a>.'
