"""The timeline as an on-call operator uses it: it opens on what just happened (the last
hour, newest first, 15- and 30-minute presets); an operator marks a deploy from it or from
a queue's charts (audited as the API's annotations are; a viewer may not); the charts mark
what bears on an incident — one marker a job, no saved filter."""

from __future__ import annotations

import datetime as dt
import re
import time

import pytest
from django.test import Client

from dashboard.models import Annotation, AuditEntry
from dashboard.templatetags.charts import CHART_ACTIONS
from dashboard.triage import timeline

pytestmark = pytest.mark.django_db


def now_ms() -> int:
    return int(time.time() * 1000)


def note(ns: str, ago_min: float, text: str, queue: str = "") -> None:
    Annotation.objects.create(at=now_ms() - int(ago_min * 60_000), connection="default",
                              namespace=ns, queue=queue, text=text, created_by="t")  # fmt: skip


def rows(page: str) -> list[str]:
    return re.findall(r'<td class="what">([^<]*)</td>', page)


def test_it_opens_on_the_last_hour_newest_first(console, ns: str, viewer: Client) -> None:
    note(ns, 90, "an hour and a half ago")
    note(ns, 40, "forty minutes ago")
    note(ns, 5, "five minutes ago")
    page = viewer.get("/incidents/").content.decode()
    assert rows(page) == ["five minutes ago", "forty minutes ago"]
    presets = re.findall(r'data-range="(\w+)"', page)
    assert presets[:3] == ["15m", "30m", "1h"] and 'aria-current="true" data-range="1h"' in page
    assert rows(viewer.get("/incidents/", {"range": "15m"}).content.decode()) == [
        "five minutes ago"
    ]


def test_an_operator_marks_a_deploy_from_the_timeline(console, ns: str, operator: Client) -> None:
    r = operator.post("/incidents/annotate/", {
        "place": f"default/{ns}", "text": "deploy payments v2.4", "pattern": "payments*",
        "next": "/incidents/?range=15m",
    })  # fmt: skip
    assert r.status_code == 302 and r["Location"] == "/incidents/?range=15m"
    a = Annotation.objects.get()
    assert (a.text, a.pattern, a.queue, a.created_by) == (
        "deploy payments v2.4", "payments*", "", "otto",
    )  # fmt: skip
    assert abs(a.at - now_ms()) < 5_000
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.queue) == ("annotation_create", "ok", "payments*")
    page = operator.get("/incidents/", {"range": "15m"}).content.decode()
    assert "deploy payments v2.4" in page and "Marked the timeline of payments*" in page


def test_an_operator_marks_a_queues_charts_at_a_time(console, ns: str, operator, rsmq) -> None:
    rsmq.create_queue("q1")
    when = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(minutes=12)
    r = operator.post(console.queue("q1") + "annotate/", {
        "text": "feature flag checkout-v2 on", "at": when.strftime("%Y-%m-%dT%H:%M:%S"),
        "next": console.queue("q1"),
    })  # fmt: skip
    assert r.status_code == 302 and r["Location"].endswith("#charts")
    a = Annotation.objects.get()
    assert (a.queue, a.at) == ("q1", int(when.timestamp() * 1000))
    assert AuditEntry.objects.get().action == "annotation_create"


def test_a_bad_mark_is_said_and_audited(console, ns: str, operator: Client) -> None:
    r = operator.post("/incidents/annotate/", {"place": f"default/{ns}", "text": " "}, follow=True)
    assert "text must be 1 to 500 characters" in r.content.decode()
    assert not Annotation.objects.exists()
    assert AuditEntry.objects.get().outcome == "invalid"


def test_a_viewer_may_not_mark(console, ns: str, viewer: Client) -> None:
    r = viewer.post("/incidents/annotate/", {"place": f"default/{ns}", "text": "deploy"})
    assert r.status_code == 403 and not Annotation.objects.exists()
    assert AuditEntry.objects.get().outcome == "denied"
    assert 'id="mark-event"' not in viewer.get("/incidents/").content.decode()


def audit(ns: str, ago_s: float, action: str, **kw) -> None:
    entry = AuditEntry.objects.create(username="otto", connection="default", namespace=ns,
                                      queue="q1", action=action, outcome="ok", **kw)  # fmt: skip
    AuditEntry.objects.filter(pk=entry.pk).update(
        at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=ago_s)
    )


def test_a_job_is_one_marker_and_a_saved_filter_none(console, ns: str) -> None:
    job = {"job": 12, "filter": {"rc": "5"}}
    audit(ns, 300, "redrive_matches", params={**job, "step": "count"})
    audit(ns, 240, "redrive_matches", count=60, params={**job, "step": "start"})
    audit(ns, 60, "redrive_matches", count=60, params={**job, "step": "end", "state": "done"})
    audit(ns, 120, "filter_save", params={"name": "poison"})
    audit(ns, 30, "requeue", count=3)
    marks = timeline.markers("default", ns, "q1", now_ms() - 600_000, now_ms(), CHART_ACTIONS)
    assert [m.text for m in marks] == [
        "job 12 redrive matches: started (60) → done (60)", "requeue (3)",
    ]  # fmt: skip
    # the timeline itself keeps the start, the end and the saved filter (not the count)
    f = timeline.Filter(now_ms() - 600_000, now_ms(), "default", ns, queue="q1")
    assert [e.text for e in timeline.events(f)] == [
        "job 12 redrive matches: started (60)", "filter save",
        "job 12 redrive matches: done (60)", "requeue (3)",
    ]  # fmt: skip
