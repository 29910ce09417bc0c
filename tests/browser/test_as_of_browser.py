"""Time travel in Chromium, at 1440 px (light) and at 390 px (dark): from the overview an
operator asks for a past time and reads the frozen overview of then — the incident of then
first, its reason, its messages now beside then, no action offered — follows a queue to
its page as of then, and comes back to now; the frozen view's link opens the same view
again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect
from support.as_of import incident_then

from dashboard.triage import as_of
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/rsmq-as-of-shots")


@pytest.fixture
def past(console: str, settings, rsmq: RedisSMQ, lake: Path) -> int:
    """growing's backlog rose between two runs (the incident then); since, it was purged
    and calm got messages. Returns a whole second after the second run."""
    settings.RSMQ_REFRESH_SECONDS = 0
    return incident_then(
        settings, rsmq, ["calm", "growing", "quiet"], "growing", "calm", whole_second=True
    )


@pytest.mark.parametrize("width", [1440, 390])
def test_an_operator_walks_the_overview_as_of_then(
    console: str, past: int, width: int, make_user, page_as
) -> None:
    scheme = "dark" if width == 390 else "light"  # both schemes, one walk each
    page = page_as(
        make_user("operator", "olga"),
        viewport={"width": width, "height": 900},
        color_scheme=scheme,
    )
    page.goto(f"{console}/")
    expect(page.locator("[data-as-of-title]")).to_have_count(0)
    page.locator("#as-of-open summary").click()
    page.locator("#as-of-open [data-as-of-input]").fill(as_of.iso(past)[:19])
    page.locator("#as-of-open button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"as_of="))
    title = page.locator("[data-as-of-title]")
    expect(title).to_contain_text(f"As of {as_of.label(past)} — frozen view; now: ")
    expect(page.locator("[data-as-of-taken]")).to_be_visible()
    # then: growing was the incident, first, with its reason; now it is empty
    first = page.locator("table.as-of-table tbody tr").first
    expect(first).to_have_attribute("data-queue", "growing")
    expect(first.locator(".reason").first).to_contain_text("backlog +55 in ")
    expect(first.locator("[data-then-msgs]")).to_have_attribute("data-then-msgs", "60")
    expect(first.locator("[data-delta]")).to_have_attribute("data-delta", "-60")
    calm = page.locator("tr[data-queue=calm]")
    expect(calm.locator("[data-delta]")).to_have_attribute("data-delta", "7")
    # history: nothing to act on, nothing refreshing
    expect(page.locator("main form[method=post]")).to_have_count(0)
    expect(page.locator("[hx-trigger^=every]")).to_have_count(0)
    if width == 390:  # the page itself never scrolls sideways (the table does, in its box)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, wide
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"overview-{width}.png"), full_page=True)
    # the frozen link is a plain URL: opened again, the same time
    link = page.locator("[data-as-of-link]").get_attribute("href") or ""
    assert f"as_of={as_of.iso(past)[:19]}" in link.replace("%3A", ":")
    # to the queue as of then, and back to now
    first.locator("td.qname > a").click()
    expect(page).to_have_url(re.compile(r"/q/growing/\?as_of="))
    expect(page.locator("[data-consumer-state]").first).to_be_visible()
    expect(page.locator("[data-reason]")).to_contain_text("backlog +55 in ")
    expect(page.locator("tr[data-count=Messages] [data-then]")).to_have_attribute("data-then", "60")
    page.screenshot(path=str(SHOTS / f"queue-{width}.png"), full_page=True)
    if width == 390:
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, wide
    page.locator("[data-as-of-now]").click()
    expect(page).to_have_url(re.compile(r"/q/growing/$"))
    expect(page.locator("[data-as-of-title]")).to_have_count(0)
    page.goto(link)
    expect(page.locator("[data-as-of-title]")).to_contain_text(as_of.label(past))
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_time_before_the_oldest_snapshot_says_so(console: str, past: int, make_user, page_as):
    page = page_as(make_user("viewer", "vera"), viewport={"width": 390, "height": 800})
    page.goto(f"{console}/?as_of=2020-01-01T00:00Z")
    problem = page.locator("[data-as-of-problem]")
    expect(problem).to_contain_text("is before the oldest snapshot kept")
    expect(page.locator("[data-as-of-now]")).to_be_visible()
    assert page.errors == []  # type: ignore[attr-defined]
