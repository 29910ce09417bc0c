"""A long scan an operator can act on, then a failing group retried safely, in Chromium:
"received ≥ 5" over 150,000 messages takes many steps, and its results are one table
(one tbody, every row as many cells as the header, the bodies previewed) with the bulk
bar and *Act on every match* there from the first response; then one failure group of a
dead-letter queue, chosen by its error type, is redriven paced, behind a canary whose
watch counts down. A real Celery worker runs the job."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker
from playwright.sync_api import expect

from dashboard.celery import app
from dashboard.models import BulkJob
from queues import AsyncRedisSMQ, RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BIG = 150_000
POISON = 60


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
def events(console: str, settings, rsmq: RedisSMQ, redis_url: str, ns: str) -> str:
    """150,000 page views, then 60 poison messages (received 6 times) at the end."""
    settings.RSMQ_REFRESH_SECONDS = 0

    async def fill() -> None:
        async with AsyncRedisSMQ(url=redis_url, ns=ns) as a:
            await a.create_queue("events")
            batch = [json.dumps({"event": "page_view", "user": f"u{i}"}) for i in range(1000)]
            await asyncio.gather(*(a.send_messages("events", batch) for _ in range(BIG // 1000)))

    # Playwright's event loop runs in this thread: the filling in a thread of its own
    t = threading.Thread(target=asyncio.run, args=(fill(),))
    t.start()
    t.join()
    assert rsmq.get_queue_attributes("events").msgs == BIG
    rsmq.create_queue("tmp")
    rsmq.send_messages("tmp", [json.dumps({"event": "bad_payload", "n": i}) for i in range(POISON)])
    for _ in range(6):
        rsmq.receive_messages("tmp", POISON, vt=0)
    rsmq.move_messages("tmp", "events", keep_counts=True)
    return console


def test_a_multi_step_scan_is_one_table_with_its_bulk_bar_from_the_start(
    events: str, make_user, page_as
) -> None:
    page = page_as(make_user("operator"))
    steps: list[str] = []
    page.on("request", lambda r: steps.append(r.url) if "part=scan" in r.url else None)
    page.goto(f"{events}/q/events/?rc=5")
    # From the first response: the bar and Act on every match, its buttons waiting
    bar = page.locator("[data-bulk]")
    expect(bar).to_be_visible()
    expect(bar.get_by_role("button", name="Requeue")).to_be_disabled()
    expect(page.locator("[data-bulk-job]")).to_be_visible()
    # a page of matches (50 of the 60): Next goes on from there
    expect(page.locator("#scan-progress")).to_contain_text("50 matches", timeout=30_000)
    expect(page.locator("[data-scan-next]")).to_be_visible()
    expect(page.locator("[data-scan-running]")).to_have_count(0, timeout=30_000)
    assert len(steps) >= 2, "the scan took one step: it proves nothing"

    table = page.locator("table.messages")
    assert table.locator("tbody").count() == 1
    headers = table.locator("thead th").count()
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(50)
    cells = page.evaluate(
        "Array.from(document.querySelectorAll('table.messages tbody tr'))"
        ".map((r) => r.children.length)"
    )
    assert set(cells) == {headers}
    bodies = rows.locator("td.body").all_inner_texts()
    assert all(b.startswith('{"event": "bad_payload", "n": ') for b in bodies)
    # every rc cell under the rc header, and the table inside its box
    assert set(rows.locator("td.num").all_inner_texts()) == {"6"}
    box, main = table.bounding_box(), page.locator(".queue-layout > .live").bounding_box()
    assert box and main and box["x"] + box["width"] <= main["x"] + main["width"] + 1
    rows.first.locator("input[name=ids]").check()
    expect(bar.get_by_role("button", name="Requeue")).to_be_enabled()
    expect(page.locator("[data-bulk-job] summary")).to_contain_text("received at least 5 times")
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.fixture
def dead_letters(console: str, settings, rsmq: RedisSMQ) -> str:
    """payments-dlq: 36 dead letters of three error types (12 read timeouts)."""
    settings.RSMQ_REFRESH_SECONDS = 0
    rsmq.create_queue("payments")
    rsmq.create_queue("payments-dlq")
    rsmq.set_dead_letter_policy("payments", "payments-dlq", 2)
    rsmq.send_messages("payments", [json.dumps({"payment": i}) for i in range(36)])
    kinds = [("payments.CardDeclined", "card declined"),
             ("requests.exceptions.ReadTimeout", "Read timed out. (read timeout=10)"),
             ("KeyError", "'customer_id'")]  # fmt: skip
    while got := rsmq.receive_messages("payments", 36, vt=0):
        for m in got:
            kind, text = kinds[json.loads(m.message)["payment"] % 3]
            rsmq.record_failure("payments", m.id, error_type=kind, message=text)
    assert rsmq.get_queue_attributes("payments-dlq").msgs == 36
    return console


def test_a_failure_group_is_redriven_paced_by_its_error_type_behind_a_canary(
    dead_letters: str, make_user, page_as, rsmq: RedisSMQ, worker
) -> None:
    page = page_as(make_user("operator"), viewport={"width": 1280, "height": 900})
    page.goto(f"{dead_letters}/q/payments-dlq/failing/")
    group = page.locator("[data-group=dead][data-type='requests.exceptions.ReadTimeout']")
    expect(group.locator("[data-group-count]")).to_have_text("12")
    group.locator("summary").click()
    form = group.locator("[data-paced-retry]")
    expect(form).to_be_visible()
    form.locator("input[name=rate]").fill("20")
    form.locator("input[name=canary]").fill("3")
    form.locator("input[name=watch]").fill("3")
    form.locator("[data-paced-retry-count]").click()

    progress = page.locator("#job-progress")
    expect(progress).to_have_attribute("data-job-state", "counted", timeout=10_000)
    expect(page.locator("[data-job-what]")).to_contain_text(
        "Redrive 12 messages of payments-dlq matching visible messages, whose last failure is a"
        " requests.exceptions.ReadTimeout, back to the queues they came from"
    )
    expect(page.locator("[data-job-what]")).to_contain_text("a canary of 3 first, watched 3 s")
    page.locator("[data-job-confirm]").fill("payments-dlq")
    page.locator("[data-job-start]").click()
    expect(page.locator("[data-canary-left]")).to_have_text(re.compile(r"^\d s left$"))
    expect(progress).to_have_attribute("data-job-state", "done", timeout=30_000)

    job = BulkJob.objects.get()
    assert (job.kind, job.filter["error"], job.done) == (
        "redrive",
        "requests.exceptions.ReadTimeout",
        12,
    )
    # the 12 timeouts are back in payments, the other 24 dead letters stayed
    assert rsmq.get_queue_attributes("payments").msgs == 12
    assert rsmq.get_queue_attributes("payments-dlq").msgs == 24
    back = rsmq.browse("payments", error="requests.exceptions.ReadTimeout").items
    assert len(back) == 12
    assert page.errors == []  # type: ignore[attr-defined]
