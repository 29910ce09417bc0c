"""Pause / resume and the Coming due view as an operator walks them, in Debian's chromium
against live_server and a real Redis, at 1440 px and at 390 px: the flag set from the
queue page holds this project's receives at once and says who bypasses it; the due view
calls out the peak, switches scale, picks a bar's window and starts a job on it."""

from __future__ import annotations

import pytest
import redis
from playwright.sync_api import Page, expect

from dashboard.celery import app as celery_app
from dashboard.models import AuditEntry, BulkJob
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = [pytest.param(1440, id="1440px"), pytest.param(390, id="390px")]


def fits(page: Page, selector: str, width: int) -> None:
    """The element is inside the page's width: nothing to scroll sideways to reach it."""
    box = page.locator(selector).bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 1, box


@pytest.mark.parametrize("width", WIDTHS)
def test_an_operator_pauses_a_queue_sees_the_bypass_and_resumes_it(
    console, make_user, page_as, rsmq: RedisSMQ, r: redis.Redis, ns: str, width: int
) -> None:
    rsmq.create_queue("orders")
    rsmq.send_messages("orders", ["a", "b", "c"])
    rsmq.register_worker("w1", "box-7", 4242, {"orders": 4}, 0, 60)
    page = page_as(make_user("operator"), viewport={"width": width, "height": 900})
    page.goto(f"{console}/q/orders/")
    flow = page.locator("#flow")
    expect(flow).to_have_attribute("data-flow", "running")
    flow.locator("summary").click()
    page.fill("#id_reason", "deploy 42")
    page.fill("#id_duration", "1h")
    fits(page, "[data-flow-pause]", width)
    page.locator("[data-flow-pause]").click()

    expect(page.locator("#flow")).to_have_attribute("data-flow", "paused")
    expect(page.locator("[data-flow-state]")).to_contain_text("(deploy 42)")
    expect(page.locator("[data-flow-honour]")).to_contain_text("box-7:4242")
    assert rsmq.receive_message("orders") is None  # held at once
    fits(page, "[data-flow-state]", width)

    # another client (Node rsmq) receives meanwhile: the page says so
    r.hincrby(f"{ns}:orders:Q", "totalrecv", 2)
    page.reload()
    expect(page.locator("[data-flow-bypass]")).to_contain_text("Bypassed: 2 messages")
    page.goto(f"{console}/")
    expect(page.locator('[data-flow-badge="paused"]')).to_have_count(1)
    fits(page, '[data-flow-badge="paused"]', width)

    page.goto(f"{console}/q/orders/")
    page.locator("[data-flow-resume]").click()
    expect(page.locator("#flow")).to_have_attribute("data-flow", "running")
    expect(
        page.get_by_text("Resumed orders: its consumers receive as usual again.")
    ).to_be_visible()
    assert rsmq.receive_message("orders") is not None
    actions = list(AuditEntry.objects.order_by("id").values_list("action", "outcome"))
    assert actions == [("pause_queue", "ok"), ("resume_queue", "ok")]
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_due_view_calls_out_the_peak_and_starts_a_job_on_a_window(
    console,
    make_user,
    page_as,
    rsmq: RedisSMQ,
    r: redis.Redis,
    ns: str,
    width: int,
    broker_url: str,
    monkeypatch,
) -> None:
    monkeypatch.setattr(celery_app.conf, "broker_url", broker_url)  # the count: queued
    rsmq.create_queue("reminders")
    sec, _ = r.time()
    hour = (int(sec) // 3600 + 5) * 3_600_000  # five hours ahead, on the hour
    spike = rsmq.send_messages("reminders", ["remind"] * 120, delay=60)
    r.zadd(f"{ns}:reminders", {i: hour + 3_600_000 + k * 1000 for k, i in enumerate(spike)})
    spread = rsmq.send_messages("reminders", ["later"] * 40, delay=60)
    r.zadd(f"{ns}:reminders", {i: hour + k * 60_000 for k, i in enumerate(spread)})
    page = page_as(make_user("operator"), viewport={"width": width, "height": 900})
    page.goto(f"{console}/q/reminders/")

    due = page.locator("#due")
    expect(due).to_have_attribute("data-due-scale", "hour")
    expect(due.locator("[data-due-peak]")).to_contain_text("120 due ")
    fits(page, "[data-due-chart]", width)
    due.locator('[data-due-tab="day"]').click()
    expect(page.locator("#due")).to_have_attribute("data-due-scale", "day")
    due.locator('[data-due-tab="hour"]').click()
    expect(page.locator("#due")).to_have_attribute("data-due-scale", "hour")

    # a bar's link picks its window: the hour of the 40 spread ones
    page.locator(f'[data-due-bar="{hour}"]').click()
    expect(page.locator("#due-act")).to_have_attribute(
        "data-due-window", f"{hour}-{hour + 3_600_000}"
    )
    form = page.locator("[data-due-shift]")
    form.locator('input[name="shift"]').fill("30m")
    fits(page, "[data-due-shift] button", width)
    form.get_by_role("button", name="Shift…").click()
    expect(page.locator("[data-job-state]")).to_be_visible()
    job = BulkJob.objects.get()
    assert (job.kind, job.params["due_from"], job.params["shift_ms"]) == ("shift", hour, 1_800_000)
    assert page.errors == []  # type: ignore[attr-defined]
