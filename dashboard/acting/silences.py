"""Silences and maintenance windows: what an operator says should not notify anyone for
a while. A silence names a rule, or a queue pattern, or both, of one connection and
namespace, with a reason and an end; a maintenance window is a silence that recurs, on
some weekdays between two times of day (UTC). While one is on, the alerts it covers still
move (pending, firing, resolved: the pages show them) but their notifications are
written *held* (the outbox shows which silence held them), and an alert still firing
when the silence is over is told then (dashboard/alerting/evaluate.py). A paused queue's
alerts are held the same way (dashboard/acting/flow.py).

``read`` checks what was posted (each error names its field and range), ``create`` and
``expire`` write it; views/alerts.py audits both."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from django.db.models import Q
from django.utils import timezone

from dashboard.models import AlertRule, Silence

MAX_HOURS = 24 * 90  # a one-off silence lasts at most 90 days: a longer one is forgotten
AHEAD_DAYS = 30  # a silence may be set to begin this far ahead at most
BEGINS_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T]([01]\d|2[0-3]):([0-5]\d)")
REASON_MAX = 500
PATTERN_MAX = 160
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
TIME_RE = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


@dataclass
class Asked:
    """A silence as posted, checked: ``errors`` by field (empty: it may be written)."""

    connection: str = ""
    namespace: str = ""
    rule: AlertRule | None = None
    pattern: str = ""
    reason: str = ""
    hours: float | None = None
    begins: dt.datetime | None = None  # None: now
    weekdays: list[int] = field(default_factory=list)
    window_start: dt.time | None = None
    window_end: dt.time | None = None
    errors: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        """Its audit params."""
        return {
            "rule": self.rule.name if self.rule else "", "pattern": self.pattern,
            "reason": self.reason, "hours": self.hours,
            "begins": self.begins.isoformat() if self.begins else "",
            "weekdays": [DAYS[d] for d in self.weekdays],
            "window": f"{_hm(self.window_start)}–{_hm(self.window_end)}" if self.weekdays else "",
        }  # fmt: skip


def _hm(t: dt.time | None) -> str:
    return t.strftime("%H:%M") if t else ""


def read(data: Mapping[str, Any], places: Iterable[tuple[str, str]]) -> Asked:
    """What a silence form posted (``connection`` and ``namespace``, or ``place``:
    "connection/namespace"; ``rule`` (an id),
    ``pattern``, ``reason``, ``hours`` and ``begins`` (YYYY-MM-DD HH:MM, UTC; empty:
    now); a window: ``weekdays`` (mon … sun, several),
    ``start`` and ``end`` (HH:MM, UTC)), checked."""
    get = data.get
    a = Asked(connection=str(get("connection", "")).strip(), namespace=str(get("namespace", "")))
    if get("place"):
        a.connection, _, a.namespace = str(get("place")).partition("/")
    if (a.connection, a.namespace) not in set(places):
        a.errors["connection"] = "connection and namespace: one of the console's places"
    rule_id = str(get("rule", "") or "").strip()
    if rule_id:
        found = AlertRule.objects.filter(pk=rule_id).first() if rule_id.isdigit() else None
        if found is None:
            a.errors["rule"] = "rule: no such alert rule"
        elif (found.connection, found.namespace) != (a.connection, a.namespace):
            a.errors["rule"] = "rule: a rule of the same connection and namespace"
        a.rule = found
    a.pattern = str(get("pattern", "")).strip()
    if len(a.pattern) > PATTERN_MAX:
        a.errors["pattern"] = f"pattern: at most {PATTERN_MAX} characters"
    if not a.pattern and not rule_id:
        a.errors["pattern"] = "pattern: a queue pattern (orders-*), a queue, or a rule"
    a.reason = " ".join(str(get("reason", "")).split())
    if not a.reason:
        a.errors["reason"] = "reason: say why (it is shown with the silence)"
    elif len(a.reason) > REASON_MAX:
        a.errors["reason"] = f"reason: at most {REASON_MAX} characters"
    a.begins, error = _begins(str(get("begins", "") or "").strip())
    if error:
        a.errors["begins"] = error
    days = data.getlist("weekdays") if hasattr(data, "getlist") else get("weekdays", [])
    for d in days:
        if d not in DAYS:
            a.errors["weekdays"] = f"weekdays: each one of {', '.join(DAYS)}"
            break
        a.weekdays.append(DAYS.index(d))
    a.weekdays = sorted(set(a.weekdays))
    hours = str(get("hours", "")).strip()
    if hours or not a.weekdays:
        try:
            a.hours = float(hours)
            if not 0 < a.hours <= MAX_HOURS:
                raise ValueError
        except ValueError:
            a.errors["hours"] = f"hours: a number of hours above 0 and at most {MAX_HOURS}"
            a.hours = None
    if a.weekdays:
        for name in ("start", "end"):
            m = TIME_RE.fullmatch(str(get(name, "")).strip())
            if m is None:
                a.errors[name] = f"{name}: a time of day, HH:MM from 00:00 to 23:59 (UTC)"
                continue
            setattr(a, f"window_{name}", dt.time(int(m[1]), int(m[2])))
        if a.window_start is not None and a.window_start == a.window_end:
            a.errors["end"] = "end: a time other than the start"
    elif (get("start") or get("end")) and "weekdays" not in a.errors:
        a.errors["weekdays"] = "weekdays: a maintenance window needs at least one day"
    return a


def _begins(text: str) -> tuple[dt.datetime | None, str]:
    """A silence's later beginning, or None for now; else the error naming the field."""
    if not text:
        return None, ""
    why = f"begins: a time from now to {AHEAD_DAYS} days ahead, YYYY-MM-DD HH:MM (UTC)"
    m = BEGINS_RE.fullmatch(text)
    try:
        y, mo, d, h, mi = map(int, m.groups()) if m else (0, 0, 0, 0, 0)
        when = dt.datetime(y, mo, d, h, mi, tzinfo=dt.UTC) if m else None
    except ValueError:  # 2026-02-30
        when = None
    now = timezone.now()
    if when is None or not now - dt.timedelta(minutes=1) <= when <= now + dt.timedelta(
        days=AHEAD_DAYS
    ):
        return None, why
    return max(when, now), ""


def create(asked: Asked, by: str) -> Silence:
    starts = asked.begins or timezone.now()
    return Silence.objects.create(
        connection=asked.connection, namespace=asked.namespace, rule=asked.rule,
        pattern=asked.pattern, reason=asked.reason, created_by=by, starts=starts,
        ends=starts + dt.timedelta(hours=asked.hours) if asked.hours else None,
        weekdays=asked.weekdays, window_start=asked.window_start, window_end=asked.window_end,
    )  # fmt: skip


def expire(silence: Silence, by: str) -> None:
    """Over now ("expire now"): kept, with who ended it."""
    silence.ends = timezone.now()
    silence.expired_by = by
    silence.save(update_fields=["ends", "expired_by"])


def current(conn: str | None = None, ns: str | None = None) -> list[Silence]:
    """The silences not over (of a place, or all): on now, a window closed right now, or
    one set to begin later; ``on()`` tells."""
    now = timezone.now()
    rows = Silence.objects.filter(Q(ends__isnull=True) | Q(ends__gt=now))
    if conn is not None:
        rows = rows.filter(connection=conn, namespace=ns)
    return list(rows.select_related("rule").order_by("connection", "namespace", "-created"))


def on(silence: Silence, now: dt.datetime | None = None) -> bool:
    """Whether it silences right now: within starts…ends, and for a window, on one of
    its days within its times (an end before the start: past midnight, the day being
    the start's)."""
    now = now or timezone.now()
    if now < silence.starts or (silence.ends is not None and now >= silence.ends):
        return False
    if not silence.weekdays:
        return True
    start, end = silence.window_start, silence.window_end
    if start is None or end is None:
        return False
    t = now.astimezone(dt.UTC).time()
    day = now.astimezone(dt.UTC).weekday()
    if start < end:
        return day in silence.weekdays and start <= t < end
    # past midnight: tonight's part is the start day's, this morning's the day before's
    return (day in silence.weekdays and t >= start) or (
        (day - 1) % 7 in silence.weekdays and t < end
    )


def covers(silence: Silence, rule_id: int, queue: str) -> bool:
    """Whether it covers the rule's alert on ``queue`` (its place being the rule's)."""
    if silence.rule_id is not None and silence.rule_id != rule_id:
        return False
    return not silence.pattern or (bool(queue) and fnmatchcase(queue, silence.pattern))


def silencing(silences: Iterable[Silence], rule_id: int, queue: str) -> Silence | None:
    """The first silence of ``silences`` (on now, the rule's place) that covers it."""
    return next((s for s in silences if covers(s, rule_id, queue)), None)


def on_now(conn: str, ns: str) -> list[Silence]:
    """The place's silences silencing right now."""
    now = timezone.now()
    return [s for s in current(conn, ns) if on(s, now)]


def held_text(silence: Silence) -> str:
    """Why a notification was held (the outbox; the evaluation's log)."""
    until = f" until {silence.ends:%Y-%m-%d %H:%M} UTC" if silence.ends else ""
    kind = "maintenance window" if silence.weekdays else "silence"
    return f"{kind} by {silence.created_by}{until}: {silence.reason}"[:500]


def window_text(silence: Silence) -> str:
    """A window's days and times ("mon, wed 02:00–04:00 UTC"); "" for a plain silence."""
    if not silence.weekdays:
        return ""
    days = ", ".join(DAYS[d] for d in silence.weekdays)
    return f"{days} {_hm(silence.window_start)}–{_hm(silence.window_end)} UTC"
