"""Filtering by a JSON field in a real browser: an operator types `amount > 100` in the
queue page's filter bar and sees only the matching rows; the URL is the filter."""

from __future__ import annotations

import json
import re

import pytest
from support.browser import CHROMIUM

from queues import RedisSMQ

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)",
        allow_module_level=True,
    )

from playwright.sync_api import expect  # noqa: E402  (after the skip)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_filter_by_a_json_field(console, settings, make_user, page_as, rsmq: RedisSMQ,
                                queue: str) -> None:  # fmt: skip
    settings.RSMQ_REFRESH_SECONDS = 0
    amounts = [5, 150, 100, 101, 99999, 42]
    ids = rsmq.send_messages(queue, [json.dumps({"amount": a, "customer": f"c-{a}"})
                                     for a in amounts] + ["amount > 100 (not JSON)"])  # fmt: skip
    want = [i for i, a in zip(ids, amounts, strict=False) if a > 100]

    page = page_as(make_user("operator"))
    page.goto(f"{console}/q/{queue}/")
    expect(page.locator("table.messages tbody tr")).to_have_count(7)
    expect(page.locator("#where-hint")).to_contain_text("status in (failed, retry)")
    page.locator("form.filters input[name=where]").fill("amount > 100")
    page.locator("form.filters button[type=submit]").click()

    expect(page).to_have_url(re.compile(r"where=amount\+%3E\+100"))
    expect(page.locator("#scan-progress")).to_contain_text("Done")
    expect(page.locator("#scan-progress")).to_contain_text("3 matches")
    rows = page.locator("table.messages tbody tr")
    expect(rows).to_have_count(3)
    assert sorted(rows.locator("td.mono a").all_inner_texts()) == sorted(want)
    expect(page.locator("form.filters input[name=where]")).to_have_value("amount > 100")

    # saved under a name, it is a link on the filter bar
    page.locator("[data-save-filter] input[name=name]").fill("big amounts")
    page.locator("[data-save-filter] button[type=submit]").click()
    link = page.locator("[data-saved-filter='big amounts']")
    expect(link).to_be_visible()
    page.goto(f"{console}/q/{queue}/")
    expect(page.locator("table.messages tbody tr")).to_have_count(7)
    page.locator("[data-saved-filter='big amounts']").click()
    expect(page.locator("#scan-progress")).to_contain_text("3 matches")
    expect(page.locator("table.messages tbody tr")).to_have_count(3)

    # a mistake is said under the bar, with its position, and nothing is filtered
    page.locator("form.filters input[name=where]").fill("amount >")
    page.locator("form.filters button[type=submit]").click()
    expect(page.locator("[data-filter-error=where]")).to_contain_text("at position 9")
    expect(page.locator("table.messages tbody tr")).to_have_count(7)
    # on a phone, the filter bar's new fields fit in 390 px
    page.set_viewport_size({"width": 390, "height": 800})
    width = page.locator("form.filters").evaluate("f => f.scrollWidth")
    assert width <= 390, width
    assert page.errors == []  # type: ignore[attr-defined]
