"""The timeline from the pages, in Chromium: it opens on the last hour, newest first, with
a 15-minute preset; an operator marks a deploy there; a click on a queue's chart dates the
*Mark an event* form at that point and the mark appears on the charts, listed under them
for the keyboard; a job is one marker, a saved filter none."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from playwright.sync_api import expect

from dashboard.models import Annotation, AuditEntry
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def story(console: str, settings, ns: str, rsmq: RedisSMQ, add_snapshot, redis_now) -> str:
    settings.RSMQ_REFRESH_SECONDS = 0
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    rsmq.create_queue("payments")
    now = redis_now()
    for i in range(30):
        add_snapshot("payments", now - (30 - i) * 60_000, msgs=100 + 40 * i, totalsent=100 + 40 * i)

    def audit(ago_min: float, action: str, **kw) -> None:
        e = AuditEntry.objects.create(
            username="otto", connection="default", namespace=ns, queue="payments",
            action=action, outcome="ok", **kw,
        )  # fmt: skip
        AuditEntry.objects.filter(pk=e.pk).update(
            at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=ago_min)
        )

    job = {"job": 7, "filter": {"rc": "5"}}
    audit(20, "redrive_matches", params={**job, "step": "count"})
    audit(19, "redrive_matches", count=12, params={**job, "step": "start"})
    audit(15, "redrive_matches", count=12, params={**job, "step": "end", "state": "done"})
    audit(10, "filter_save", params={"name": "poison"})
    return console


def test_an_operator_marks_a_deploy_on_the_timeline(story: str, ns: str, make_user, page_as):
    page = page_as(make_user("operator", "olga"))
    page.goto("/incidents/")
    expect(page.locator("[data-range='1h']")).to_have_attribute("aria-current", "true")
    rows = page.locator("table.timeline tbody tr")
    expect(rows.first).to_contain_text("filter save")  # the newest first
    page.locator("#mark-event summary").click()
    form = page.locator("[data-annotate]")
    form.locator("input[name=text]").fill("deploy payments v2.4")
    form.locator("input[name=queue]").fill("payments")
    form.locator("[data-annotate-submit]").click()
    expect(page.locator(".flash, [data-feedback]").first).to_contain_text(
        "Marked the timeline of payments: deploy payments v2.4"
    )
    expect(rows.first).to_contain_text("deploy payments v2.4")
    page.locator("[data-range='15m']").click()
    expect(page).to_have_url(re.compile(r"range=15m"))
    expect(rows).to_have_count(2)  # the mark and the saved filter: the job is older
    assert AuditEntry.objects.filter(action="annotation_create", outcome="ok").count() == 1
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_click_on_a_chart_dates_the_mark(story: str, make_user, page_as) -> None:
    page = page_as(make_user("operator", "olga"))
    page.goto(f"{story}/q/payments/")
    backlog = page.locator("figure.chart").first
    # one marker for the job, none for the saved filter
    expect(backlog.locator("[data-marker]")).to_have_count(1)
    expect(backlog.locator("[data-marker]")).to_have_attribute(
        "data-marker", re.compile(r"job 7 redrive matches: started \(12\) → done \(12\)")
    )
    hit = backlog.locator("rect.hit[data-at]").nth(10)
    at = int(hit.get_attribute("data-at") or 0)
    hit.click()
    when = page.locator("input[data-annotate-at]")
    expect(page.locator("#mark-chart")).to_have_attribute("open", "")
    expect(when).to_have_value(
        dt.datetime.fromtimestamp(at / 1000, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    )
    expect(page.locator("#mark-chart input[name=text]")).to_be_focused()
    page.keyboard.type("feature flag checkout-v2 on")
    page.locator("#mark-chart [data-annotate-submit]").click()
    expect(page.locator("[data-chart-events] li")).to_have_count(2)
    a = Annotation.objects.get()
    assert (a.queue, a.text, abs(a.at - at) < 1000) == (
        "payments",
        "feature flag checkout-v2 on",
        True,
    )
    expect(backlog.locator("[data-marker]")).to_have_count(2)
    assert page.errors == []  # type: ignore[attr-defined]
