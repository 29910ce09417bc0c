"""A message go-rsmq wrote (a 22-character id, no RSMQ id) in a real browser: it opens
from its queue's list, shows its body with its sent time unknown, says why only Delete is
offered, and is deleted from there — light and dark, at 390 px without scrolling sideways
and at 1440 px, with no error in the browser. ``RSMQ_BROWSER_SHOTS=DIR`` saves the pages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis
from support.browser import CHROMIUM, accept_dialogs
from support.go_rsmq import GoRsmq

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)",
        allow_module_level=True,
    )

from playwright.sync_api import expect  # noqa: E402  (after the skip)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("RSMQ_BROWSER_SHOTS", "")


@pytest.mark.parametrize(("scheme", "width"), [("dark", 390), ("light", 1440)])
def test_a_go_rsmq_message_opens_from_the_list_and_is_deleted_there(
    console: str, make_user, page_as, r: redis.Redis, ns: str, scheme: str, width: int
) -> None:
    go = GoRsmq(r, ns)
    go.create_queue("go")
    ids = [go.send_message("go", f'{{"job": {i}, "kind": "resize"}}') for i in range(3)]
    page = page_as(make_user("operator"), viewport={"width": width, "height": 900},
                   color_scheme=scheme)  # fmt: skip
    asked = accept_dialogs(page)
    page.goto(f"{console}/q/go/")
    page.get_by_role("link", name=ids[1], exact=True).click()

    expect(page.locator("h1 .mono")).to_have_text(ids[1])
    expect(page.locator("pre.body-full")).to_contain_text('"job": 1')
    expect(page.locator("[data-foreign-id]")).to_contain_text("it can be read and deleted here")
    expect(page.locator(".banner[data-note]")).to_have_count(0)  # nothing in it is unreadable
    expect(page.get_by_role("button", name="Requeue (visible now)")).to_have_count(0)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/go-message-{width}-{scheme}.png", full_page=True)

    page.get_by_role("button", name="Delete message").click()

    expect(page.get_by_text(f"Deleted message {ids[1]}.")).to_have_count(1)
    assert asked == ["Delete this message for good?"]
    assert r.zscore(f"{ns}:go", ids[1]) is None
    assert page.errors == []  # type: ignore[attr-defined]
