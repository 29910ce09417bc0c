"""Edit and re-send from the message page: the edited body goes out as a new message to
this queue or another, the original deleted in the same step when asked; the audit row
keeps both bodies (their first AUDIT_BODY_BYTES) and the audit page shows the difference,
escaped."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.audit.log import AUDIT_BODY_BYTES
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_the_page_opens_the_body_pretty_printed_in_the_editor(
    console, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q1")
    mid = rsmq.send_message("q1", '{"customer":"cust-42","amount":1}')
    page = operator.get(console.message(mid)).content.decode()
    assert "Edit and re-send" in page
    assert "data-json-editor" in page
    assert "{\n  &quot;customer&quot;: &quot;cust-42&quot;,\n  &quot;amount&quot;: 1\n}" in page
    assert "js/editor.js" in page


def test_a_viewer_sees_no_editor(console, viewer: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1")
    mid = rsmq.send_message("q1", "x")
    assert "Edit and re-send" not in viewer.get(console.message(mid)).content.decode()


def test_it_resends_to_another_queue_and_deletes_the_original(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    response = operator.post(
        console.message_act(mid),
        {"action": "resend", "body": "fixed", "to": "q2", "delete_original": "on"},
        follow=True,
    )
    assert rsmq.get_message("q1", mid) is None
    [new] = [m.id for m in rsmq.browse("q2").items]
    got = rsmq.get_message("q2", new)
    assert (got.message, got.rc) == ("fixed", 0)
    assert response.redirect_chain == [(console.message(new, "q2"), 302)]
    assert console.flashes(response) == [
        f"Sent as a new message {new} to q2. The original was deleted."
    ]


def test_it_resends_to_this_queue_keeping_the_original(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    operator.post(console.message_act(mid), {"action": "resend", "body": "again", "to": ""})
    assert rsmq.get_message("q1", mid).message == "payload"
    bodies = sorted(m.message for m in rsmq.browse("q1").items)
    assert bodies == ["again", "other", "payload"]


def test_an_original_gone_meanwhile_sends_nothing(
    console, mid, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.delete_message("q1", mid)
    response = operator.post(
        console.message_act(mid),
        {"action": "resend", "body": "fixed", "to": "q2", "delete_original": "on"},
        follow=True,
    )
    assert rsmq.browse("q2").items == []
    assert response.redirect_chain == [(console.queue("q1"), 302)]
    assert console.flashes(response) == [
        f"Message {mid} is no longer in queue q1: nothing was changed"
    ]
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("resend", "error")


def test_the_targets_maxsize_is_honoured(console, mid, operator: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("small", maxsize=1024)
    response = operator.post(
        console.message_act(mid),
        {"action": "resend", "body": "x" * 2000, "to": "small", "delete_original": "on"},
        follow=True,
    )
    assert rsmq.browse("small").items == []
    assert rsmq.get_message("q1", mid).message == "payload"
    assert console.flashes(response) == [
        "Message too long: 2000 bytes, the queue's maxsize is 1024"
    ]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"body": ""}, "body"),
        ({"body": "x", "to": "no such name!"}, "to"),
        ({"body": "x", "delay": "-1"}, "delay"),
        ({"body": "x", "delay": "10000000"}, "delay"),
    ],
)
def test_bad_input_is_a_form_error_naming_the_field(
    console, mid, operator: Client, rsmq: RedisSMQ, data: dict[str, str], field: str
) -> None:
    before = sorted(m.id for m in rsmq.browse("q1").items)
    response = operator.post(console.message_act(mid), {"action": "resend", **data})
    assert response.status_code == 422
    assert sorted(m.id for m in rsmq.browse("q1").items) == before
    assert rsmq.browse("q2").items == []
    row = AuditEntry.objects.get()
    assert row.outcome == "invalid" and row.detail.startswith(f"{field}: ")


def test_the_audit_row_keeps_both_bodies_and_the_page_shows_the_difference(
    console, operator: Client, admin: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q1")
    before = json.dumps({"customer": "cust-42", "amount": 1, "note": "<b>old</b>"})
    mid = rsmq.send_message("q1", before)
    after = json.dumps({"customer": "cust-42", "amount": 100, "note": "<script>x</script>"})
    operator.post(console.message_act(mid), {"action": "resend", "body": after})
    row = AuditEntry.objects.get(action="resend")
    assert row.params["bodies"]["before"] == {"text": before, "bytes": len(before), "cut": False}
    assert row.params["bodies"]["after"]["text"] == after
    assert row.params["new_id"] != mid and row.ids == [mid]
    page = admin.get("/audit/").content.decode()
    assert "Body: what changed" in page
    assert '<span class="del">-  &quot;amount&quot;: 1,</span>' in page
    assert '<span class="add">+  &quot;amount&quot;: 100,</span>' in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "<script>x</script>" not in page
    assert '"bodies"' not in page  # the bodies are shown as their difference only


def test_a_long_body_is_kept_cut_at_a_character(console, operator: Client, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q1", maxsize=-1)
    long = "é" * AUDIT_BODY_BYTES  # 2 bytes each: twice the bound
    mid = rsmq.send_message("q1", long)
    operator.post(console.message_act(mid), {"action": "resend", "body": long + "!"})
    kept = AuditEntry.objects.get(action="resend").params["bodies"]
    assert kept["before"] == {
        "text": "é" * (AUDIT_BODY_BYTES // 2),
        "bytes": 2 * AUDIT_BODY_BYTES,
        "cut": True,
    }
    assert kept["after"]["bytes"] == 2 * AUDIT_BODY_BYTES + 1 and kept["after"]["cut"]
