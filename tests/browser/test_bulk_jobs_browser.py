"""Act on every match, as an operator would in Chromium: filter the queue by a text in
the body, count the matches, confirm with the count, watch the progress, cancel; and a
paced canary redrive from a dead-letter queue that stops when its canary comes back (a
real consumer fails the redriven messages back). A real Celery worker runs the jobs."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker
from playwright.sync_api import Page, expect

from dashboard.celery import app
from dashboard.models import BulkJob
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(settings, broker_url: str) -> Iterator[None]:
    settings.CELERY_BROKER_URL = broker_url
    before = app.conf.broker_url
    app.conf.broker_url = broker_url
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    finally:
        app.conf.broker_url = before


@pytest.fixture
def operator_page(make_user, page_as) -> Page:
    page = page_as(make_user("operator"), viewport={"width": 1280, "height": 900})
    page.said = []  # type: ignore[attr-defined]
    page.on("console", lambda m: said(page, m.type, m.text))
    return page


#: what Chromium logs for a form's errors answered 422 (the console's way, swapped by htmx)
FORM_ERRORS = "Failed to load resource: the server responded with a status of 422"


def said(page: Page, kind: str, text: str) -> None:
    """The page's console errors, but the network log of a form answered 422."""
    if kind == "error" and not text.startswith(FORM_ERRORS):
        page.said.append(text)  # type: ignore[attr-defined]


def test_filter_then_act_on_every_match_with_progress_and_cancel(
    console: str, operator_page: Page, rsmq: RedisSMQ, worker
) -> None:
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    rsmq.send_messages("q1", [f"order {i} {'poison' if i % 3 == 0 else 'ok'}" for i in range(300)])
    page = operator_page
    page.goto(f"{console}/q/q1/?search=poison")
    form = page.locator("[data-bulk-job]")
    form.locator("summary").click()
    expect(form.locator("summary")).to_contain_text("whose body contains 'poison'")
    form.locator("[data-job-kind]").select_option("move")
    form.locator("input[name=to]").fill("q2")
    form.locator("input[name=rate]").fill("20")
    form.locator("[data-job-count]").click()

    progress = page.locator("#job-progress")
    expect(progress).to_have_attribute("data-job-state", "counted")
    expect(page.locator("[data-job-what]")).to_contain_text(
        "Move 100 messages of q1 matching all messages, whose body contains 'poison', to q2"
    )
    assert rsmq.get_queue_attributes("q2").msgs == 0  # nothing before the confirmation
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: nothing sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 900})
    page.locator("[data-job-confirm]").fill("q2")  # not the queue's name: refused, said
    page.locator("[data-job-start]").click()
    expect(page.locator("[data-job-error]")).to_have_text("Type q1 exactly to confirm.")
    assert rsmq.get_queue_attributes("q2").msgs == 0
    page.locator("[data-job-confirm]").fill("q1")
    page.locator("[data-job-start]").click()

    expect(progress).to_have_attribute("data-job-state", "running")
    expect(page.locator("progress")).to_be_visible()
    done = page.locator("[data-done]")
    expect(done).not_to_have_text("0", timeout=10_000)
    first = int(done.inner_text().replace(",", ""))
    expect(done).not_to_have_text(str(first), timeout=10_000)  # it moves on, polled
    page.locator("[data-job-cancel]").click()
    expect(progress).to_have_attribute("data-job-state", "cancelled", timeout=10_000)
    expect(page.locator("[data-job-status]")).to_contain_text(
        re.compile(r"cancelled: \d+ of 100 moved")
    )
    job = BulkJob.objects.get()
    assert 0 < job.done < 100
    assert rsmq.get_queue_attributes("q2").msgs == job.done
    assert page.said == []  # type: ignore[attr-defined]


def test_a_canary_redrive_that_stops_on_bounce_back(
    console: str, operator_page: Page, rsmq: RedisSMQ, redis_url: str, ns: str, worker
) -> None:
    rsmq.create_queue("payments")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("payments", "dlq", 1)
    rsmq.send_messages("payments", [f"payment {i}" for i in range(60)])
    rsmq.receive_messages("payments", 60, vt=0)
    while rsmq.receive_messages("payments", 60, vt=0):
        pass
    assert rsmq.get_queue_attributes("dlq").msgs == 60

    consumer = RedisSMQ(url=redis_url, ns=ns)
    stop = threading.Event()

    def fail_everything() -> None:  # a consumer whose every message fails
        while not stop.is_set():
            if not consumer.receive_messages("payments", 100, vt=0):
                time.sleep(0.05)

    t = threading.Thread(target=fail_everything, daemon=True)
    t.start()
    try:
        page = operator_page
        page.goto(f"{console}/q/dlq/")
        page.locator("#dead-letter details summary", has_text="Redrive").click()
        form = page.locator("[data-paced-redrive]")
        form.locator("input[name=rate]").fill("50")
        form.locator("input[name=canary]").fill("5")
        form.locator("input[name=watch]").fill("10")
        form.locator("input[name=max_bounce]").fill("10")
        form.locator("[data-paced-redrive-count]").click()
        progress = page.locator("#job-progress")
        expect(progress).to_have_attribute("data-job-state", "counted")
        expect(page.locator("[data-job-what]")).to_contain_text(
            "Redrive 60 messages of dlq matching visible messages, back to the queues they "
            "came from; they start with a fresh receive count"
        )
        page.locator("[data-job-confirm]").fill("dlq")
        page.locator("[data-job-start]").click()
        expect(progress).to_have_attribute("data-job-state", "stopped", timeout=20_000)
        expect(page.locator("[data-job-note]")).to_contain_text("canary messages came back to dlq")
    finally:
        stop.set()
        t.join(5)
        consumer.close()
    assert BulkJob.objects.get().done == 5
    assert rsmq.get_queue_attributes("dlq").msgs >= 55
    assert page.said == []  # type: ignore[attr-defined]


def test_filter_by_a_json_field_then_delete_every_match_with_progress_and_cancel(
    console: str, operator_page: Page, rsmq: RedisSMQ, worker
) -> None:
    """The field filter typed in the filter bar is what the job counts and acts on: the
    JSON bodies whose amount is over 100, never the bodies that are not JSON."""
    rsmq.create_queue("orders")
    bodies = [f'{{"amount": {i}, "customer": "cust-{i % 7}"}}' for i in range(0, 300, 2)]
    rsmq.send_messages("orders", [*bodies, "amount > 100 (not JSON)", "{broken"])
    over = sum(1 for i in range(0, 300, 2) if i > 100)  # 99
    page = operator_page
    page.goto(f"{console}/q/orders/")
    page.locator("input[data-where]").fill("amount > 100")
    page.get_by_role("button", name="Filter", exact=True).click()
    expect(page).to_have_url(re.compile(r"where=amount"))
    form = page.locator("[data-bulk-job]")
    form.locator("summary").click()
    expect(form.locator("summary")).to_contain_text("amount > 100")
    form.locator("[data-job-kind]").select_option("delete")
    form.locator("input[name=rate]").fill("20")
    form.locator("[data-job-count]").click()

    progress = page.locator("#job-progress")
    expect(progress).to_have_attribute("data-job-state", "counted")
    expect(page.locator("[data-job-what]")).to_contain_text(f"Delete {over} messages of orders")
    assert rsmq.get_queue_attributes("orders").msgs == len(bodies) + 2  # nothing yet
    page.locator("[data-job-confirm]").fill("orders")
    page.locator("[data-job-start]").click()
    expect(progress).to_have_attribute("data-job-state", "running")
    done = page.locator("[data-done]")
    expect(done).not_to_have_text("0", timeout=10_000)
    page.locator("[data-job-cancel]").click()
    expect(progress).to_have_attribute("data-job-state", "cancelled", timeout=10_000)

    job = BulkJob.objects.get()
    assert 0 < job.done < over
    left = [m.message for m in rsmq.list_messages("orders", limit=1000).items]
    assert len(left) == len(bodies) + 2 - job.done
    assert "amount > 100 (not JSON)" in left and "{broken" in left
    assert all(b in left for b in bodies if int(b.split(":")[1].split(",")[0]) <= 100)
    assert page.said == []  # type: ignore[attr-defined]
