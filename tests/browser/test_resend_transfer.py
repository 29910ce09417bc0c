"""Edit and re-send, and export then import, walked as an operator would in Debian's
chromium (live_server, a real Redis): the editor checks JSON as it is typed and
pretty-prints it, the new message replaces the original in one step and the audit log
shows what changed; a filter's messages exported from the queue page come back
byte for byte through its Import form. No console errors (CSP included) on the way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def watch_console(page: Page) -> list[str]:
    said: list[str] = []

    def note(m: ConsoleMessage) -> None:
        # a form error's answer is a 422 by design: the browser notes it, nothing failed
        if m.type in ("error", "warning") and "status of 422" not in m.text:
            said.append(m.text)

    page.on("console", note)
    return said


def test_edit_and_resend_to_another_queue_deleting_the_original(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str
) -> None:
    rsmq.create_queue("fixed")
    mid = rsmq.send_message(queue, '{"customer":"cust-42","amount":1}')
    page = page_as(make_user("operator"))
    said = watch_console(page)
    page.goto(f"{console}/q/{queue}/m/{mid}/")
    page.get_by_text("Edit and re-send").click()
    editor = page.locator("textarea[data-json-editor]")
    expect(editor).to_have_value('{\n  "customer": "cust-42",\n  "amount": 1\n}')
    status = page.locator("[data-json-status]")
    expect(status).to_have_text("Valid JSON.")

    editor.fill('{"customer": "cust-42", "amount": 100,}')  # a trailing comma
    expect(status).to_contain_text("Not valid JSON")
    expect(editor).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_role("button", name="Pretty-print JSON")).to_be_disabled()
    editor.fill('{"customer": "cust-42", "amount": 100}')
    expect(status).to_have_text("Valid JSON.")
    page.get_by_role("button", name="Pretty-print JSON").click()
    expect(editor).to_have_value('{\n  "customer": "cust-42",\n  "amount": 100\n}')

    page.locator(".resend-form input[name=to]").fill("fixed")
    page.get_by_label("Delete the original in the same step").check()
    page.get_by_role("button", name="Send as a new message").click()
    page.wait_for_url(f"**{console}/q/fixed/m/*/")
    new = page.url.rstrip("/").rsplit("/", 1)[1]
    expect(page.locator("pre.body-full")).to_contain_text('"amount": 100')
    assert rsmq.get_message(queue, mid) is None
    got = rsmq.get_message("fixed", new)
    assert got is not None and got.rc == 0
    assert got.message == '{\n  "customer": "cust-42",\n  "amount": 100\n}'

    page_admin = page_as(make_user("admin"))
    page_admin.goto("/audit/?action=resend")
    page_admin.get_by_text("Body: what changed").click()
    diff = page_admin.locator("[data-body-diff] pre.diff")
    expect(diff.locator(".del")).to_contain_text(['"amount": 1'])
    expect(diff.locator(".add")).to_contain_text(['"amount": 100'])
    assert AuditEntry.objects.get(action="resend").params["new_id"] == new
    assert said == [] and page.errors == []  # type: ignore[attr-defined]


def test_the_editor_fits_a_phone(console, make_user, page_as, rsmq: RedisSMQ, queue: str) -> None:
    mid = rsmq.send_message(queue, json.dumps({"k": "v" * 300, "nested": {"a": [1, 2, 3]}}))
    page = page_as(make_user("operator"), viewport={"width": 390, "height": 800})
    page.goto(f"{console}/q/{queue}/m/{mid}/")
    page.get_by_text("Edit and re-send").click()
    expect(page.locator("textarea[data-json-editor]")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_export_then_import(
    console, make_user, page_as, rsmq: RedisSMQ, queue: str, tmp_path: Path
) -> None:
    rsmq.create_queue("restored")
    bodies = ['{"n": 1}', "plain ünïcode\u2028 line", "retry me"]
    ids = rsmq.send_messages(queue, bodies)
    rsmq.receive_message(queue, vt=0)  # the first received once: rc 1
    page = page_as(make_user("operator"))
    said = watch_console(page)
    page.goto(f"{console}/q/{queue}/?rc=1")
    with page.expect_download() as got:
        page.get_by_role("link", name="Export these (JSON Lines)").click()
    download = got.value
    assert download.suggested_filename == f"{queue}-all-rc-1.jsonl"
    path = tmp_path / "export.jsonl"
    download.save_as(path)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["id"], x["body"], x["rc"]) for x in lines] == [(ids[0], bodies[0], 1)]

    # everything now, into another queue
    page.goto(f"{console}/q/{queue}/")
    with page.expect_download() as got:
        page.get_by_role("link", name="Export these (JSON Lines)").click()
    got.value.save_as(path)
    page.goto(f"{console}/q/restored/")
    page.locator("#import input[type=file]").set_input_files(str(path))
    page.get_by_role("button", name="Import").click()
    expect(page.locator("[data-feedback], .flash").first).to_contain_text("Imported 3 messages")
    restored = rsmq.browse("restored").items
    assert sorted(m.message for m in restored) == sorted(bodies)
    assert {m.rc for m in restored} == {0}  # new ids: new messages
    assert AuditEntry.objects.filter(action="import", outcome="ok", count=3).exists()

    # a file with a bad line: refused by number, nothing written
    path.write_text('{"body": "a"}\n{"body": 1}\n')
    page.locator("#import input[type=file]").set_input_files(str(path))
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#import")).to_contain_text("line 2: body must be a string")
    assert len(rsmq.browse("restored").items) == 3
    assert said == [] and page.errors == []  # type: ignore[attr-defined]
