"""Readable numbers and times: 1.2k, "3 min ago" (exact time on hover)."""

from __future__ import annotations

import datetime as dt
import json

from django import template
from django.utils import timezone
from django.utils.html import format_html

register = template.Library()


@register.filter
def compact(n: int | float | None) -> str:
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


def _duration(seconds: float) -> str:
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


@register.filter
def duration(seconds: float | None) -> str:
    return "–" if seconds is None else _duration(seconds)


@register.filter
def epoch_ms(value: float | int | None) -> dt.datetime | None:
    if value is None:
        return None
    return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)


@register.filter
def seconds_to_ms(seconds: int | None) -> int | None:
    return None if seconds is None else int(seconds) * 1000


@register.simple_tag
def when(ms: float | int | None, now_ms: float | int) -> str:
    """ "3 min ago" / "in 12 s", with the exact UTC time in a tooltip."""
    if not ms:
        return "–"
    delta = (now_ms - ms) / 1000
    text = _duration(delta)
    if text != "now":
        text = f"{text} ago" if delta > 0 else f"in {text}"
    exact = timezone.localtime(epoch_ms(ms)).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return format_html('<time datetime="{}" title="{}">{}</time>', exact, exact, text)


@register.filter
def pretty_body(body: str) -> str:
    """The body pretty-printed when it is JSON; as it is otherwise (escaped by the template)."""
    try:
        parsed = json.loads(body)
    except (ValueError, TypeError):
        return body
    if not isinstance(parsed, (dict, list)):
        return body
    return json.dumps(parsed, indent=2, ensure_ascii=False)
