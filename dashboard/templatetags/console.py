"""Readable numbers and times (1.2k, "3 min ago" with the exact time on hover), state
labels, and the one tag that says when a number deserves a warning."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

from django import template
from django.utils import timezone
from django.utils.html import format_html

from dashboard.display import formatting
from dashboard.triage import thresholds
from dashboard.triage.flags import SNOOZES, in_figures
from queues import validation as v
from queues.models import MessageInfo, QueueStats

register = template.Library()

register.filter("compact", formatting.compact)
register.filter("exact", formatting.exact)
register.filter("duration", formatting.duration)
register.filter("duration_left", formatting.countdown)
register.filter("epoch_ms", formatting.epoch_ms)
register.filter("per_second", formatting.per_second)

# How a message state reads in a sentence; attributive: before a noun ("in-flight messages").
STATE_LABELS = {"inflight": "in flight"}
ATTRIBUTIVE = {"inflight": "in-flight"}


@register.filter
def is_queue_name(name: str) -> bool:
    """Whether a name from the queue set is an RSMQ name (only those get a page and a link:
    another client may have put anything in the set)."""
    return bool(v.QNAME_RE.fullmatch(name)) and name not in v.RESERVED_QNAMES


@register.filter
def state_label(state: str, use: str = "") -> str:
    labels = ATTRIBUTIVE if use == "attributive" else STATE_LABELS
    return labels.get(state, state)


@register.filter
def split_reasons(reason: str) -> list[str]:
    """A condition's reasons (dashboard/triage/conditions.py joins them with "; "), one each."""
    return [r for r in (reason or "").split("; ") if r]


@register.filter
def seconds_to_ms(seconds: int | None) -> int | None:
    return None if seconds is None else int(seconds) * 1000


@register.filter
def ms_duration(ms: int) -> str:
    return formatting.duration(ms / 1000)


@register.simple_tag
def when(ms: float | int | None, now_ms: float | int) -> str:
    """ "3 min ago" / "in 12 s", with the exact UTC time in a tooltip."""
    at = formatting.epoch_ms(ms) if ms else None
    if at is None:
        return "–"
    delta = (now_ms - (ms or 0)) / 1000
    text = formatting.duration(delta)
    if text != "now":
        text = f"{text} ago" if delta > 0 else f"in {text}"
    # Absolute, with its zone, on hover: the same instant for everyone reading the page.
    exact = formatting.absolute(at, timezone.get_current_timezone(), "ms")
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', formatting.iso(ms or 0), exact, text
    )


@register.simple_tag
def abs_time(value: dt.datetime | float | int | None, precision: str = "seconds") -> str:
    """A time written out with its zone ("2026-11-26 01:39:04 UTC"): the console's zone
    (settings.TIME_ZONE, UTC unless set), named, since it knows no user's own."""
    at = value if isinstance(value, dt.datetime) else formatting.epoch_ms(value)
    if at is None:
        return "–"
    iso = at.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    text = formatting.absolute(at, timezone.get_current_timezone(), precision)
    return format_html('<time datetime="{}">{}</time>', iso, text)


#: what "~" before a count means (QueueStats.exact is False)
ESTIMATED = (
    "estimated from a sample of the hidden messages (too many to count in one short "
    "Redis call); in flight + delayed = the exact hidden total"
)


@register.simple_tag
def count(n: int | None, exact: bool = True, short: bool = True) -> str:
    """A count: short (1M) with the exact number on hover, or in full (1,020,221); "~" and
    what it means when the count is not exact (estimated)."""
    estimated = not exact
    text = formatting.compact(n) if short else formatting.exact(n)
    title = formatting.exact(n)
    if estimated:
        text, title = f"~{text}", f"{title} ({ESTIMATED})"
    if text == title:
        return format_html('<span class="n">{}</span>', text)
    return format_html('<span class="n" title="{}">{}</span>', title, text)


@register.simple_tag
def utc_time(at: dt.datetime | None) -> str:
    """A datetime as ``when`` shows it: relative to now, the UTC time on hover."""
    if at is None:
        return "–"
    return when(at.timestamp() * 1000, time.time() * 1000)


@register.simple_tag(takes_context=True)
def warn(context: template.Context, what: str, subject: Any, stats: Any = None) -> str:
    """``warn`` (a CSS class) when the number is over its threshold from settings:
    ``{% warn "oldest" queue_stats %}``, ``{% warn "poison" message queue_stats %}``."""
    if what == "oldest" and isinstance(subject, QueueStats):
        conn, ns = context.get("connection"), context.get("namespace")
        over = thresholds.oldest_too_old(subject, conn.name if conn else "", ns or "")
    elif what == "poison" and isinstance(subject, MessageInfo):
        over = thresholds.poison(subject, stats if isinstance(stats, QueueStats) else None)
    else:
        raise template.TemplateSyntaxError(f"warn: nothing to weigh for {what!r}")
    return "warn" if over else ""


@register.filter
def pretty_body(body: str) -> str:
    """The body pretty-printed when it is JSON; as it is otherwise (escaped by the
    template), and when it can't be pretty-printed: nested too deep for the parser or the
    printer (RecursionError), a number of over 4300 digits (ValueError), a lone surrogate
    spelled ``\\ud800`` (UTF-8 can't encode the printed text)."""
    try:
        parsed = json.loads(body)
        if not isinstance(parsed, (dict, list)):
            return body
        pretty = json.dumps(parsed, indent=2, ensure_ascii=False)
        pretty.encode("utf-8")
    except (ValueError, TypeError, RecursionError, MemoryError):  # UnicodeError is a ValueError
        return body
    return pretty


#: what acting on a whole state does to its messages, said before it is done
CONSEQUENCES = {
    ("requeue_all", "inflight"): "they will be delivered again",
    ("requeue_all", "delayed"): "they will be delivered now, not at their set time",
    ("requeue_all", "hidden"): "they will be delivered now",
}


@register.simple_tag(takes_context=True)
def bulk_question(
    context: template.Context,
    action: str,
    state: str,
    total: int,
    qname: str,
    undoable: object = False,
    hours: float = 0,
) -> str:
    """The confirmation of a whole-state action, with the count and the consequence:
    "Requeue 30,229 in-flight messages: they will be delivered again."; a delete says
    whether it can be undone (``undoable``: what it removes fits RSMQ_UNDO_MAX_MB)."""
    what = f"{formatting.exact(total)} {state_label(state, 'attributive')} message" + (
        "" if total == 1 else "s"
    )
    if state == "all":
        what = f"all {formatting.exact(total)} message{'' if total == 1 else 's'}"
    if action == "requeue_all":
        consequence = CONSEQUENCES.get((action, state), "they will be delivered now")
        return f"Requeue {what} of {qname}: {consequence}."
    return f"Delete {what} of {qname}: {undo_words(context, undoable, hours)}."


@register.simple_tag(takes_context=True)
def undo_words(context: template.Context, undoable: object, hours: float) -> str:
    """What a destructive action's confirmation says of its Undo (dashboard/acting/undo.py), to
    the one who reads it: an Undo is an admin's (``can_admin`` in the page's context)."""
    if not undoable:
        return "this cannot be undone"
    if context.get("can_admin", True):
        return f"an Undo is offered for {hours:g} h"
    return f"an admin can undo it within {hours:g} h"


@register.filter
def in_set(value: object, members: object) -> bool:
    """``value in members``, as a value a tag's argument can take."""
    try:
        return value in members  # type: ignore[operator]
    except TypeError:
        return False


@register.filter
def undo_of(message: object) -> tuple[str, str, str] | None:
    """A flash message's Undo (views/actions.py tags it "undo <queue> <token> <count>"):
    (queue, token, what it puts back in words: "the 5,200 messages"), or None."""
    parts = str(getattr(message, "extra_tags", "") or "").split()
    if len(parts) in (3, 4) and parts[0] == "undo":
        n = int(parts[3]) if len(parts) == 4 and parts[3].isdigit() else None
        what = "what this removed" if n is None else (
            "the message" if n == 1 else f"the {n:,} messages"
        )  # fmt: skip
        return parts[1], parts[2], what
    return None


@register.simple_tag
def snooze_choices() -> list[str]:
    """How long a flag may be snoozed for, by its button's choice (dashboard/triage/flags.py)."""
    return list(SNOOZES)


register.filter("flag_summary", in_figures)
