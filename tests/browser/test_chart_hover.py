"""Chart values on hover, in a real browser: a point of the queue page's backlog chart
hovered shows its time and values under the chart; the growth figure and the axis'
range beside it; the page at 1440 and 390 px, light and dark (``RSMQ_BROWSER_SHOTS``)."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pytest
from django.utils import timezone
from support.browser import CHROMIUM

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing", allow_module_level=True)

from playwright.sync_api import Page, expect  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("RSMQ_BROWSER_SHOTS", "")
MIN = 60_000


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture
def payments(settings, console, queue: str, add_snapshot, redis_now) -> list[tuple[int, int]]:
    """189,000 → 203,200 messages over 12 minutes, waits growing: (time, messages)."""
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    now = redis_now()
    points = []
    for i in range(13):
        at, msgs = now - (12 - i) * MIN, 189_000 + round(14_200 * i / 12)
        add_snapshot(
            queue, at, msgs=msgs, totalsent=msgs, oldest_age=40.0 + 60 * i,
            wait_p50=0.5 + i / 10, wait_p95=2.0 + i / 4, wait_p99=3.0 + i / 2, wait_samples=50,
        )  # fmt: skip
        points.append((at, msgs))
    return points


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1440, 390])
def test_hovering_a_point_shows_its_values(
    console, payments, queue: str, make_user, page_as, scheme: str, width: int
) -> None:
    page = page_as(
        make_user("viewer"), color_scheme=scheme, viewport={"width": width, "height": 900}
    )
    page.goto(f"{console}/q/{queue}/")
    backlog = page.locator("figure.chart").filter(has_text="Backlog").first
    expect(backlog.locator("figcaption")).to_contain_text("+14,200 in 12 min")
    expect(backlog.locator("figcaption")).to_contain_text("axis 180k–210k, not from 0")
    hits = backlog.locator("rect.hit")
    expect(hits).to_have_count(13)
    at, msgs = payments[6]
    hits.nth(6).hover()
    local = timezone.localtime(dt.datetime.fromtimestamp(at / 1000, tz=dt.UTC))
    clock = local.strftime("%H:%M:%S %Z")  # the zone said
    readout = backlog.locator("[data-readout]")
    expect(readout).to_have_text(f"{clock} · visible {msgs:,} · in flight 0 · delayed 0")
    expect(hits.nth(6)).to_have_class(re.compile(r"\bon\b"))
    # the wait chart, the same way
    times = page.locator("figure.chart").filter(has_text="Wait and processing time").first
    times.locator("rect.hit").last.hover()
    expect(times.locator("[data-readout]")).to_contain_text("wait p95 5 s · wait p99 9 s")
    expect(page.locator("[data-drain]")).to_have_text("never drains: growing +20/s")
    # nothing wider than the screen
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    shot(page, f"h21-queue-{width}-{scheme}")
    assert page.errors == []  # type: ignore[attr-defined]


AXE = Path(__file__).parent / "vendor" / "axe-core-4.10.3.min.js"


@pytest.mark.parametrize(("scheme", "width"), [("light", 1440), ("dark", 390)])
def test_the_charts_with_their_hover_areas_pass_axe(
    console, payments, queue: str, make_user, page_as, scheme: str, width: int
) -> None:
    page = page_as(
        make_user("viewer"),
        color_scheme=scheme,
        viewport={"width": width, "height": 900},
        bypass_csp=True,  # to inject axe (tests/browser/test_axe.py's way)
    )
    page.goto(f"{console}/q/{queue}/")
    expect(page.locator("figure.chart")).to_have_count(3)
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    bad = [f"{v['id']}: {v['help']}" for v in found if v["impact"] in ("serious", "critical")]
    assert bad == []
