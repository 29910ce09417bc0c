"""A 1,020,005-message queue in a real browser: every tab's first, a middle and the last
page list the right messages, and the scans reach the very end (SPEC §10, issue 11).

The queue: 970,000 visible; 30,000 in flight (vt 2 h) and 20,000 delayed (2 h),
interleaved by visible-at time in batches of 1,000 / 2,000; 5 poison messages received
6 times each, hidden for 3 h: the last of the queue. What each page should list comes
from the census reads (rank ranges of the zset), not from the browsing under test.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

VISIBLE, INFLIGHT, DELAYED, POISON = 970_000, 30_000, 20_000, 5
SIZE = 50  # RSMQ_PAGE_SIZE


@dataclass
class Big:
    ns: str
    rsmq: RedisSMQ
    all: list[str]  # ids of the hidden part of the queue, in queue order (ranks VISIBLE..)
    visible_at: dict[str, int]
    inflight: list[str]
    delayed: list[str]
    poison: list[str]
    poison_named: dict[str, str]  # body -> id

    def ranks(self, first: int, count: int) -> list[str]:
        return self.rsmq.census_range("big", first, count).ids


@pytest.fixture(scope="module")
def big(redis_url: str) -> Iterator[Big]:
    ns = "big" + uuid.uuid4().hex[:8]
    rsmq = RedisSMQ(url=redis_url, ns=ns)
    rsmq.create_queue("big")
    poison = rsmq.send_messages("big", [f"poison {i}" for i in range(POISON)])
    for _ in range(6):
        assert len(rsmq.receive_messages("big", POISON, vt=0)) == POISON
    for mid in poison:
        rsmq.change_message_visibility("big", mid, 3 * 3600)
    for k in range(100):  # 1,000,000, ~25 s
        rsmq.send_messages("big", [f"order {k * 10_000 + i}" for i in range(10_000)])
    for _ in range(10):  # in flight and delayed interleaved by visible-at time
        for _ in range(3):
            assert len(rsmq.receive_messages("big", 1000, vt=7200)) == 1000
        rsmq.send_messages("big", ["later"] * 2000, delay=7200)
    hidden_ids: list[str] = []
    visible_at: dict[str, int] = {}
    inflight: list[str] = []
    delayed: list[str] = []
    for first in range(VISIBLE, VISIBLE + INFLIGHT + DELAYED + POISON, 10_000):
        s = rsmq.census_range("big", first, 10_000)
        for mid, at, rc in zip(s.ids, s.visible_at, s.rc, strict=True):
            hidden_ids.append(mid)
            visible_at[mid] = at
            (inflight if rc else delayed).append(mid)
    assert hidden_ids[-POISON:] == sorted(poison)
    named = {f"poison {i}": mid for i, mid in enumerate(poison)}
    yield Big(ns, rsmq, hidden_ids, visible_at, inflight, delayed, sorted(poison), named)
    rsmq.delete_queue("big")
    rsmq.close()


@pytest.fixture
def console(settings, redis_url: str, big: Big) -> str:
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": redis_url, "namespaces": [big.ns], "environment": "test"}
    ]
    settings.RSMQ_PAGE_SIZE = SIZE
    # What is listed is checked here, not how fast (bench/dashboard.py --browse): a
    # budget that fills a page even on a busy shared machine.
    settings.RSMQ_BROWSE_BUDGET_MS = 500
    return f"/c/default/{big.ns}/q/big/"


def listed(page: Page) -> list[str]:
    page.locator("table.messages").first.wait_for()
    return page.locator("table.messages tbody td.mono a").all_inner_texts()


def go(page: Page, which: str) -> None:
    with page.expect_navigation():
        page.locator(f'[data-page="{which}"]').click()


def jump(page: Page, field: str, value: str) -> None:
    page.locator(f'input[name="{field}"][form="jump-form"]').fill(value)
    with page.expect_navigation():
        page.locator('button[form="jump-form"]').click()


def utc(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms // 1000, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")


@pytest.mark.parametrize("tab", ["all", "visible"])
def test_numbered_tabs_list_the_right_first_middle_and_last_pages(
    big: Big, console: str, make_user, page_as, tab: str
) -> None:
    total = VISIBLE + (INFLIGHT + DELAYED + POISON if tab == "all" else 0)
    pages = -(-total // SIZE)
    page = page_as(make_user("viewer"))
    page.goto(f"{console}?state={tab}")
    assert listed(page) == big.ranks(0, SIZE)
    pager = page.locator("nav.pagination")
    expect(pager).to_contain_text(f"Page 1 of {pages:,} · {total:,}")
    expect(page.locator(f'[data-tab-count="{tab}"]')).to_have_text(f"{total:,}")

    middle = pages // 2
    jump(page, "page", str(middle))
    assert listed(page) == big.ranks((middle - 1) * SIZE, SIZE)
    expect(pager).to_contain_text(f"Page {middle:,} of {pages:,}")
    go(page, "next")
    assert listed(page) == big.ranks(middle * SIZE, SIZE)

    go(page, "last")
    last = big.ranks((pages - 1) * SIZE, SIZE)
    assert listed(page) == last and len(last) == total - (pages - 1) * SIZE
    expect(pager).to_contain_text(f"Page {pages:,} of {pages:,}")
    if tab == "all":
        assert last[-POISON:] == big.poison
    go(page, "prev")
    assert listed(page) == big.ranks((pages - 2) * SIZE, SIZE)
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("tab", ["inflight", "delayed"])
def test_filtered_tabs_list_the_right_first_middle_and_last_pages(
    big: Big, console: str, make_user, page_as, tab: str
) -> None:
    expected = big.inflight if tab == "inflight" else big.delayed
    page = page_as(make_user("viewer"))
    page.goto(f"{console}?state={tab}")
    assert listed(page) == expected[:SIZE]
    go(page, "next")
    assert listed(page) == expected[SIZE : 2 * SIZE]

    # The badge's number is the pager's (estimated: it says how).
    badge = page.locator(f'[data-tab-count="{tab}"]').inner_text()
    assert badge.startswith("≈")
    expect(page.locator("nav.pagination")).to_contain_text(f"{badge} (estimated)")
    assert int(badge[1:].replace(",", "")) == pytest.approx(len(expected), rel=0.1)

    mid = expected[len(expected) // 2]
    at = utc(big.visible_at[mid])
    jump(page, "at", at)
    since = (big.visible_at[mid] // 1000) * 1000
    assert listed(page) == [m for m in expected if big.visible_at[m] >= since][:SIZE]

    go(page, "last")
    assert listed(page) == expected[-SIZE:]
    if tab == "inflight":
        assert expected[-POISON:] == big.poison
    go(page, "prev")
    assert listed(page) == expected[-2 * SIZE : -SIZE]
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_poison_view_scans_to_the_very_end(big: Big, console: str, make_user, page_as) -> None:
    page = page_as(make_user("viewer"))
    page.goto(f"{console}?rc=5")
    progress = page.locator("#scan-progress")
    expect(progress).to_contain_text("Done:", timeout=240_000)
    total = VISIBLE + INFLIGHT + DELAYED + POISON
    expect(progress).to_contain_text(f"looked at {total:,} of {total:,} messages — 5 matches")
    assert listed(page) == big.poison
    assert page.locator("td.num.match mark").all_inner_texts() == ["6"] * POISON
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_body_search_can_be_stopped_and_continued(
    big: Big, console: str, make_user, page_as
) -> None:
    page = page_as(make_user("viewer"))
    page.goto(f"{console}?search=poison+3")
    progress = page.locator("#scan-progress")
    expect(progress).to_contain_text("Looking…")
    page.wait_for_function(
        "() => +document.querySelector('[data-looked]').textContent.replace(/,/g, '') > 100000"
    )
    page.locator("[data-scan-stop]").click()
    expect(progress).to_contain_text("Stopped:")
    looked = page.locator("[data-looked]").inner_text()
    page.wait_for_timeout(1500)
    assert page.locator("[data-looked]").inner_text() == looked  # it did stop
    page.locator("[data-scan-continue]").click()
    expect(progress).to_contain_text("Done:", timeout=240_000)
    expect(progress).to_contain_text("1 match")
    rows = page.locator("table.messages tbody tr")
    expect(rows).to_have_count(1)
    assert listed(page) == [big.poison_named["poison 3"]]
    expect(rows.locator("mark")).to_have_text("poison 3")
    assert page.errors == []  # type: ignore[attr-defined]
