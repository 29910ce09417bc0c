"""Noise out of the order, as an on-call operator sees it: a dead-letter queue nothing
consumes is badged *expected idle* and sits below the crash loop that feeds it, which says
it is dead-lettering; a left-behind queue is *stale*, not an incident; an operator marks a
queue expected idle from its page and the next snapshot takes it out of the incidents."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from dashboard.models import AuditEntry
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def noisy(console: str, settings, rsmq: RedisSMQ, lake) -> str:
    settings.RSMQ_REFRESH_SECONDS = 0
    settings.RSMQ_NO_CONSUMER_AFTER = 0.2
    settings.RSMQ_BACKLOG_WINDOW = 5  # both snapshots within it, however slow the machine
    settings.RSMQ_SNAPSHOT_INTERVAL = 0.1
    settings.RSMQ_CRASH_LOOP_RECEIVES = 3
    rsmq.create_queue("mail", vt=0)
    rsmq.create_queue("mail-dlq")
    rsmq.set_dead_letter_policy("mail", "mail-dlq", 2)
    rsmq.send_messages("mail-dlq", ["dead"] * 300)
    rsmq.create_queue("legacy-export-07")
    rsmq.send_messages("legacy-export-07", ["chunk"] * 3)
    rsmq.create_queue("archive")
    rsmq.send_messages("archive", ["kept"] * 200)
    rsmq.send_messages("mail", ["m"] * 20)
    take_snapshot()
    # the crash loop: every message received, failed, received again, dead-lettered
    for _ in range(4):
        rsmq.receive_messages("mail", 20, vt=0)
    rsmq.send_messages("mail", ["m"] * 5)
    rsmq.receive_messages("mail", 5, vt=0)
    rsmq.receive_messages("mail", 5, vt=0)
    time.sleep(0.6)
    take_snapshot()
    return console


def test_the_order_is_free_of_noise(noisy: str, make_user, page_as) -> None:
    page = page_as(make_user("viewer"))
    page.goto(noisy)
    rows = page.locator("table.queues tbody tr")
    names = [n for n in rows.locator("td.qname > a").all_inner_texts()]
    assert names.index("archive") < names.index("mail-dlq")  # a real no-consumer first
    assert names.index("mail") < names.index("mail-dlq")
    dlq = rows.filter(has=page.locator("td.qname > a", has_text="mail-dlq"))
    expect(dlq.locator("[data-consumer-state]")).to_have_text("expected idle")
    expect(dlq).not_to_have_class("attention incident")
    mail = rows.filter(has=page.locator("td.qname > a", has_text="mail"))
    expect(mail.first.locator(".reason").filter(has_text="dead-lettering")).to_contain_text(
        "to mail-dlq"
    )
    stale = rows.filter(has=page.locator("td.qname > a", has_text="legacy-export-07"))
    expect(stale.locator("[data-consumer-state]")).to_have_text("stale")
    assert "incident" not in (stale.get_attribute("class") or "")
    assert page.errors == []  # type: ignore[attr-defined]


def test_an_operator_marks_a_queue_expected_idle(noisy: str, make_user, page_as) -> None:
    page = page_as(make_user("operator", "olga"))
    page.goto(f"{noisy}/q/archive/")
    expect(page.locator("[data-consumer-state]").first).to_have_text("no consumers")
    page.locator("[data-expect=idle]").click()
    expect(page.locator("[data-feedback]")).to_contain_text("archive is expected idle")
    expect(page.locator("[data-expectation=idle]")).to_contain_text("marked by olga")
    assert AuditEntry.objects.filter(action="expected_idle", queue="archive").exists()
    take_snapshot()
    page.goto(noisy)
    row = page.locator("table.queues tbody tr").filter(
        has=page.locator("td.qname > a", has_text="archive")
    )
    expect(row.locator("[data-consumer-state]")).to_have_text("expected idle")
