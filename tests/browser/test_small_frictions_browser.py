"""The small things, in Chromium: a viewer told why there are no buttons; the alerts page's
values as their metrics read and its states badged; "add one" opening the owner form
filled in; the Undo asking with its count; the messages' filter a skip link away, not 45
Tab presses past the chart markers."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from support.browser import accept_dialogs

from dashboard.models import Alert, AlertRule, Annotation, AnomalyFlag
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def q(console: str, settings, ns: str, rsmq: RedisSMQ, add_snapshot, redis_now) -> str:
    settings.RSMQ_REFRESH_SECONDS = 0
    rsmq.create_queue("payments")
    rsmq.send_messages("payments", ["x"] * 5200)
    now = redis_now()
    for i in range(30):
        add_snapshot("payments", now - (30 - i) * 60_000, msgs=5000 + i)
        # a busy timeline: thirty marks on each chart
        Annotation.objects.create(at=now - (30 - i) * 60_000 + 5, connection="default",
                                  namespace=ns, queue="payments", text=f"deploy {i}",
                                  created_by="ci")  # fmt: skip
    AnomalyFlag.objects.create(connection="default", namespace=ns, queue="payments",
                               kind="oldest_age", start=now - 600_000, intervals=10,
                               figures={"oldest_age_max": 896.0, "slo": 300.0})  # fmt: skip
    return console


def test_a_viewer_is_told_why_there_are_no_buttons(q: str, make_user, page_as) -> None:
    page = page_as(make_user("viewer", "vic"))
    page.goto(f"{q}/q/payments/")
    note = page.locator("[data-why-no-actions]")
    expect(note).to_contain_text("you are signed in as a viewer")
    expect(note).to_contain_text("need the operator role")
    assert page.locator("[data-bulk]").count() == 0
    expect(page.locator("#open-flags")).to_contain_text("15 min old (SLO 5 min)")


def test_the_alerts_page_reads_as_its_metrics(q: str, ns: str, make_user, page_as) -> None:
    rule = AlertRule.objects.create(
        name="backlog", connection="default", namespace=ns, queue="payments", metric="visible",
        threshold=100_000,
    )  # fmt: skip
    Alert.objects.create(rule=rule, connection="default", namespace=ns, queue="payments",
                         state="firing", value=178177.0, since=1, changed=1)  # fmt: skip
    page = page_as(make_user("viewer"))
    page.goto("/alerts/")
    state = page.locator("table.live .alert-state.firing")
    expect(state).to_have_text("firing")
    color = state.evaluate("e => getComputedStyle(e).backgroundColor")
    assert color not in ("rgba(0, 0, 0, 0)", "transparent")  # a badge, not bare text
    expect(page.locator("[data-alert-value]")).to_have_text("178,177")
    expect(page.locator("table.rules")).to_contain_text("visible messages above 100,000")


def test_add_one_opens_the_owner_form_filled_in(q: str, ns: str, make_user, page_as) -> None:
    page = page_as(make_user("admin"))
    page.goto(f"{q}/q/payments/")
    page.locator("[data-add-owner]").click()
    expect(page.locator("#id_place")).to_have_value(f"default/{ns}")
    expect(page.locator("#id_queue")).to_have_value("payments")
    page.locator("#id_owner").fill("Payments team")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("table.owners")).to_contain_text("Payments team")


def test_the_undo_asks_with_its_count(q: str, make_user, page_as) -> None:
    page = page_as(make_user("admin"))
    asked = accept_dialogs(page)
    page.goto(f"{q}/q/payments/")
    page.fill("#id_purge-confirm", "payments")
    page.get_by_role("button", name="Purge queue").click()
    answer = page.locator("[data-feedback]")
    expect(answer.locator("p").first).to_have_text("Purged 5,200 messages from payments.")
    answer.get_by_role("button", name="Undo").click()
    expect(page.get_by_text("put back 5,200 messages")).to_have_count(1)
    assert asked == ["Undo: put back the 5,200 messages this removed from payments?"]


def test_the_filter_is_a_skip_link_away_not_past_the_markers(q: str, make_user, page_as):
    page = page_as(make_user("operator"))
    page.goto(f"{q}/q/payments/")
    assert page.locator("figure.chart").first.locator("[data-marker]").count() >= 30
    page.keyboard.press("Tab")  # Skip to content
    page.keyboard.press("Tab")
    expect(page.locator("[data-skip-filters]")).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    expect(page.locator("#message-filters input[name=rc]")).to_be_focused()
    # and without the skip link, the markers are no tab stops on the way
    page.goto(f"{q}/q/payments/")
    presses = 0
    while page.evaluate("document.activeElement.name") != "rc" and presses < 60:
        page.keyboard.press("Tab")
        presses += 1
    assert presses < 45, presses
    assert page.evaluate("document.querySelectorAll('[data-marker][tabindex]').length") == 0
