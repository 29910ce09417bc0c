"""Charts drawn on the server as inline SVG: no chart library.

Colours come from the stylesheet's variables through classes (``s-visible``, …), so
the charts follow light and dark mode like the rest of the page.

Values on hover: each time the chart has a value for is a ``<rect class="hit">`` over
the plot's height, holding all the lines' values then in its ``<title>`` (the browser's
own tooltip) and ``data-value``; static/js/console.js also writes the hovered one into
the figure's ``.readout`` line (without the script, the tooltips still show).

The y axis starts at 0 unless the data is far from it (its lowest value above half its
highest, as a 189k → 203k backlog): then it spans a round range around the data, and
the caption says so ("axis 180k–210k"), so that a change shows.

Markers (deploys, operator actions, alerts, flags: the incident timeline) are drawn in
each chart's ``<g class="markers">``, always present, from ``chart(markers=...)``: a
vertical line per marker inside the plot, its text in a ``<title>`` and shown on hover;
not tab stops (a page of them would take dozens of Tab presses): the page lists them
under the charts for the keyboard. Each hover strip carries its time (``data-at``, epoch
ms): a click there dates *Mark an event* (static/js/console.js).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from dashboard.display.formatting import amount, duration, exact
from dashboard.snapshots.history import History, Trend
from dashboard.snapshots.rates import Interval

Point = tuple[int, float]  # (epoch ms, value)

WIDTH, HEIGHT = 640, 190
LEFT, RIGHT, TOP, BOTTOM = 46, 10, 10, 22  # room for the axis labels


@dataclass(frozen=True, slots=True)
class Hover:
    """What hovering over [start, end] (epoch ms) of a chart shows."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Line:
    label: str
    css: str  # s-visible, s-inflight, s-delayed, s-sent, s-received
    segments: list[list[Point]]  # drawn separately: a gap between two has no data

    @property
    def last(self) -> float | None:
        return self.segments[-1][-1][1] if self.segments and self.segments[-1] else None

    @property
    def lowest(self) -> float:
        return min((v for seg in self.segments for _, v in seg), default=0)

    @property
    def highest(self) -> float:
        return max((v for seg in self.segments for _, v in seg), default=0)

    @property
    def peak(self) -> float:
        return max((v for seg in self.segments for _, v in seg), default=0)


@dataclass(frozen=True)
class Marker:
    """An event drawn on a chart at its time (dashboard/triage/timeline.py): a vertical line
    whose text shows on hover and on focus."""

    at: int  # epoch ms
    kind: str  # action, alert, flag, annotation: its colour (class m-<kind>)
    text: str


def _markers(markers: Sequence[Marker], start: int, end: int, x: Callable[[int], str]) -> str:
    bottom = HEIGHT - BOTTOM
    return format_html_join(
        "",
        '<g class="marker m-{}" data-marker="{}">'
        '<title>{}</title><rect class="hit" x="{}" y="{}" width="9" height="{}"/>'
        '<line x1="{}" x2="{}" y1="{}" y2="{}"/><path d="M{} {} h8 l-4 6 z"/></g>',
        (
            (m.kind, label, label, f"{float(x(m.at)) - 4.5:.1f}", TOP, bottom - TOP,
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


def axis(low: float, high: float) -> tuple[float, float]:
    """The y axis' (bottom, top) for data from ``low`` to ``high``: from 0 to a round
    number over ``high``, unless the data is far from zero (``low`` above half of
    ``high``): then from a round number under ``low`` to one over ``high``, in steps of
    a round half (or third) of the range."""
    # A change under 1% of the values is noise (rates wobble by their rounding): from 0.
    if low <= 0 or high - low < high / 100 or low <= high / 2:
        return 0.0, nice_ceiling(high)
    step = nice_ceiling((high - low) / 2)
    bottom = math.floor(low / step) * step
    top = bottom + 2 * step
    while top < high - 1e-9:
        top += step
    return bottom, top


def scale(lines: Sequence[Line], from_zero: bool = False) -> tuple[float, float]:
    """The y axis of ``lines``: decided by the first (the backlog's visible messages),
    up to the highest of all. Lines wholly under a bottom that is not 0 are left off
    the plot (their legend says so); a line that crosses it brings the axis down to 0."""
    drawn = [line for line in lines if line.segments]
    if not drawn:
        return axis(0, 0)
    high = max(line.highest for line in drawn)
    if from_zero:
        # from 0, or from under it when a line goes negative (a backlog's net change)
        low = min(line.lowest for line in drawn)
        top = nice_ceiling(high) if high > 0 else 0.0
        bottom = -nice_ceiling(-low) if low < 0 else 0.0
        return bottom, top if top > bottom else bottom + 1
    bottom, top = axis(drawn[0].lowest, high)
    if bottom > 0 and any(line.lowest < bottom <= line.highest for line in drawn):
        bottom, top = axis(min(line.lowest for line in drawn), high)
    return bottom, top


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
    """A tick's time, to the precision its neighbours a quarter of ``span`` away need: days,
    minutes, or seconds (a chart of the first few minutes would read 21:00 five times)."""
    t = timezone.localtime(dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC))
    if span > 2 * 86_400_000:
        return t.strftime("%a %d")
    return t.strftime("%H:%M" if span >= 4 * 60_000 else "%H:%M:%S")


def chart(
    title: str,
    lines: Sequence[Line],
    start: int,
    end: int,
    unit: str = "",
    hovers: Sequence[Hover] = (),
    note: str = "",
    markers: Sequence[Marker] = (),
    from_zero: bool = True,
) -> SafeString:
    """A line chart of ``lines`` over [start, end] (epoch ms) with its legend and
    ``markers`` (events) at their times; ``hovers``
    say the values over each stretch of time, ``note`` is said beside the title. The
    backlog's chart (``from_zero=False``) may start its axis above 0 (``scale``); rates
    and times start at 0."""
    bottom, top = scale(lines, from_zero)
    below = {line.label for line in lines if line.segments and line.highest < bottom}
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = max(end - start, 1)

    # Coordinates as text: format_html escapes its arguments into strings first.
    def x(t: int) -> str:
        return f"{_x(t):.1f}"

    def _x(t: int) -> float:
        return LEFT + min(max(t - start, 0), span) / span * plot_w

    def y(v: float) -> str:
        return f"{TOP + plot_h - (v - bottom) / (top - bottom) * plot_h:.1f}"

    # three gridlines; 0 the middle one when the axis crosses it
    levels = (bottom, 0.0 if bottom < 0 < top else (bottom + top) / 2, top)
    labels = _labels(levels)
    grid = format_html_join(
        "",
        '<line class="grid" x1="{}" x2="{}" y1="{}" y2="{}"/>'
        '<text class="y" x="{}" y="{}" dy="4">{}</text>',
        (
            (LEFT, WIDTH - RIGHT, y(v), y(v), LEFT - 6, y(v), label + unit)
            for v, label in zip(levels, labels, strict=True)
        ),
    )
    hits = format_html_join(
        "",
        '<rect class="hit" x="{}" y="{}" width="{}" height="{}" data-value="{}" data-at="{}">'
        "<title>{}</title></rect>",
        (
            (f"{_x(h.start):.1f}", TOP, f"{max(_x(h.end) - _x(h.start), 1):.1f}", plot_h,
             h.text, (h.start + h.end) // 2, h.text)
            for h in hovers
        ),
    )  # fmt: skip
    marks = _markers(markers, start, end, x) if markers else ""
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
            if len(seg) > 1 and line.label not in below
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
            if len(seg) == 1 and line.label not in below
        ),
    )
    summary = ", ".join(
        f"{line.label} {amount(line.last)}{unit}" for line in lines if line.last is not None
    )
    legend = format_html_join(
        "",
        '<li><span class="swatch {}"></span>{} <b>{}</b>'
        ' <small class="muted">max {}{}</small></li>',
        (
            (
                line.css,
                line.label,
                amount(line.last) + unit,
                amount(line.peak) + unit,
                ", below the axis" if line.label in below else "",
            )
            for line in lines
            if line.last is not None
        ),
    )
    range_note = ""
    if bottom > 0:
        range_note = format_html(
            ' <small class="axis" data-axis="{}-{}">axis {}–{}, not from 0</small>',
            _plain(bottom), _plain(top), labels[0] + unit, labels[-1] + unit,
        )  # fmt: skip
    caption = format_html(
        '{}{}{}', title,
        format_html(' <span class="growth" data-growth>{}</span>', note) if note else "",
        range_note,
    )  # fmt: skip
    readout = "Hover the chart for its values" if hovers else ""
    return format_html(
        '<figure class="chart"><figcaption>{}</figcaption>'
        '<svg viewBox="0 0 {} {}" role="img" aria-label="{}"><title>{}</title>{}{}{}{}'
        # the markers over the hover strips: a marker's own hover and focus win
        '<g class="hits">{}</g><g class="markers">{}</g></svg>'
        '<ul class="legend">{}</ul><p class="readout" data-readout aria-live="polite">{}</p>'
        "</figure>",
        caption, WIDTH, HEIGHT, f"{title}: {summary or 'no data'}", summary or "no data",
        grid, ticks, paths, dots, hits, marks, legend, readout,
    )  # fmt: skip


def _labels(levels: Sequence[float]) -> list[str]:
    """The axis' labels, short (180k) unless that makes two of them the same."""
    short = [amount(v) for v in levels]
    return short if len(set(short)) == len(short) else [exact(v) for v in levels]


def _plain(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _when(ms: int, span: int) -> str:
    t = timezone.localtime(dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC))
    return t.strftime("%a %d %H:%M" if span > 2 * 86_400_000 else "%H:%M:%S")


def _zone(ms: int) -> str:
    """The zone a hover's times are in, said once after them: "UTC"."""
    return timezone.localtime(dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)).tzname() or "UTC"


def point_hovers(times: Sequence[int], texts: Sequence[str], span: int) -> list[Hover]:
    """A hover per point, reaching halfway to its neighbours."""
    out = []
    for i, (t, text) in enumerate(zip(times, texts, strict=True)):
        lo = (times[i - 1] + t) // 2 if i else t - 1
        hi = (t + times[i + 1]) // 2 if i + 1 < len(times) else t + 1
        out.append(Hover(lo, hi, f"{_when(t, span)} {_zone(t)} · {text}"))
    return out


def growth(history: History) -> str:
    """The backlog's change over the chart: "+14,200 in 12 min" (from its first
    point to its last); "" with fewer than two points."""
    points = history.backlog
    if len(points) < 2:
        return ""
    change = points[-1].msgs - points[0].msgs
    sign = "+" if change >= 0 else "−"
    return f"{sign}{exact(abs(change))} in {duration((points[-1].at - points[0].at) / 1000)}"


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
    span = history.end - history.start
    hovers = point_hovers(
        [b.at for b in history.backlog],
        [
            " · ".join(f"{label} {exact(get(b))}" for label, _, get in series)
            for b in history.backlog
        ],
        span,
    )
    return chart(
        "Backlog", lines, history.shown_start, history.end, hovers=hovers, note=growth(history),
        from_zero=False, markers=markers,
    )  # fmt: skip


def _steps(history: History, rate: str) -> list[list[Point]]:
    # A rate holds over its whole interval: drawn as a step from its start to its end.
    segments: list[list[Point]] = []
    for part in history.rates:
        value = getattr(part, rate)
        if value is None:  # not known here: a gap in the line
            segments.append([])
            continue
        if segments and segments[-1] and segments[-1][-1][0] == part.start:
            segments[-1] += [(part.start, value), (part.end, value)]
        else:
            segments.append([(part.start, value), (part.end, value)])
    return [seg for seg in segments if seg]


def signed(value: float) -> str:
    """A change, with its sign: +20, −3.5, 0."""
    if value == 0:
        return "0"
    return ("+" if value > 0 else "−") + amount(abs(value))


def rate_chart(history: History, markers: Sequence[Marker] = ()) -> SafeString:
    """Sent and received per second, and the backlog's net change per second (messages in
    − out: above 0 it grows, below it drains), each over its interval."""
    lines = [
        Line("sent", "s-sent", _steps(history, "send_rate")),
        Line("received", "s-received", _steps(history, "receive_rate")),
        Line("net in − out", "s-net", _steps(history, "net_rate")),
    ]
    span = history.end - history.start

    def net(p: Interval) -> str:
        r = p.net_rate
        return "" if r is None or p.net is None else f" · net {signed(r)}/s ({signed(p.net)})"

    hovers = [
        Hover(
            p.start,
            p.end,
            f"{_when(p.start, span)}–{_when(p.end, span)} {_zone(p.end)} · sent"
            f" {amount(p.send_rate)}/s"
            f" ({exact(p.sent)}) · received {amount(p.receive_rate)}/s ({exact(p.received)})"
            + net(p),
        )
        for p in history.rates
    ]
    return chart("Messages per second", lines, history.shown_start, history.end, unit="/s",
                 hovers=hovers, markers=markers)  # fmt: skip


TIME_SERIES = (
    ("wait p50", "s-wait50", "wait_p50"),
    ("wait p95", "s-wait95", "wait_p95"),
    ("wait p99", "s-wait99", "wait_p99"),
    ("processing p95", "s-proc95", "processing_p95"),
)


def time_chart(history: History) -> SafeString:
    """Wait (send → first receive) and processing (first receive → delete) times, in
    seconds, at each snapshot that had messages to time."""
    points = history.times
    gap = history.gap
    lines = [
        Line(
            label, css, split([(p.at, v) for p in points if (v := getattr(p, f)) is not None], gap)
        )
        for label, css, f in TIME_SERIES
    ]
    lines = [line for line in lines if line.segments]
    span = history.end - history.start
    hovers = point_hovers(
        [p.at for p in points],
        [
            " · ".join(
                f"{label} {seconds(v)}"
                for label, _, f in TIME_SERIES
                if (v := getattr(p, f)) is not None
            )
            + (f" · {exact(p.samples)} messages" if p.samples else "")
            for p in points
        ],
        span,
    )
    return chart("Wait and processing time", lines, history.shown_start, history.end,
                 unit=" s", hovers=hovers)  # fmt: skip


def seconds(value: float) -> str:
    """A wait or processing time: 0.012 s, 1.5 s, 45 s; from 90 s on in the unit a person
    reads it in ("15 min", not "896 s")."""
    return duration(value) if value >= 90 else f"{amount(value)} s"


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
