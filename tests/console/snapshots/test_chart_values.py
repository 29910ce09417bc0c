"""Time, not only counts, on the queue page's charts: values on hover, the backlog's
growth figure, an axis that shows change, the markers' place, and the wait and
processing chart."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.test import Client
from django.utils import timezone

from dashboard.display import charts
from dashboard.snapshots.history import Backlog, History

pytestmark = pytest.mark.django_db

MIN = 60_000


def _figure(page: str, title: str) -> str:
    start = page.index(f'<figure class="chart"><figcaption>{title}')
    return page[start : page.index("</figure>", start)]


def _hovers(figure: str) -> list[str]:
    return [
        html.unescape(t)
        for t in re.findall(r'<rect class="hit"[^>]*><title>([^<]*)</title>', figure)
    ]


def _clock(ms: int, zone: bool = True) -> str:
    """The time of a point on hover, with its zone said."""
    at = timezone.localtime(dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC))
    return at.strftime("%H:%M:%S %Z" if zone else "%H:%M:%S")


@pytest.fixture
def growing(settings, console, queue, add_snapshot, redis_now) -> list[int]:
    """`payments`-like: 189,000 → 203,200 messages over 12 minutes (a snapshot a
    minute), nothing in flight or delayed. Returns the snapshots' times."""
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    now = redis_now()
    times = []
    for i in range(13):
        at = now - (12 - i) * MIN
        msgs = 189_000 + round(14_200 * i / 12)
        add_snapshot("q1", at, msgs=msgs, totalsent=msgs, oldest_age=60.0 * i)
        times.append(at)
    return times


def test_each_backlog_point_holds_its_values_on_hover(console, growing, viewer: Client) -> None:
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Backlog")
    hovers = _hovers(figure)
    assert len(hovers) == 13
    expected = [
        f"{_clock(at)} · visible {189_000 + round(14_200 * i / 12):,} · in flight 0 · delayed 0"
        for i, at in enumerate(growing)
    ]
    assert hovers == expected
    # the same text in data-value, for the readout line under the chart
    assert re.findall(r'data-value="([^"]*)"', figure) == [html.escape(h) for h in expected]
    assert 'class="readout"' in figure


def test_each_rate_interval_holds_its_rates_on_hover(console, growing, viewer: Client) -> None:
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Messages per second")
    hovers = _hovers(figure)
    assert len(hovers) == 12
    first = 189_000 + round(14_200 / 12) - 189_000  # sent in the first minute
    assert hovers[0] == (
        f"{_clock(growing[0], zone=False)}–{_clock(growing[1])}"
        f" · sent {charts.amount(first / 60)}/s"
        f" ({first:,}) · received 0/s (0)"
        # what the backlog did meanwhile: every message sent stayed
        f" · net +{charts.amount(first / 60)}/s (+{charts.amount(first)})"
    )


def test_the_backlog_chart_says_its_growth(console, growing, viewer: Client) -> None:
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Backlog")
    assert re.search(r'<span class="growth" data-growth>\+14,200 in 12 min</span>', figure)


def test_a_backlog_far_from_zero_gets_an_axis_that_shows_its_change(
    console, growing, viewer: Client
) -> None:
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Backlog")
    assert 'data-axis="180000-210000"' in figure and "axis 180k–210k, not from 0" in figure
    labels = re.findall(r'<text class="y"[^>]*>([^<]+)</text>', figure)
    assert labels == ["180k", "195k", "210k"]
    # the visible line spans most of the plot's height (a flat line would not)
    ys = [
        float(p.split(",")[1])
        for p in re.search(r'class="line s-visible" points="([^"]+)"', figure)[1].split()
    ]
    assert max(ys) - min(ys) > 0.4 * (charts.HEIGHT - charts.TOP - charts.BOTTOM)
    # in flight and delayed (0) lie under the axis: in the legend, not drawn
    assert "s-inflight" not in re.sub(r"<ul class=\"legend\">.*", "", figure)
    assert re.search(r"in flight <b>0</b> <small class=\"muted\">max 0, below the axis", figure)


def test_a_backlog_near_zero_keeps_zero_on_its_axis(
    console, settings, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    now = redis_now()
    for i, msgs in enumerate((40, 90, 130)):
        add_snapshot("q1", now - (2 - i) * MIN, msgs=msgs)
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Backlog")
    assert re.findall(r'<text class="y"[^>]*>([^<]+)</text>', figure) == ["0", "100", "200"]
    assert "not from 0" not in figure
    assert "+90 in 2 min" in figure


@pytest.mark.parametrize(
    ("low", "high", "axis"),
    [(189_000, 203_200, (180_000, 210_000)), (60, 100, (60, 100)), (0, 7, (0, 10)),
     (40, 130, (0, 200)), (500, 500, (0, 500)), (950, 1010, (950, 1050)),
     (955, 1010, (950, 1050)), (19_670, 19_750, (0, 20_000))],  # the last: under 1%, noise
)  # fmt: skip
def test_the_axis(low: float, high: float, axis: tuple[float, float]) -> None:
    assert charts.axis(low, high) == pytest.approx(axis)


def test_rates_and_times_start_at_zero(console, growing, viewer: Client) -> None:
    page = viewer.get(console.queue("q1")).content.decode()
    rates = _figure(page, "Messages per second")
    assert "not from 0" not in rates
    assert re.findall(r'<text class="y"[^>]*>([^<]+)</text>', rates)[0] == "0/s"


def test_axis_labels_never_read_the_same(console, settings, queue, add_snapshot, redis_now,
                                         viewer: Client) -> None:  # fmt: skip
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    now = redis_now()
    for i, msgs in enumerate((1_000_000, 1_004_000, 1_018_000)):
        add_snapshot("q1", now - (2 - i) * MIN, msgs=msgs)
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Backlog")
    # 1M, 1M, 1M would say nothing: in full
    labels = re.findall(r'<text class="y"[^>]*>([^<]+)</text>', figure)
    assert labels == ["1,000,000", "1,010,000", "1,020,000"]
    assert 'data-axis="1000000-1020000"' in figure and "axis 1,000,000–1,020,000" in figure


@pytest.mark.parametrize(
    ("span", "labels"),
    [
        (40_000, ["21:00:00", "21:00:10", "21:00:20", "21:00:30", "21:00:40"]),
        (3_600_000, ["21:00", "21:15", "21:30", "21:45", "22:00"]),
        (7 * 86_400_000, ["Sat 28", "Mon 30", "Wed 02", "Fri 04", "Sat 05"]),
    ],
)
def test_time_ticks_never_read_the_same(settings, span: int, labels: list[str]) -> None:
    """A chart of the first 40 s (a fresh console) has ticks 10 s apart: in seconds."""
    settings.TIME_ZONE = "UTC"
    start = int(dt.datetime(2026, 11, 28, 21, tzinfo=dt.UTC).timestamp() * 1000)
    line = charts.Line("visible", "s-visible", [[(start, 1.0), (start + span, 2.0)]])
    drawn = str(charts.chart("Backlog", [line], start, start + span))
    assert re.findall(r'<text class="x[^"]*"[^>]*>([^<]+)</text>', drawn) == labels


def test_every_chart_has_a_place_for_markers() -> None:
    history = History(
        "hour", 0, 600_000, 0, [Backlog(t, 5, 5, 0, 0, None) for t in (0, 300_000, 600_000)], []
    )
    empty = str(charts.backlog_chart(history))
    assert '<g class="markers"></g>' in empty
    marked = str(
        charts.chart(
            "Backlog", [charts.Line("visible", "s-visible", [[(0, 1.0), (600_000, 2.0)]])], 0,
            600_000, markers=[charts.Marker(300_000, "annotation", "deploy v2 <b>")],
        )
    )  # fmt: skip
    group = re.search(r'<g class="markers">(.*)</g></svg>', marked)
    assert group, marked
    assert '<g class="marker m-annotation"' in group[1]
    assert '<line x1="338.0" x2="338.0"' in group[1]
    assert "00:05:00 UTC deploy v2 &lt;b&gt;" in group[1] and "<b>" not in group[1]


def test_the_wait_and_processing_chart(
    console, settings, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    now = redis_now()
    add_snapshot("q1", now - 2 * MIN, msgs=3)  # nothing received: no times
    add_snapshot(
        "q1", now - MIN, msgs=3, wait_p50=0.25, wait_p95=1.5, wait_p99=2.0, wait_samples=40
    )
    add_snapshot(
        "q1", now, msgs=3, wait_p50=0.5, wait_p95=3.0, wait_p99=4.0, wait_samples=20,
        processing_p50=0.1, processing_p95=0.2, processing_p99=0.3, processing_samples=20,
    )  # fmt: skip
    page = viewer.get(console.queue("q1")).content.decode()
    figure = _figure(page, "Wait and processing time")
    assert _hovers(figure) == [
        f"{_clock(now - MIN)} · wait p50 0.25 s · wait p95 1.5 s · wait p99 2 s · 40 messages",
        f"{_clock(now)} · wait p50 0.5 s · wait p95 3 s · wait p99 4 s · processing p95 0.2 s"
        " · 20 messages",
    ]
    assert re.search(r'data-wait>0.5 s / 3 s / 4 s <small class="muted">20 messages</small>', page)
    assert re.search(r"data-processing>0.1 s / 0.2 s / 0.3 s <small", page)


def test_no_wait_chart_without_times(console, growing, viewer: Client) -> None:
    page = viewer.get(console.queue("q1")).content.decode()
    assert "Wait and processing time" not in page
    assert "no message received lately" in page
