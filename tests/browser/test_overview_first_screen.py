"""The overview's first screen is the queues, whatever the number of open flags: with 420
flags open (most of them the pipeline's, on stale exports), the first queue row is within
the first viewport at 1440×900 and within two at 390×844; each row carries its own flags;
the worst queues' flags are listed below the table, and acknowledging one there folds it."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from dashboard.models import AnomalyFlag, AuditEntry, FlagAck
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def flagged(console: str, settings, ns: str, rsmq: RedisSMQ, lake) -> str:
    """events: nothing consumes its 150 messages; 40 stale exports; 60 quiet services;
    420 open flags."""
    settings.RSMQ_REFRESH_SECONDS = 0
    settings.RSMQ_NO_CONSUMER_AFTER = 0.2
    settings.RSMQ_BACKLOG_WINDOW = 0.3
    settings.RSMQ_SNAPSHOT_INTERVAL = 0.1
    rsmq.create_queue("events")
    rsmq.send_messages("events", ["page_view"] * 150)
    for i in range(40):
        rsmq.create_queue(f"legacy-export-{i:02d}")
        rsmq.send_messages(f"legacy-export-{i:02d}", ["chunk"] * (1 + i % 3))
    for i in range(60):
        rsmq.create_queue(f"svc-{i:03d}")
    take_snapshot()
    time.sleep(0.35)
    rsmq.send_messages("events", ["page_view"] * 3)
    take_snapshot()
    now = round(time.time() * 1000)
    rows = [
        AnomalyFlag(connection="default", namespace=ns, queue=f"legacy-export-{i % 40:02d}",
                    kind=("consumers_stalled", "oldest_age")[i % 2], start=now - 3_600_000 + i,
                    intervals=60, figures={"visible_max": 3.0} if i % 2 == 0
                    else {"oldest_age_max": 259_200.0, "slo": 300.0})
        for i in range(80)
    ] + [
        AnomalyFlag(connection="default", namespace=ns, queue=f"svc-{i % 60:03d}",
                    kind="backlog_growing", start=now - 7_200_000 + i, intervals=30,
                    figures={"backlog_from": 0.0, "backlog_to": 12.0})
        for i in range(340)
    ]  # fmt: skip
    AnomalyFlag.objects.bulk_create(rows)
    assert AnomalyFlag.objects.filter(end__isnull=True).count() >= 420
    return console


def first_row_bottom(page: Page) -> float:
    box = page.locator("table.queues tbody tr").first.bounding_box()
    assert box is not None
    return box["y"] + box["height"]


@pytest.mark.parametrize(("width", "height", "screens"), [(1440, 900, 1), (390, 844, 2)])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_first_queue_row_is_on_the_first_screen(
    flagged: str, make_user, page_as, width: int, height: int, screens: int, scheme: str
) -> None:
    page = page_as(make_user("operator"), viewport={"width": width, "height": height},
                   color_scheme=scheme)  # fmt: skip
    page.goto(flagged)
    expect(page.locator("table.queues tbody tr").first).to_be_visible()
    assert page.locator("table.queues tbody tr").first.locator("a").first.inner_text() == "events"
    assert first_row_bottom(page) <= screens * height
    # the flags are below the table, and the totals say how many
    flags_top = page.locator("#open-flags").bounding_box()
    assert flags_top is not None and flags_top["y"] > first_row_bottom(page)
    expect(page.locator("[data-flag-total]")).to_contain_text("4")
    # no sideways scroll of the page itself
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_row_carries_its_flags_and_the_list_below_acknowledges_them(
    flagged: str, make_user, page_as
) -> None:
    page = page_as(make_user("operator", "olga"))
    page.goto(flagged)
    # the worst queue heads the list: the one nothing consumes, first in the table too
    group = page.locator("[data-flag-group]").first
    assert group.get_attribute("data-flag-group") == "events"
    row_flag = page.locator("table.queues tbody tr").first.locator(".queue-flag")
    expect(row_flag).to_have_attribute("title", re.compile(r"consumers stalled"))
    assert "quiet" not in (row_flag.get_attribute("class") or "")
    group.locator("[data-flag-ack]").click()
    expect(page.locator("[data-feedback]")).to_contain_text("of events while they stay open")
    assert FlagAck.objects.filter(queue="events").count() >= 1
    assert AuditEntry.objects.filter(action="flag_ack", queue="events", outcome="ok").exists()
    expect(page.locator("[data-flag-group='events']")).to_have_count(0)  # folded: quiet
    expect(page.locator("table.queues tbody tr").first.locator(".queue-flag")).to_have_class(
        re.compile(r"\bquiet\b")
    )
