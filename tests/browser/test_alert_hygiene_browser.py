"""Alert hygiene as an on-call operator walks it, at 1440 px and at 390 px: two alerts
fire on q1 (a backlog rule, and a burn-rate rule on its wait-time SLO over a synthetic
series of slow waits); the operator silences q* for an hour from /alerts/ (listed with
who, why and until; the overview says so), a third rule that fires meanwhile has its
notification held (the outbox shows it), *Expire now* ends the silence; the backlog
alert is acknowledged with its button, the burn-rate one from its notification's link
(a confirm page, then done); a weekly maintenance window is made. The page never gets
wider than the window, and no script fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from dashboard.alerting.evaluate import evaluate
from dashboard.celery import app as celery_app
from dashboard.models import Alert, AlertRule, AuditEntry, Notification, Preference, Silence

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STEP = 60_000
AXE = Path(__file__).parent / "vendor" / "axe-core-4.10.3.min.js"


@pytest.fixture
def firing(console: str, settings, lake, broker_url: str, ns: str, add_snapshot, redis_now):
    settings.RSMQ_REFRESH_SECONDS = 0
    celery_app.conf.broker_url = broker_url  # a notification's send: the test Redis
    hook = {"webhook_url": "https://hooks.example.com/x", "webhook_secret": "k"}
    place = {"connection": "default", "namespace": ns, "queue": "q1"}
    AlertRule.objects.create(name="backlog", metric="visible", threshold=5, **place, **hook)
    AlertRule.objects.create(name="wait SLO", metric="burn:fast", threshold=99, **place, **hook)
    now = redis_now()
    # an hour of good waits, then nine minutes of every wait over the SLO: the workbook's
    # page (1 h and 5 min over 14.4) fires at the ninth
    for i in range(-50, 10):
        slow = 100 if i > 0 else 0
        add_snapshot("q1", now - (9 - i) * STEP, msgs=10, wait_p50=1.0, wait_samples=100,
                     wait_slow=slow)  # fmt: skip
    evaluate()
    assert set(Alert.objects.values_list("rule__name", "state")) == {
        ("backlog", "firing"), ("wait SLO", "firing"),
    }  # fmt: skip
    return console


def fits(page: Page, width: int) -> None:
    # after a form's answer, its stylesheet may still be coming when the text shows
    page.wait_for_load_state("load")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def violations(page: Page) -> list[str]:
    """axe's serious and critical violations on the page."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{v['id']}: {json.dumps([n['target'] for n in v['nodes'][:3]])}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.parametrize("width", [1440, 390])
def test_an_operator_silences_acknowledges_and_schedules_a_window(
    firing: str, make_user, page_as, add_snapshot, redis_now, ns: str, width: int
) -> None:
    user = make_user("operator")
    Preference.objects.create(user=user, refresh_seconds=0)
    page = page_as(user, viewport={"width": width, "height": 900}, bypass_csp=True)
    assert page.goto("/alerts/").status == 200  # type: ignore[union-attr]
    live = page.locator("table.live")
    expect(live).to_contain_text("burn ×15.0")
    fits(page, width)

    # a silence of q* for an hour
    page.locator("details.new-silence summary").click()
    form = page.locator("[data-silence-form]")
    form.locator("input[name=pattern]").fill("q*")
    form.locator("input[name=reason]").fill("db migration")
    form.locator("input[name=hours]").fill("1")
    form.locator("[data-silence-create]").click()
    row = page.locator("tr[data-silence]")
    expect(row).to_contain_text("db migration")
    expect(row).to_contain_text("operator")
    expect(row.locator("[data-silence-on]")).to_be_visible()
    assert AuditEntry.objects.filter(action="alert_silence", outcome="ok").count() == 1
    fits(page, width)

    # meanwhile a third rule fires: its notification is held
    AlertRule.objects.create(name="in flight", connection="default", namespace=ns, queue="q1",
                             metric="inflight", threshold=0, webhook_url="https://h.example/y",
                             webhook_secret="k2")  # fmt: skip
    add_snapshot("q1", redis_now(), msgs=10, inflight=3)
    evaluate()
    page.goto("/alerts/")
    held = page.locator("#held")
    expect(held).to_contain_text("Notifications held by silences: 1")
    expect(held).to_contain_text("silence by operator until")
    fits(page, width)
    page.goto(firing + "/")
    expect(page.locator("#silenced")).to_contain_text("q* — db migration")
    fits(page, width)

    # expire now
    page.goto("/alerts/")
    page.locator("[data-expire]").click()
    expect(page.locator(".flash").first).to_contain_text("is over")
    expect(page.locator("tr[data-silence]")).to_have_count(0)
    assert Silence.objects.get().expired_by == "operator"

    # acknowledge the backlog alert with its button
    backlog = Alert.objects.get(rule__name="backlog")
    page.locator(f"tr[data-alert='{backlog.pk}'] [data-ack]").click()
    expect(page.locator(f"tr[data-alert='{backlog.pk}'] [data-acked]")).to_have_text("by operator")
    fits(page, width)

    # the burn-rate alert from its notification's link: a confirm page, then done
    burn = Alert.objects.get(rule__name="wait SLO")
    # (both rules share a receiver: q1's two firings were one notification)
    first = Notification.objects.order_by("id").first()
    assert first is not None and first.payload["group"] == "q1"
    url = next(a["ack_url"] for a in first.payload["alerts"] if a["rule"] == "wait SLO")
    page.goto(url)
    expect(page.locator("[data-ack-link]")).to_contain_text("wait SLO")
    fits(page, width)
    assert violations(page) == []
    burn.refresh_from_db()
    assert burn.acked is None  # the GET changed nothing
    page.locator("[data-ack-confirm]").click()
    expect(page.locator("[data-ack-done]")).to_contain_text("Acknowledged wait SLO on q1")
    burn.refresh_from_db()
    assert burn.acked_by == "operator"
    page.goto(url)
    expect(page.locator("[data-ack-refused]")).to_contain_text("Used already")

    # a weekly maintenance window
    page.goto("/alerts/")
    page.locator("details.new-silence summary").click()
    form = page.locator("[data-silence-form]")
    form.locator("input[name=pattern]").fill("q1")
    form.locator("input[name=reason]").fill("weekly vacuum")
    form.locator("input[name=weekdays][value=sun]").check()
    form.locator("input[name=start]").fill("02:00")
    form.locator("input[name=end]").fill("03:00")
    form.locator("[data-silence-create]").click()
    expect(page.locator("tr[data-silence]")).to_contain_text("sun 02:00–03:00 UTC")
    fits(page, width)
    page.locator("details.new-silence summary").click()  # the form open, the lists full
    assert violations(page) == []
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [1440, 390])
def test_an_admin_sets_a_rules_renotify_and_the_alert_is_told_again(
    firing: str, make_user, page_as, add_snapshot, redis_now, settings, width: int
) -> None:
    settings.RSMQ_OUTBOUND_ALLOW = ["hooks.example.com"]  # its webhook: never looked up
    user = make_user("admin")
    Preference.objects.create(user=user, refresh_seconds=0)
    page = page_as(user, viewport={"width": width, "height": 900})
    rule = AlertRule.objects.get(name="backlog")
    assert page.goto(f"/alerts/{rule.pk}/").status == 200  # type: ignore[union-attr]
    page.locator("input[name=renotify_seconds]").fill("30")
    page.locator("select[name=severity]").select_option("high")
    page.locator("form.rule button[type=submit]").click()
    expect(page.locator(".flash.ok")).to_contain_text("Rule saved")
    rule.refresh_from_db()
    assert rule.renotify_seconds == 30
    fits(page, width)
    page.goto("/alerts/")
    expect(page.locator("table.rules")).to_contain_text("high, again every 30 s")
    backlog = Alert.objects.get(rule=rule)
    first = backlog.notified
    assert first is not None
    # 30 s after it was told (by the snapshots' clock), still firing: told again
    add_snapshot("q1", first + 30_000, msgs=11, wait_p50=1.0, wait_samples=100, wait_slow=0)
    evaluate()
    backlog.refresh_from_db()
    assert backlog.notified == first + 30_000
    told = [n for n in Notification.objects.order_by("id") for a in n.payload["alerts"]
            if a.get("rule", n.payload["rule"]["name"]) == "backlog"]  # fmt: skip
    assert len(told) == 2
    page.goto("/alerts/")
    expect(page.locator(f"tr[data-alert='{backlog.pk}'] [data-told]")).not_to_have_text("–")
    fits(page, width)
    assert page.errors == []  # type: ignore[attr-defined]
