"""Purge, then Undo, as an operator at 3 a.m. would: in Debian's chromium, against
live_server and a real Redis. The purge's answer carries an Undo; it asks first; the
messages come back exactly as they were (compared in raw Redis)."""

from __future__ import annotations

import pytest
import redis
from playwright.sync_api import expect
from support.browser import accept_dialogs

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def raw(r: redis.Redis, ns: str, qname: str) -> tuple[dict[str, str], list[tuple[str, float]]]:
    return r.hgetall(f"{ns}:{qname}:Q"), r.zrange(f"{ns}:{qname}", 0, -1, withscores=True)


def test_purge_then_undo_brings_the_messages_back(
    console, make_user, page_as, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", [f'{{"n": {i}}}' for i in range(5)])
    rsmq.receive_messages("q1", 2, vt=300)
    before = raw(r, ns, "q1")
    page = page_as(make_user("admin"), viewport={"width": 1280, "height": 720})
    asked = accept_dialogs(page)
    page.goto(f"{console}/q/q1/")
    expect(page.locator(".danger-zone [data-undo-note]").first).to_have_text(
        "An Undo is offered for 24 h."
    )

    page.fill("#id_purge-confirm", "q1")
    page.get_by_role("button", name="Purge queue").click()
    # the answer, next to the button pressed, with its Undo (static/js/console.js)
    answer = page.locator("[data-feedback]")
    expect(answer.locator("p").first).to_have_text("Purged 5 messages from q1.")
    assert r.zcard(f"{ns}:q1") == 0
    expect(page.locator("#live .empty")).to_have_text("No messages.")

    answer.get_by_role("button", name="Undo").click()

    expect(page.get_by_text("Undid the purge of q1: put back 5 messages.")).to_have_count(1)
    assert asked == ["Undo: put back the 5 messages this removed from q1?"]
    assert raw(r, ns, "q1") == before
    expect(page.locator("#live tbody tr")).to_have_count(5)
    assert page.get_by_role("button", name="Undo").count() == 0
    row = AuditEntry.objects.get(action="undo")
    assert (row.outcome, row.count) == ("ok", 5)
    assert page.errors == []  # type: ignore[attr-defined]
