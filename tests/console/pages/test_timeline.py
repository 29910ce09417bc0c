"""One timeline: operator actions (the audit log), alert transitions, anomaly flags and
annotations, merged in time order (dashboard/triage/timeline.py); drawn as markers on a queue's
charts; laid out on the incident page (filters, pagination, bad input) and exported as
CSV and JSON."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
import time

import pytest
from django.test import Client

from dashboard.models import Alert, AlertEvent, AlertRule, Annotation, AnomalyFlag, AuditEntry
from dashboard.triage import timeline
from dashboard.triage.timeline import Filter

pytestmark = pytest.mark.django_db

T0 = 1_790_000_000_000  # epoch ms, a fixed past moment


def at(minutes: float) -> int:
    return int(T0 + minutes * 60_000)


def audit(ns: str, minutes: float, queue: str, action: str, outcome: str = "ok", **kw) -> None:
    entry = AuditEntry.objects.create(
        username="otto", connection="default", namespace=ns, queue=queue, action=action,
        outcome=outcome, **kw,
    )  # fmt: skip
    # auto_now_add: the time is set after
    AuditEntry.objects.filter(pk=entry.pk).update(
        at=dt.datetime.fromtimestamp(at(minutes) / 1000, tz=dt.UTC)
    )


def alert_event(ns: str, minutes: float, queue: str, state: str, value: float = 9.0) -> None:
    rule, _ = AlertRule.objects.get_or_create(
        name="backlog", connection="default", namespace=ns, pattern="*",
        metric=AlertRule.Metric.VISIBLE, defaults={"threshold": 5},
    )  # fmt: skip
    alert, _ = Alert.objects.get_or_create(
        rule=rule, queue=queue,
        defaults={"connection": "default", "namespace": ns, "state": state, "since": at(minutes),
                  "changed": at(minutes)},
    )  # fmt: skip
    AlertEvent.objects.create(alert=alert, at=at(minutes), state=state, value=value)


def flag(ns: str, start: float, end: float | None, queue: str) -> None:
    AnomalyFlag.objects.create(
        connection="default", namespace=ns, queue=queue, kind="consumers_stalled",
        start=at(start), end=None if end is None else at(end), intervals=5,
        figures={"visible_max": 1200},
    )  # fmt: skip


def note(ns: str, minutes: float, text: str, queue: str = "", pattern: str = "") -> None:
    Annotation.objects.create(
        at=at(minutes), connection="default", namespace=ns, queue=queue, pattern=pattern,
        text=text, created_by="token:ci",
    )  # fmt: skip


@pytest.fixture
def story(console, ns: str) -> str:
    """An incident on queue payments, with noise on orders, over 60 minutes."""
    note(ns, 0, "deploy payments v2.3", pattern="pay*")
    flag(ns, 5, 30, "payments")
    alert_event(ns, 10, "payments", "firing", 1200)
    audit(ns, 15, "payments", "requeue", count=40)
    audit(ns, 16, "payments", "purge", outcome="denied")  # refused: not an event
    audit(ns, 17, "orders", "delete", count=1)
    note(ns, 20, "rollback everything")  # the whole namespace
    note(ns, 25, "orders only", queue="orders")
    alert_event(ns, 40, "payments", "resolved", 3)
    return ns


def texts(f: Filter) -> list[tuple[int, str, str]]:
    return [((e.at - T0) // 60_000, e.kind, e.text) for e in timeline.events(f)]


# -- the merged stream -------------------------------------------------------------------


def test_every_source_in_time_order(story: str) -> None:
    assert texts(Filter(at(-1), at(60), "default", story)) == [
        (0, "annotation", "deploy payments v2.3"),
        (5, "flag", "consumers stalled: up to 1,200 messages waiting, none received for 5 minutes"),
        (10, "alert", "alert backlog: firing (value 1,200)"),
        (15, "action", "requeue (40)"),
        (17, "action", "delete (1)"),
        (20, "annotation", "rollback everything"),
        (25, "annotation", "orders only"),
        (30, "flag", "consumers stalled ended"),
        (40, "alert", "alert backlog: resolved (value 3)"),
    ]


def test_a_queue_sees_its_events_its_patterns_and_namespace_wide_ones(story: str) -> None:
    got = texts(Filter(at(-1), at(60), "default", story, queue="payments"))
    assert [t for _, _, t in got] == [
        "deploy payments v2.3", "consumers stalled: up to 1,200 messages waiting, none received"
        " for 5 minutes", "alert backlog: firing (value 1,200)", "requeue (40)",
        "rollback everything", "consumers stalled ended", "alert backlog: resolved (value 3)",
    ]  # fmt: skip


def test_a_pattern_kind_and_range_filter(story: str) -> None:
    f = Filter(at(12), at(26), "default", story, pattern="ord*", kinds=frozenset({"action"}))
    assert texts(f) == [(17, "action", "delete (1)")]
    f = Filter(at(0), at(60), "default", story, kinds=frozenset({"alert"}), newest_first=True)
    assert [m for m, _, _ in texts(f)] == [40, 10]
    assert texts(Filter(at(0), at(60), "default", story + "x")) == []  # another namespace


def test_markers_are_the_latest_within_the_bound(console, ns: str, monkeypatch) -> None:
    monkeypatch.setattr(timeline, "MARKERS_MAX", 3)
    for i in range(6):
        note(ns, i, f"n{i}", queue="q1")
    got = timeline.markers("default", ns, "q1", at(-1), at(10))
    assert [e.text for e in got] == ["n3", "n4", "n5"]


# -- markers on the queue's charts -------------------------------------------------------


def test_the_queue_charts_mark_the_queues_events(
    console, viewer: Client, rsmq, ns: str, add_snapshot, redis_now
) -> None:
    rsmq.create_queue("q1")
    now = redis_now()
    for i in range(5):
        add_snapshot("q1", now - (5 - i) * 60_000, msgs=10 + i)
    Annotation.objects.create(at=now - 150_000, connection="default", namespace=ns,
                              text="deploy <v2> & co", created_by="token:ci")  # fmt: skip
    Annotation.objects.create(at=now - 150_000, connection="default", namespace=ns,
                              queue="other", text="not mine", created_by="token:ci")  # fmt: skip
    page = viewer.get(console.queue("q1")).content.decode()
    marks = re.findall(r'<g class="marker m-(\w+)" data-marker="([^"]*)"', page)
    # one on each of the two charts, its text escaped
    assert len(marks) == 2
    assert all(k == "annotation" for k, _ in marks)
    assert all(t.endswith("deploy &lt;v2&gt; &amp; co — token:ci") for _, t in marks)
    assert "not mine" not in page
    assert "1 event marked on the charts" in page


def test_a_chart_without_events_has_no_markers(console, viewer: Client, rsmq, add_snapshot,
                                               redis_now) -> None:  # fmt: skip
    rsmq.create_queue("q1")
    now = redis_now()
    add_snapshot("q1", now - 120_000, msgs=1)
    add_snapshot("q1", now - 60_000, msgs=2)
    page = viewer.get(console.queue("q1")).content.decode()
    assert 'class="chart"' in page and "data-marker" not in page


# -- the incident page -------------------------------------------------------------------


def stamp(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M")


def page_rows(page: str) -> list[str]:
    return [re.sub(r"\s+", " ", t).strip()
            for t in re.findall(r'<td class="what">(.*?)</td>', page, re.S)]  # fmt: skip


def test_the_incident_page_lays_out_a_range(story: str, viewer: Client) -> None:
    query = {"start": stamp(at(-1)), "end": stamp(at(60)), "connection": "default",
             "namespace": story, "queue": "payments", "order": "oldest"}  # fmt: skip
    response = viewer.get("/incidents/", query)
    assert response.status_code == 200
    rows = page_rows(response.content.decode())
    assert rows[0] == "deploy payments v2.3" and rows[-1] == "alert backlog: resolved (value 3)"
    assert len(rows) == 7
    response = viewer.get("/incidents/", {**query, "kind": ["flag", "alert"], "order": "newest"})
    assert page_rows(response.content.decode()) == [
        "alert backlog: resolved (value 3)", "consumers stalled ended",
        "alert backlog: firing (value 1,200)",
        "consumers stalled: up to 1,200 messages waiting, none received for 5 minutes",
    ]  # fmt: skip


def test_the_incident_page_is_paginated(console, ns: str, viewer: Client) -> None:
    now = int(time.time() * 1000)
    for i in range(120):
        Annotation.objects.create(at=now - 3_600_000 + i * 1000, connection="default",
                                  namespace=ns, text=f"n{i:03}", created_by="t")  # fmt: skip
    first = viewer.get("/incidents/", {"range": "6h", "order": "oldest"}).content.decode()
    assert page_rows(first)[:2] == ["n000", "n001"] and len(page_rows(first)) == 50
    assert "page=2" in first and "page=0" not in first
    third = viewer.get("/incidents/", {"range": "6h", "page": "3", "order": "oldest"})
    third = third.content.decode()
    assert page_rows(third) == [f"n{i:03}" for i in range(100, 120)]
    assert "Next →" not in third


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"start": "yesterday"}, "start must be a UTC time like 2026-11-25T18:00"),
        ({"start": "2026-01-02T00:00", "end": "2026-01-01T00:00"}, "end must be after start"),
        ({"start": "2020-01-01T00:00", "end": "2026-01-01T00:00"}, "at most 366 days"),
        ({"range": "1y"}, "range must be one of 15m, 30m, 1h, 6h, 24h, 7d, 30d"),
        ({"kind": "gossip"}, "kind must be one of action, alert, flag, annotation, condition"),
        ({"queue": "bad name!"}, "queue"),
        ({"queue": "a", "pattern": "a*"}, "queue or pattern: give one of the two"),
        ({"connection": "nope"}, "connection must be one of the configured connections"),
        ({"page": "0"}, "page must be a whole number from 1 to 200"),
        ({"page": "x"}, "page must be a whole number from 1 to 200"),
        ({"format": "xml"}, "format must be csv or json"),
    ],
)
def test_bad_filters_are_a_400_naming_the_field(
    console, viewer: Client, query: dict[str, str], error: str
) -> None:
    response = viewer.get("/incidents/", query)
    assert response.status_code == 400
    assert error in response.content.decode()


def test_the_incident_page_needs_a_role(console, outsider: Client, anon: Client) -> None:
    assert outsider.get("/incidents/").status_code == 403
    assert anon.get("/incidents/").status_code == 302


# -- exports -----------------------------------------------------------------------------


def test_the_csv_export(story: str, viewer: Client) -> None:
    note(story, 50, '=HYPERLINK("http://127.0.0.1")', queue="payments")
    query = {"start": stamp(at(-1)), "end": stamp(at(60)), "namespace": story,
             "queue": "payments", "format": "csv", "order": "oldest"}  # fmt: skip
    response = viewer.get("/incidents/", query)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="rsmq-timeline-')
    assert response.streaming
    rows = list(csv.reader(io.StringIO(response.getvalue().decode())))
    assert rows[0] == ["time", "kind", "connection", "namespace", "queue", "text", "who", "ref"]
    assert len(rows) == 1 + 8
    assert rows[1][1:6] == ["annotation", "default", story, "pay*", "deploy payments v2.3"]
    assert rows[1][0] == "2026-09-21T14:13:20.000Z"
    assert rows[-1][5] == '\'=HYPERLINK("http://127.0.0.1")'  # never run as a formula


def test_the_json_export_and_its_bound(story: str, viewer: Client, monkeypatch) -> None:
    query = {"start": stamp(at(-1)), "end": stamp(at(60)), "namespace": story,
             "format": "json", "order": "oldest"}  # fmt: skip
    body = json.loads(viewer.get("/incidents/", query).getvalue())
    assert body["count"] == 9 and body["truncated"] is False
    assert [e["kind"] for e in body["events"]][:3] == ["annotation", "flag", "alert"]
    first = body["events"][0]
    assert first == {
        "time": "2026-09-21T14:13:20.000Z", "at": T0, "kind": "annotation",
        "connection": "default", "namespace": story, "queue": "pay*",
        "text": "deploy payments v2.3", "who": "token:ci", "ref": first["ref"],
    }  # fmt: skip
    monkeypatch.setattr(timeline, "EXPORT_MAX", 4)
    body = json.loads(viewer.get("/incidents/", query).getvalue())
    assert body["count"] == 4 and body["truncated"] is True and len(body["events"]) == 4
    rows = viewer.get("/incidents/", {**query, "format": "csv"}).getvalue().decode()
    assert rows.strip().splitlines()[-1].startswith("# truncated")
