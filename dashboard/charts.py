"""Charts drawn on the server as inline SVG: no JavaScript, no chart library.

Colours come from the stylesheet's variables through classes (``s-visible``, …), so
the charts follow light and dark mode like the rest of the page.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from .formatting import amount
from .history import History, Trend

Point = tuple[int, float]  # (epoch ms, value)

WIDTH, HEIGHT = 640, 190
LEFT, RIGHT, TOP, BOTTOM = 46, 10, 10, 22  # room for the axis labels


@dataclass(frozen=True)
class Line:
    label: str
    css: str  # s-visible, s-inflight, s-delayed, s-sent, s-received
    segments: list[list[Point]]  # drawn separately: a gap between two has no data

    @property
    def last(self) -> float | None:
        return self.segments[-1][-1][1] if self.segments and self.segments[-1] else None

    @property
    def peak(self) -> float:
        return max((v for seg in self.segments for _, v in seg), default=0)


@dataclass(frozen=True)
class Marker:
    """An event drawn on a chart at its time (dashboard/timeline.py): a vertical line
    whose text shows on hover and on focus."""

    at: int  # epoch ms
    kind: str  # action, alert, flag, annotation: its colour (class m-<kind>)
    text: str


def _markers(markers: Sequence[Marker], start: int, end: int, x: Callable[[int], str]) -> str:
    bottom = HEIGHT - BOTTOM
    return format_html_join(
        "",
        '<g class="marker m-{}" tabindex="0" data-marker="{}" aria-label="{}">'
        '<title>{}</title><rect class="hit" x="{}" y="{}" width="9" height="{}"/>'
        '<line x1="{}" x2="{}" y1="{}" y2="{}"/><path d="M{} {} h8 l-4 6 z"/></g>',
        (
            (m.kind, label, label, label, f"{float(x(m.at)) - 4.5:.1f}", TOP, bottom - TOP,
             x(m.at), x(m.at), TOP, bottom, f"{float(x(m.at)) - 4:.1f}", TOP)
            for m in markers
            if start <= m.at <= end
            for label in [f"{_marker_time(m.at)} {m.text}"]
        ),
    )  # fmt: skip


def _marker_time(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%H:%M:%S UTC")


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 × 10^k that is ≥ value (the top of the y axis)."""
    if value <= 0:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power + 1e-9:
            return step * power
    return 10 * power


def split(points: Sequence[Point], gap: int) -> list[list[Point]]:
    """Runs of points with no more than ``gap`` ms between neighbours."""
    segments: list[list[Point]] = []
    for point in points:
        if segments and point[0] - segments[-1][-1][0] <= gap:
            segments[-1].append(point)
        else:
            segments.append([point])
    return segments


def _tick_label(ms: int, span: int) -> str:
    t = timezone.localtime(dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC))
    return t.strftime("%a %d" if span > 2 * 86_400_000 else "%H:%M")


def chart(
    title: str,
    lines: Sequence[Line],
    start: int,
    end: int,
    unit: str = "",
    markers: Sequence[Marker] = (),
) -> SafeString:
    """A line chart of ``lines`` over [start, end] (epoch ms) with its legend, and
    ``markers`` (events) at their times."""
    top = nice_ceiling(max((line.peak for line in lines), default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = max(end - start, 1)

    # Coordinates as text: format_html escapes its arguments into strings first.
    def x(t: int) -> str:
        return f"{LEFT + (t - start) / span * plot_w:.1f}"

    def y(v: float) -> str:
        return f"{TOP + plot_h - v / top * plot_h:.1f}"

    grid = format_html_join(
        "",
        '<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/>'
        '<text class="y" x="{}" y="{}" dy="4">{}</text>',
        (
            (LEFT, WIDTH - RIGHT, y(v), y(v), LEFT - 6, y(v), amount(v) + unit)
            for v in (0, top / 2, top)
        ),
    )
    ticks = format_html_join(
        "",
        '<text class="x {}" x="{}" y="{}">{}</text>',
        (
            (("first", "", "", "", "last")[i], x(t), HEIGHT - 6, _tick_label(t, span))
            for i, t in enumerate(start + span * i // 4 for i in range(5))
        ),
    )
    paths = format_html_join(
        "",
        '<polyline class="line {}" points="{}"/>',
        (
            (line.css, " ".join(f"{x(t)},{y(v)}" for t, v in seg))
            for line in lines
            for seg in line.segments
            if len(seg) > 1
        ),
    )
    # A lone point between two gaps is still data: a dot.
    dots = format_html_join(
        "",
        '<circle class="dot {}" cx="{}" cy="{}" r="2"/>',
        (
            (line.css, x(seg[0][0]), y(seg[0][1]))
            for line in lines
            for seg in line.segments
            if len(seg) == 1
        ),
    )
    summary = ", ".join(
        f"{line.label} {amount(line.last)}{unit}" for line in lines if line.last is not None
    )
    legend = format_html_join(
        "",
        '<li><span class="swatch {}"></span>{} <b>{}</b> <small class="muted">max {}</small></li>',
        (
            (line.css, line.label, amount(line.last) + unit, amount(line.peak) + unit)
            for line in lines
            if line.last is not None
        ),
    )
    marks = _markers(markers, start, end, x) if markers else ""
    return format_html(
        '<figure class="chart"><figcaption>{}</figcaption>'
        '<svg viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>{}{}{}{}{}</svg>'
        '<ul class="legend">{}</ul></figure>',
        title, WIDTH, HEIGHT, f"{title}: {summary or 'no data'}", summary or "no data",
        grid, ticks, paths, dots, marks, legend,
    )  # fmt: skip


def backlog_chart(history: History, markers: Sequence[Marker] = ()) -> SafeString:
    gap = history.gap
    series = (
        ("visible", "s-visible", lambda b: b.visible),
        ("in flight", "s-inflight", lambda b: b.inflight),
        ("delayed", "s-delayed", lambda b: b.delayed),
    )
    lines = [
        Line(label, css, split([(b.at, get(b)) for b in history.backlog], gap))
        for label, css, get in series
    ]
    return chart("Backlog", lines, history.start, history.end, markers=markers)


def _steps(history: History, rate: str) -> list[list[Point]]:
    # A rate holds over its whole interval: drawn as a step from its start to its end.
    segments: list[list[Point]] = []
    for part in history.rates:
        value = getattr(part, rate)
        if segments and segments[-1][-1][0] == part.start:
            segments[-1] += [(part.start, value), (part.end, value)]
        else:
            segments.append([(part.start, value), (part.end, value)])
    return segments


def rate_chart(history: History, markers: Sequence[Marker] = ()) -> SafeString:
    lines = [
        Line("sent", "s-sent", _steps(history, "send_rate")),
        Line("received", "s-received", _steps(history, "receive_rate")),
    ]
    return chart(
        "Messages per second", lines, history.start, history.end, unit="/s", markers=markers
    )


SPARK_W, SPARK_H = 100, 24


def sparkline(trend: Trend | None, gap: int) -> SafeString:
    """An overview row's messages over the last hour, scaled to its own peak."""
    if trend is None or not trend.msgs:
        return mark_safe('<span class="muted">–</span>')
    top = max(v for _, v in trend.msgs) or 1
    span = max(trend.end - trend.start, 1)

    def xy(t: int, v: float) -> str:
        return (
            f"{(t - trend.start) / span * SPARK_W:.1f},{SPARK_H - 1 - v / top * (SPARK_H - 2):.1f}"
        )

    segments = [seg for seg in split(trend.msgs, gap) if len(seg) > 1]
    # Filled down to zero under a baseline: a flat backlog reads as a level, not a dash.

    def x(t: int) -> str:
        return f"{(t - trend.start) / span * SPARK_W:.1f}"

    areas = format_html_join(
        "",
        '<polygon class="area s-msgs" points="{} {} {}"/>',
        ((f"{x(seg[0][0])},{SPARK_H}", " ".join(xy(t, v) for t, v in seg),
          f"{x(seg[-1][0])},{SPARK_H}") for seg in segments),
    )  # fmt: skip
    lines = areas + format_html_join(
        "",
        '<polyline class="line s-msgs" points="{}"/>',
        ((" ".join(xy(t, v) for t, v in seg),) for seg in segments),
    )
    base = SPARK_H - 0.5
    lines += format_html('<line class="base" x1="0" y1="{}" x2="{}" y2="{}"/>', base, SPARK_W, base)
    low = min(v for _, v in trend.msgs)
    label = f"Messages over the last hour: {amount(low)} to {amount(top)}"
    return format_html(
        '<svg class="spark" viewBox="0 0 {} {}" width="{}" height="{}" role="img" aria-label="{}">'
        "<title>{}</title>{}</svg>",
        SPARK_W, SPARK_H, SPARK_W, SPARK_H, label, label, lines,
    )  # fmt: skip
