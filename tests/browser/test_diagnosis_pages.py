"""Issue 21's diagnosis pages in a real browser: timeline markers on a queue's charts
show their text on hover, and are listed under the charts for the keyboard; the incident
page lays out and filters the timeline and offers its exports; the Redis page and its
warning banner (the test session's Redis runs without persistence: a real risk); all at
390 px without sideways scrolling, light and dark. ``RSMQ_BROWSER_SHOTS=DIR`` saves their
screenshots to DIR (1440 and 390 px, light and dark)."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from support.browser import CHROMIUM

from dashboard.models import Annotation, AuditEntry, Ownership
from dashboard.probes import redis_health
from queues import RedisSMQ

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)",
        allow_module_level=True,
    )

from playwright.sync_api import Page, expect  # noqa: E402  (after the skip)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("RSMQ_BROWSER_SHOTS", "")
MODES = [("light", 1440), ("dark", 1440), ("light", 390), ("dark", 390)]


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture
def story(console: str, settings, ns: str, rsmq: RedisSMQ, add_snapshot, redis_now) -> str:
    """A queue with an hour of snapshots, a deploy marker and an operator's action on it."""
    settings.RSMQ_REFRESH_SECONDS = 0
    redis_health.clear_cache()
    rsmq.create_queue("payments")
    rsmq.send_messages("payments", ["a", "b", "c"])
    now = redis_now()
    for i in range(30):
        add_snapshot("payments", now - (30 - i) * 60_000, msgs=100 + 40 * i, hiddenmsgs=5)
    Annotation.objects.create(
        at=now - 20 * 60_000, connection="default", namespace=ns, pattern="pay*",
        text="deploy payments v2.3", created_by="token:ci",
    )  # fmt: skip
    entry = AuditEntry.objects.create(
        username="otto", connection="default", namespace=ns, queue="payments",
        action="requeue", count=40, outcome="ok",
    )  # fmt: skip
    ten_minutes_ago = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10)
    AuditEntry.objects.filter(pk=entry.pk).update(at=ten_minutes_ago)
    Ownership.objects.create(
        connection="default", namespace=ns, pattern="pay*", owner="Payments team",
        oncall="@pay", runbook_url="https://wiki.example/pay",
    )  # fmt: skip
    return console


def test_markers_on_the_charts_show_their_text_on_hover_and_focus(
    story: str, make_user, page_as
) -> None:
    page = page_as(make_user("viewer"))
    page.goto(f"{story}/q/payments/")
    backlog = page.locator("figure.chart").first
    markers = backlog.locator("[data-marker]")
    expect(markers).to_have_count(2)
    deploy = backlog.locator('[data-marker*="deploy payments v2.3"]')
    deploy.hover()
    tip = backlog.locator(".marker-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("deploy payments v2.3 — token:ci")
    page.mouse.move(0, 0)
    expect(tip).to_be_hidden()
    # The keyboard reads them listed under the charts (markers are no tab stops: a page of
    # them would take dozens of Tab presses).
    events = page.locator("[data-chart-events]")
    events.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(events.locator("li")).to_have_count(2)
    expect(events).to_contain_text("requeue (40) — otto")
    assert backlog.locator("[data-marker][tabindex]").count() == 0
    # The SVG's own title: the text without JavaScript.
    assert "deploy payments v2.3" in deploy.locator("title").text_content()
    expect(page.locator("#queue-owner")).to_contain_text("Payments team")
    assert page.errors == []  # type: ignore[attr-defined]
    shot(page, "queue-markers")


def test_the_incident_page_lays_out_and_filters_the_timeline(
    story: str, make_user, page_as
) -> None:
    page = page_as(make_user("viewer"))
    page.goto("/incidents/?range=6h")
    rows = page.locator("table.timeline tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("requeue (40)")  # newest first
    expect(rows.nth(1)).to_contain_text("deploy payments v2.3")
    # Only annotations: untick the other kinds.
    for kind in ("action", "alert", "flag"):
        page.locator(f'input[name="kind"][value="{kind}"]').uncheck()
    page.get_by_role("button", name="Show").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("deploy payments v2.3")
    csv_link = page.locator('[data-export="csv"]')
    assert "kind=annotation" in (csv_link.get_attribute("href") or "")
    with page.expect_download() as download:
        csv_link.click()
    text = Path(download.value.path()).read_text()
    assert text.splitlines()[0] == "time,kind,connection,namespace,queue,text,who,ref"
    assert "deploy payments v2.3" in text and "requeue" not in text
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_redis_page_and_its_warning(story: str, make_user, page_as) -> None:
    page = page_as(make_user("viewer"))
    page.goto(f"{story}/")
    banner = page.locator(".redis-warning")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("persistence is off")
    banner.get_by_role("link", name="Redis health").click()
    expect(page).to_have_url(re.compile(r"/redis/default/$"))
    expect(page.locator("h1")).to_have_text("Redis default")
    expect(page.locator('[data-risk="persistence_off"]')).to_be_visible()
    expect(page.locator('[data-field="aof"]')).to_have_text("off")


@pytest.mark.parametrize(("scheme", "width"), MODES)
def test_the_pages_fit_a_phone_and_both_themes(
    story: str, make_user, page_as, scheme: str, width: int
) -> None:
    page = page_as(make_user("viewer"), viewport={"width": width, "height": 900},
                   color_scheme=scheme)  # fmt: skip
    for name, path in [
        ("redis", "/redis/default/"),
        ("incidents", "/incidents/?range=6h"),
        ("owners", "/owners/"),
        ("queue-markers", f"{story}/q/payments/"),
    ]:
        response = page.goto(path)
        assert response is not None and response.status == 200, name
        assert page.evaluate("document.documentElement.scrollWidth") <= width, (name, width)
        shot(page, f"{name}-{width}-{scheme}")
    assert page.errors == []  # type: ignore[attr-defined]
