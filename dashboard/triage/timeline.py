"""One timeline: operator actions (the audit log), alert transitions, anomaly flags
(opened and ended) and annotations (deploy markers posted to ``/api/annotations/``), as
one stream of ``Event``s in time order — for the incident page, its CSV / JSON export
and the markers on a queue's charts.

Each source is one indexed query over the time range, read in chunks and merged
(``heapq.merge``), so a page reads only as far as it shows; every source reads at most
``SCAN_MAX`` rows whatever the range, and an export writes at most ``EXPORT_MAX`` events.
"""

from __future__ import annotations

import datetime as dt
import heapq
from collections.abc import Collection, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any

from django.db.models import Q, QuerySet

from dashboard.models import (
    AlertEvent,
    Annotation,
    AnomalyFlag,
    AuditEntry,
    ConditionChange,
    QueueCondition,
)
from dashboard.triage import flags

#: the kinds of event, in the order the filters list them, with their names
KINDS = {
    "action": "operator actions",
    "alert": "alert transitions",
    "flag": "anomaly flags",
    "annotation": "annotations (deploys)",
    "condition": "queue conditions (what the overview said, and why)",
}
#: states that are no event when a queue is first judged in them without a reason
CALM = ("healthy", "idle", "expected_idle")
#: rows one source reads at most for one request (a page, an export, a chart's markers)
SCAN_MAX = 100_000
#: events one export writes at most
EXPORT_MAX = 50_000
#: markers one chart draws at most (the latest)
MARKERS_MAX = 200
CHUNK = 1000
#: audit outcomes that are events (something happened, or failed; or started, its end not
#: recorded): not refused attempts
ACTED = (AuditEntry.Outcome.OK, AuditEntry.Outcome.ERROR, AuditEntry.Outcome.STARTED)


@dataclass(frozen=True, slots=True)
class Event:
    at: int  # epoch ms
    kind: str  # a key of KINDS
    connection: str
    namespace: str
    queue: str  # the queue, an annotation's pattern, or "" (the whole namespace)
    text: str
    who: str = ""
    ref: str = ""  # where it comes from: "audit:12", "alert:3", "flag:4:start", "annotation:7"
    # what it is a step of: "job:12" for a bulk job's start and end (one marker a job);
    # the audit action's name for an operator action ("" for the other kinds)
    group: str = ""
    action: str = ""

    @property
    def time(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.at / 1000, tz=dt.UTC)

    @property
    def iso(self) -> str:
        return self.time.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["group"], d["action"]  # how markers are drawn, not what happened
        return {"time": self.iso, **d}


@dataclass(frozen=True)
class Filter:
    """Which events: a time range (epoch ms, both ends included), a place, a queue or a
    pattern of queue names, and kinds."""

    start: int
    end: int
    connection: str = ""
    namespace: str = ""
    queue: str = ""
    pattern: str = ""
    kinds: frozenset[str] = field(default_factory=lambda: frozenset(KINDS))
    newest_first: bool = False

    def wants(self, queue: str, annotation: bool = False, pattern: str = "") -> bool:
        """Whether an event on ``queue`` is on the queue / pattern asked for. An
        annotation may be on a ``pattern`` of queues, or on the whole namespace (no queue,
        no pattern): that one is on every queue; another kind's event with no queue (a
        Redis alert) is on none."""
        if not (self.queue or self.pattern):
            return True
        if pattern:
            return fnmatchcase(self.queue, pattern) if self.queue else pattern == self.pattern
        if not queue:
            return annotation
        return queue == self.queue if self.queue else fnmatchcase(queue, self.pattern)


def _time(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC)


def _place(qs: QuerySet[Any], f: Filter, prefix: str = "") -> QuerySet[Any]:
    if f.connection:
        qs = qs.filter(**{f"{prefix}connection": f.connection})
    if f.namespace:
        qs = qs.filter(**{f"{prefix}namespace": f.namespace})
    if f.queue:
        qs = qs.filter(**{f"{prefix}queue": f.queue})
    return qs


def _ordered(qs: QuerySet[Any], f: Filter, at: str) -> Iterator[Any]:
    order = [f"-{at}", "-id"] if f.newest_first else [at, "id"]
    return qs.order_by(*order)[:SCAN_MAX].iterator(chunk_size=CHUNK)


def _actions(f: Filter) -> Iterator[Event]:
    qs = AuditEntry.objects.filter(at__gte=_time(f.start), at__lte=_time(f.end), outcome__in=ACTED)
    qs = _place(qs.exclude(action="annotation_create"), f)
    for e in _ordered(qs, f, "at"):
        if not f.wants(e.queue):
            continue
        params = e.params if isinstance(e.params, dict) else {}
        job = params.get("job")
        if job is not None and params.get("step") == "count":
            continue  # a job counting its matches changed nothing: its start and end did
        text = e.action.replace("_", " ")
        if job is not None:
            text = f"job {job} {text}: " + ("started" if params.get("step") == "start"
                                            else f"{params.get('state', 'ended')}")  # fmt: skip
        if e.count is not None:
            text += f" ({e.count:,})"
        if e.outcome == AuditEntry.Outcome.ERROR:
            text += f" — failed: {e.detail}"[:300]
        yield Event(int(e.at.timestamp() * 1000), "action", e.connection, e.namespace, e.queue,
                    text, e.username, f"audit:{e.pk}", f"job:{job}" if job is not None else "",
                    e.action)  # fmt: skip


def _alerts(f: Filter) -> Iterator[Event]:
    qs = _place(AlertEvent.objects.filter(at__gte=f.start, at__lte=f.end), f, "alert__")
    rows = _ordered(qs.select_related("alert__rule"), f, "at")
    for e in rows:
        a = e.alert
        if not f.wants(a.queue):
            continue
        value = "" if e.value is None else f" (value {e.value:,.10g})"
        where = "" if a.queue else f" (Redis {a.connection})"
        text = f"alert {a.rule.name}{where}: {e.state}{value}"
        yield Event(e.at, "alert", a.connection, a.namespace, a.queue, text, "", f"alert:{e.pk}")


def _flags(f: Filter, end: bool) -> Iterator[Event]:
    at = "end" if end else "start"
    qs = _place(AnomalyFlag.objects.filter(**{f"{at}__gte": f.start, f"{at}__lte": f.end}), f)
    for flag in _ordered(qs, f, at):
        if not f.wants(flag.queue):
            continue
        label = flag.get_kind_display()
        summary = flags.in_figures(flag)
        text = f"{label} ended" if end else f"{label}: {summary}" if summary else label
        yield Event(getattr(flag, at), "flag", flag.connection, flag.namespace, flag.queue, text,
                    flag.source, f"flag:{flag.pk}:{at}")  # fmt: skip


def _annotations(f: Filter) -> Iterator[Event]:
    qs = Annotation.objects.filter(at__gte=f.start, at__lte=f.end)
    if f.connection:
        qs = qs.filter(connection=f.connection)
    if f.namespace:
        qs = qs.filter(namespace=f.namespace)
    if f.queue:
        qs = qs.filter(Q(queue=f.queue) | Q(queue=""))
    for a in _ordered(qs, f, "at"):
        if not f.wants(a.queue, annotation=True, pattern=a.pattern):
            continue
        yield Event(a.at, "annotation", a.connection, a.namespace, a.queue or a.pattern, a.text,
                    a.created_by, f"annotation:{a.pk}")  # fmt: skip


def _conditions(f: Filter) -> Iterator[Event]:
    """Each change of a queue's condition (dashboard/triage/conditions.py writes one
    when its state or reasons change): what the overview said of it from then on."""
    qs = _place(ConditionChange.objects.filter(at__gte=f.start, at__lte=f.end), f)
    qs = qs.exclude(was="", state__in=CALM, reason="")  # a calm queue seen the first time
    labels = dict(QueueCondition.State.choices)
    for c in _ordered(qs, f, "at"):
        if not f.wants(c.queue):
            continue
        text = str(labels.get(c.state, c.state))
        if c.was and c.was != c.state:
            text = f"{labels.get(c.was, c.was)} → {text}"
        if c.reason:
            text += f": {c.reason}"
        yield Event(c.at, "condition", c.connection, c.namespace, c.queue, text, "",
                    f"condition:{c.pk}")  # fmt: skip


def events(f: Filter) -> Iterator[Event]:
    """Every event the filter asks for, in time order (newest first if it says so)."""
    sources: list[Iterable[Event]] = []
    if "action" in f.kinds:
        sources.append(_actions(f))
    if "alert" in f.kinds:
        sources.append(_alerts(f))
    if "flag" in f.kinds:
        sources += [_flags(f, end=False), _flags(f, end=True)]
    if "annotation" in f.kinds:
        sources.append(_annotations(f))
    if "condition" in f.kinds:
        sources.append(_conditions(f))
    return heapq.merge(*sources, key=lambda e: e.at, reverse=f.newest_first)


def markers(
    conn: str, ns: str, qname: str, start: int, end: int, actions: Collection[str] | None = None
) -> list[Event]:
    """A queue's events over a chart's range, oldest first: the latest MARKERS_MAX. Only
    the operator actions named in ``actions`` (None: every one) — what changed messages
    or queues, not a filter saved — and one marker a job: at its start, saying how it
    ended."""
    # (a queue's condition changes are not marked: its charts show what they say)
    kinds = frozenset(KINDS) - {"condition"}
    f = Filter(start, end, conn, ns, queue=qname, kinds=kinds, newest_first=True)
    latest: list[Event] = []
    job_at: dict[str, int] = {}  # a job's one marker: its place in latest
    for event in events(f):  # newest first: a job's end before its start
        if event.kind == "action" and actions is not None and event.action not in actions:
            continue
        if event.group:
            i = job_at.get(event.group)
            if i is None:
                job_at[event.group] = len(latest)
                latest.append(event)
            else:  # its start: the marker moves there, saying how the job ended
                ended = latest[i].text.split(": ", 1)[-1]
                latest[i] = replace(event, text=f"{event.text} → {ended}")
        else:
            latest.append(event)
        if len(latest) >= MARKERS_MAX:
            break
    latest.sort(key=lambda e: e.at)
    return latest
