"""A caller who may not read a masked part can't learn it another way: a field filter on
a masked path (or comparing a field to what a pattern hides) is refused with words, on
the page, in the API, in exports and in jobs; a body search counts only hits in what the
caller reads; an edit-and-resend keeps a masked part only where it was."""

from __future__ import annotations

import html
import json

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

CARD = "4111111111111111"
EMAIL = "planted.bob@example.com"
RULES = [{"queues": "pay", "paths": ["card.number"], "patterns": ["card", "email"],
          "reveal_role": "operator"}]  # fmt: skip
BODY = json.dumps({"card": {"number": CARD}, "to": EMAIL, "amount": 5, "status": "new"})


@pytest.fixture
def pay(settings, console, rsmq: RedisSMQ) -> str:
    settings.RSMQ_MASKING = json.dumps(RULES)
    rsmq.create_queue("pay", maxsize=-1)
    rsmq.create_queue("other", maxsize=-1)
    return rsmq.send_message("pay", BODY)


@pytest.mark.parametrize(
    "where",
    ["card.number = 4111111111111111", "exists card.number", f"to = {EMAIL}",
     "amount > 4000000000000", "to > m"],
)  # fmt: skip
def test_a_filter_that_would_tell_a_masked_part_is_refused(pay, console, viewer, where) -> None:
    url = console.queue("pay")
    page = viewer.get(url, {"where": where})
    assert page.status_code == 403
    assert b'data-filter-error="where"' in page.content
    assert b"not filtered on" in page.content
    _, token = tokens.mint("bot", "viewer", "test", 1000)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    answer = api.get("/api/queues/pay/messages/", {"where": where})
    assert answer.status_code == 403 and "not filtered on" in answer.json()["error"]
    export = viewer.get(console.queue("pay", "export/"), {"where": where})
    assert export.status_code == 403
    assert AuditEntry.objects.filter(action="export", outcome="denied").exists()


def test_a_filter_on_what_shows_runs(pay, console, viewer) -> None:
    page = viewer.get(console.queue("pay"), {"where": "amount = 5 and status = new"})
    assert page.status_code == 200 and pay.encode() in page.content


def test_a_body_search_counts_only_what_the_viewer_reads(pay, console, viewer, operator) -> None:
    assert pay.encode() in viewer.get(console.queue("pay"), {"search": "amount"}).content
    assert pay.encode() not in viewer.get(console.queue("pay"), {"search": "4111"}).content
    # what an operator without a reveal reads is masked too: no hit either
    assert pay.encode() not in operator.get(console.queue("pay"), {"search": "4111"}).content


def test_a_job_on_a_search_of_masked_bodies_is_refused(pay, console, operator) -> None:
    answer = operator.post(console.queue("pay", "jobs/"),
                           {"kind": "delete", "state": "all", "search": "4111"})  # fmt: skip
    assert answer.status_code == 403 and b"every match" in answer.content
    assert AuditEntry.objects.filter(outcome="denied").exists()


def _form(page: str) -> str:
    return html.unescape(page.split('name="body"', 1)[1].split(">", 1)[1].split("</textarea>")[0])


def test_a_resend_keeps_masked_parts_only_where_they_were(
    pay, console, operator, rsmq: RedisSMQ
) -> None:
    form = _form(operator.get(console.message(pay, "pay")).content.decode())
    assert CARD not in form and EMAIL not in form and "[masked:1]" in form

    def resend(body: str) -> tuple[int, str]:
        answer = operator.post(console.message_act(pay, "pay"),
                               {"action": "resend", "body": body, "to": "other"})  # fmt: skip
        return answer.status_code, answer.content.decode()

    # a path's placeholder moved into another field: refused, nothing sent
    moved = form.replace('"status": "new"', '"status": "[masked:1]"')
    moved = moved.replace('"number": "[masked:1]"', '"number": "0"')
    status, text = resend(moved)
    assert status == 422 and "not where it was" in html.unescape(text)
    # a pattern's part run into other digits (no longer a card number: it would show)
    status, text = resend(form.replace("[masked:2]", "[masked:2]99"))
    assert status == 422 and "no longer be masked" in html.unescape(text)
    assert rsmq.list_messages("other").total == 0
    # left in place: sent as it was, the edit with it
    status, _ = resend(form.replace('"amount": 5', '"amount": 6'))
    assert status == 302
    (sent,) = rsmq.list_messages("other").items
    assert json.loads(rsmq.get_message("other", sent.id).message) == {
        "card": {"number": CARD}, "to": EMAIL, "amount": 6, "status": "new"
    }  # fmt: skip


def test_an_error_line_search_is_refused_where_patterns_mask(
    pay, console, viewer, rsmq: RedisSMQ
) -> None:
    rsmq.receive_message("pay", vt=0)
    rsmq.record_failure("pay", pay, error_type="Declined", message=f"card {CARD} declined")
    page = viewer.get(console.queue("pay"), {"error_text": "4111"})
    assert page.status_code == 403 and b'data-filter-error="error_text"' in page.content
    assert pay.encode() in page.content  # the rest of the filter (none) ran: every message
