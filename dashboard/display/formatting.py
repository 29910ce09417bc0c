"""Numbers and durations as the console shows them: 1.2k, 2.5/s, "3 min". Template tags
and the server-drawn charts both format through here, so a number reads the same in a
table cell and on a chart's axis."""

from __future__ import annotations

import datetime as dt
import html


def compact(n: int | float | None) -> str:
    """A count, short: 950, 1.2k, 34M."""
    if n is None:
        return "–"
    n = float(n)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            value = n / limit
            return (
                f"{value:.1f}".rstrip("0").rstrip(".") + suffix
                if value < 100
                else f"{value:.0f}{suffix}"
            )
    return f"{n:.0f}"


def exact(n: int | float | None) -> str:
    """A count in full, with thousands separators: 1,020,221."""
    if n is None:
        return "–"
    return f"{n:,.0f}" if float(n) == int(n) else f"{n:,.2f}"


def amount(value: float) -> str:
    """A count or a rate, short: 12k, 340, 2.5, 0.017 (−3.5 below 0)."""
    if value < 0:
        return "−" + amount(-value)
    if value >= 1000:
        return compact(value)
    if value >= 10 or value == int(value):
        return f"{value:.0f}"
    return f"{value:.2g}"


def per_second(rate: float | None) -> str:
    if not isinstance(rate, (int, float)):
        return "–"
    return amount(rate) + "/s"


def duration(seconds: float | None) -> str:
    """A span, rounded to the unit a person reads it in: "now", "40 s", "3 min", "2 d"."""
    if seconds is None:
        return "–"
    s = abs(seconds)
    if s < 1:
        return "now"
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    if s < 36 * 3600:
        return f"{s / 3600:.0f} h"
    return f"{s / 86400:.0f} d"


def countdown(seconds: float | None) -> str:
    """Time left, to the second, as a countdown reads: "45 s", "2 min 05 s", "1 h 02 min"."""
    if seconds is None:
        return "–"
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def epoch_ms(value: float | int | None) -> dt.datetime | None:
    """Epoch ms as a time; None for none, and for a number no calendar holds (another
    client may have stored 10^17 as a first-receive time)."""
    if value is None:
        return None
    try:
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    except (OverflowError, OSError, ValueError):
        return None


def iso(ms: float) -> str | None:
    """Epoch ms as ISO 8601 UTC with ms: 2026-11-21T01:02:03.456Z (None: not a time)."""
    t = epoch_ms(ms)
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z") if t else None


#: how precise an absolute time is written
ABSOLUTE = {"minutes": "%Y-%m-%d %H:%M", "seconds": "%Y-%m-%d %H:%M:%S", "ms": "%Y-%m-%d %H:%M:%S"}


def absolute(at: dt.datetime, tz: dt.tzinfo = dt.UTC, precision: str = "seconds") -> str:
    """A time as a person reads it, with its zone: "2026-11-26 01:39:04 UTC" (in ``tz``,
    the console's zone; to the minute, second or ms)."""
    local = at.astimezone(tz)
    text = local.strftime(ABSOLUTE[precision])
    if precision == "ms":
        text += f".{local.microsecond // 1000:03d}"
    return f"{text} {local.tzname() or 'UTC'}"


class Linked(str):
    """Text of which one part links somewhere when a template shows it ("Created queue
    <a>orders</a>."): the link is its ``__html__``, which Django's escaping uses; anywhere
    else (the audit log's detail, a log line) it is the plain text."""

    href: str
    part: str

    def __new__(cls, text: str, part: str, href: str) -> Linked:
        made = super().__new__(cls, text)
        made.part, made.href = part, href
        return made

    def __html__(self) -> str:
        before, found, after = str(self).partition(self.part)
        if not found:
            return html.escape(str(self))
        link = f'<a href="{html.escape(self.href)}">{html.escape(found)}</a>'
        return html.escape(before) + link + html.escape(after)
