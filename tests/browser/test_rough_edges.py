"""Issue 22's rough edges, each walked in Debian's chromium against live_server and a real
Redis, as the operator met them: every page at 390 px (light and dark) no wider than the
phone; no console error (a CSP report, a failed load, a script error) through the pages
and the actions; the filtered lists' columns lining up; one answer per action, in one
place, with nothing floating over a control; "Created queue x" linking to it; visibility
typed in s / min / h; the audit log by time range; absolute times that say their zone.
``RSMQ_BROWSER_SHOTS=DIR`` saves the changed pages' screenshots (1440 and 390 px, light
and dark)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import time
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect
from support.browser import accept_dialogs, seed_realistic

from dashboard.models import (
    Alert,
    AlertEvent,
    AlertRule,
    ApiToken,
    AuditEntry,
    Notification,
    Ownership,
    Preference,
)
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = os.environ.get("RSMQ_BROWSER_SHOTS", "")
LONG = "https://hooks.internal.example/" + "a" * 120
TRACE = [  # as a worker may hand it: lines without their "\n"
    "Traceback (most recent call last):",
    '  File "/srv/app/handlers/payments_and_refunds_for_every_region_of_the_world.py", line 88',
    "payments.errors.CardDeclinedBecauseTheIssuerSaidSoAndTheRetryBudgetIsSpentAlready: no",
]


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


@pytest.fixture
def world(console: str, settings, ns: str, rsmq: RedisSMQ) -> dict[str, str]:
    """Every page of the console with something on it, long words included: queues in
    every state, a dead-letter queue, a failure with a long type and trace, a firing alert
    with its history and outbox, an owner, a token, audit rows."""
    settings.RSMQ_REFRESH_SECONDS = 0
    seed_realistic(rsmq)
    rsmq.create_queue("orders-dlq")
    rsmq.set_dead_letter_policy("orders", "orders-dlq", 3)
    rsmq.send_messages("orders-dlq", [json.dumps({"order_id": 9, "why": "declined"})] * 3)
    failed = rsmq.send_message("webhooks", json.dumps({"url": LONG, "event": "order.paid"}))
    got = rsmq.receive_messages("webhooks", 50, vt=0)
    assert failed in [m.id for m in got]
    rsmq.record_failure(
        "webhooks", failed, error_type=TRACE[-1].split(":")[0], message="x" * 300, trace=TRACE
    )
    now = int(time.time() * 1000)
    rule = AlertRule.objects.create(
        name="dead letters", connection="default", namespace=ns, queue="", pattern="orders-*",
        metric="visible", threshold=1, webhook_url=LONG,
    )  # fmt: skip
    alert = Alert.objects.create(
        rule=rule, connection="default", namespace=ns, queue="orders-dlq", state="firing",
        value=3, since=now - 600_000, changed=now - 60_000,
    )  # fmt: skip
    AlertEvent.objects.create(alert=alert, at=now - 60_000, state="firing", value=3)
    for i, gave_up in enumerate((None, timezone.now())):
        Notification.objects.create(
            key=f"k{i}", rule=rule, channel="webhook", target=LONG,
            payload={"rule": {"name": rule.name}}, attempts=3, last_error=f"refused: {LONG}",
            next_attempt=timezone.now() + dt.timedelta(minutes=5), gave_up=gave_up,
        )  # fmt: skip
    owner = Ownership.objects.create(
        connection="default", namespace=ns, pattern="orders*", owner="Orders team",
        oncall="@orders-oncall", runbook_url="https://wiki.example/" + "r" * 90,
    )  # fmt: skip
    ApiToken.objects.create(
        name="ci-deploy-annotations", role="operator", prefix="rsmq_abc",
        digest=hashlib.sha256(b"t").hexdigest(), created_by="admin",
    )  # fmt: skip
    AuditEntry.objects.create(
        username="otto", connection="default", namespace=ns, queue="orders", action="requeue",
        count=3, outcome="ok", detail="Requeued 3 messages. " + "d" * 200,
    )  # fmt: skip
    return {
        "overview": f"{console}/",
        "queue": f"{console}/q/orders/",
        "queue, in flight": f"{console}/q/orders/?state=inflight",
        "queue, received ≥ 2": f"{console}/q/orders/?rc=2",
        "queue, body search": f"{console}/q/orders/?search=cust",
        "dead-letter queue": f"{console}/q/orders-dlq/",
        "message with a failure": f"{console}/q/webhooks/m/{failed}/",
        "failing": f"{console}/q/webhooks/failing/",
        "alerts": "/alerts/",
        "new alert rule": "/alerts/new/",
        "alert rule": f"/alerts/{rule.pk}/",
        "incidents": "/incidents/?range=1h",
        "redis": "/redis/default/",
        "owners": "/owners/",
        "owner": f"/owners/{owner.pk}/",
        "tokens": "/tokens/",
        "audit": "/audit/",
        "audit, by time": "/audit/?from=2000-01-01T00:00",
    }


@pytest.fixture
def admin(make_user):
    user = make_user("admin")
    Preference.objects.create(user=user, refresh_seconds=0)
    return user


#: the elements wider than the page, widest last: what to fix when a page scrolls sideways
WIDER = """(width) => Array.from(document.querySelectorAll("body *"))
  .map((el) => [Math.round(el.getBoundingClientRect().right), el])
  .filter(([right]) => right > width)
  .sort((a, b) => a[0] - b[0]).slice(0, 5)
  .map(([right, el]) => `${el.tagName.toLowerCase()}.${el.className} (${right} px)`)"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_page_is_wider_than_a_phone(page_as, world, admin, scheme: str) -> None:
    page = page_as(admin, viewport={"width": 390, "height": 844}, color_scheme=scheme)
    wide = {}
    for name, path in {"login": "/login/", **world}.items():
        response = page.goto(path)
        assert response is not None and response.status == 200, name
        if page.evaluate("document.documentElement.scrollWidth") > 390:
            wide[name] = page.evaluate(WIDER, 390)
        if name in ("message with a failure", "failing", "dead-letter queue", "audit, by time"):
            shot(page, f"edges-{name.replace(' ', '-').replace(',', '')}-390-{scheme}")
    assert wide == {}
    assert page.errors == []  # type: ignore[attr-defined]


# -- no console error -------------------------------------------------------------------------

CSP_WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def test_a_walk_through_the_pages_and_actions_logs_no_console_error(
    console, settings, new_context, world, make_user, rsmq: RedisSMQ
) -> None:
    """What the browser's console says (errors and warnings: a blocked inline style, a
    failed load, a script error) through every page and an action of each kind, with the
    live refresh on."""
    user = make_user("admin", "walker")
    Preference.objects.create(user=user, refresh_seconds=2)
    ctx = new_context(user)
    ctx.add_init_script(CSP_WATCH)
    page = ctx.new_page()
    said: list[str] = []
    page.on(
        "console", lambda m: m.type in ("error", "warning") and said.append(f"{m.type}: {m.text}")
    )
    page.on("pageerror", lambda e: said.append(f"pageerror: {e}"))
    # a request failed, but for one the browser dropped as it went on to the next page (a
    # favicon still loading: net::ERR_ABORTED)
    page.on(
        "requestfailed",
        lambda r: r.failure == "net::ERR_ABORTED" or said.append(f"failed: {r.url} {r.failure}"),
    )
    accept_dialogs(page)
    csp: list[str] = []

    def visit(path: str) -> None:
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        csp.extend(page.evaluate("window.__csp"))

    for path in world.values():
        visit(path)
    # Actions, each with htmx, on the queue page and the message page.
    visit(f"{console}/")
    page.locator("summary", has_text="Create queue").click()
    page.fill("#id_name", "walked")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("[data-feedback]")).to_contain_text("Created queue walked.")
    page.wait_for_timeout(2500)  # the overview's live refresh, morphed in
    visit(f"{console}/q/emails/")
    page.wait_for_timeout(2500)  # the queue page's, and its charts'
    page.get_by_role("link", name="last day").click()  # the charts swapped by htmx
    expect(page.locator('nav[aria-label="Chart range"] a[aria-current]')).to_have_text("last day")
    page.fill("#id_body", '{"to": "zoe@example.com"}')
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator("[data-feedback]")).to_contain_text("Sent message ")
    page.locator("#live input[name=ids]").nth(0).check()
    page.locator("#live input[name=ids]").nth(1).check()
    page.get_by_role("button", name="Requeue", exact=True).click()
    expect(page.locator("[data-feedback]")).to_have_text("Requeued 2 messages.")
    page.locator("#live input[name=ids]").nth(0).check()
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.locator("[data-feedback] p").first).to_have_text("Deleted 1 message.")
    expect(page.locator("[data-feedback] [data-undo]")).to_be_visible()  # with its Undo
    page.locator("#live input[name=ids]").nth(0).check()
    page.fill("#live input[name=to]", "walked")
    page.get_by_role("button", name="Move", exact=True).click()
    expect(page.locator("[data-feedback]")).to_contain_text("Moved 1 message")
    page.fill("#id_vt", "5m")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-feedback]")).to_contain_text("Saved: vt 300 s")
    page.goto(f"{console}/q/emails/?search=welcome")
    expect(page.locator("#scan-progress")).to_contain_text("Done")
    page.goto(f"{console}/q/emails/?rc=1")
    expect(page.locator("#scan-progress")).to_contain_text("Done")
    mid = rsmq.send_message("emails", "one more")
    visit(f"{console}/q/emails/m/{mid}/")
    page.fill("#id_vt", "2h")
    page.get_by_role("button", name="Change visibility").click()
    expect(page.locator("[data-feedback]")).to_contain_text("Visible again in 7200 s")
    visit(f"{console}/q/thumbnails/")
    page.fill("#id_purge-confirm", "thumbnails")
    page.get_by_role("button", name="Purge queue").click()
    expect(page.locator("[data-feedback]")).to_contain_text("Purged")
    visit("/audit/?action=purge")
    csp.extend(page.evaluate("window.__csp"))
    assert csp == []
    assert said == []


# -- the filtered lists -----------------------------------------------------------------------

CELLS = """() => {
  const head = document.querySelectorAll("table.messages thead th").length;
  return Array.from(document.querySelectorAll("table.messages tbody tr")).map((r) => ({
    cells: r.children.length, head, tables: r.querySelectorAll("table").length,
    body: r.querySelector("td.body") ? r.querySelector("td.body").innerText : null,
  }));
}"""


@pytest.mark.parametrize("query", ["rc=2", "search=order", "search=%7B%22"])
def test_filtered_results_line_up_with_their_columns(
    console, settings, page_as, admin, rsmq: RedisSMQ, query: str
) -> None:
    """Received ≥ N and body search, read in several htmx steps (each appends its rows):
    a row per match, as many cells as the header, the whole body in its column."""
    settings.RSMQ_REFRESH_SECONDS = 0
    settings.RSMQ_BROWSE_STEP = 4  # many steps, each appended to the table
    rsmq.create_queue("jobs")
    bodies = [json.dumps({"order": i, "note": "it's <b>bold</b>"}) for i in range(24)]
    rsmq.send_messages("jobs", bodies[:6])
    for _ in range(2):  # these 6 received twice (no other message is there yet)
        assert len(rsmq.receive_messages("jobs", 6, vt=0)) == 6
    rsmq.send_messages("jobs", bodies[6:])
    page = page_as(admin)
    page.goto(f"{console}/q/jobs/?{query}")
    expect(page.locator("#scan-progress")).to_contain_text("Done")
    rows = page.evaluate(CELLS)
    assert len(rows) == (6 if query == "rc=2" else 24)
    assert {(r["cells"], r["tables"]) for r in rows} == {(rows[0]["head"], 0)}
    assert rows[0]["head"] == 8
    assert sorted(r["body"] for r in rows) == sorted(
        b for b in bodies if query != "rc=2" or json.loads(b)["order"] < 6
    )
    assert page.errors == []  # type: ignore[attr-defined]


# -- one answer per action, nothing over a control ---------------------------------------------

#: visible fixed-position boxes that overlap a visible control, and what they cover
COVERED = """() => {
  const box = (el) => el.getBoundingClientRect();
  const shown = (r) => r.width > 0 && r.height > 0;
  const fixed = Array.from(document.querySelectorAll("body *")).filter(
    (el) => getComputedStyle(el).position === "fixed" && shown(box(el)));
  const controls = Array.from(document.querySelectorAll("button, input, select, textarea, a"))
    .filter((el) => shown(box(el)) && !fixed.some((f) => f.contains(el)));
  const out = [];
  for (const f of fixed) for (const c of controls) {
    const a = box(f), b = box(c);
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
      out.push(`${f.className} covers ${c.tagName} ${c.textContent.trim() || c.name}`);
  }
  return out;
}"""


def test_an_action_answers_once_in_one_place_and_never_splits_the_bulk_bar(
    console, settings, page_as, admin, rsmq: RedisSMQ
) -> None:
    settings.RSMQ_REFRESH_SECONDS = 0
    rsmq.create_queue("jobs")
    ids = rsmq.send_messages("jobs", [f"m{i}" for i in range(40)])
    page = page_as(admin, viewport={"width": 1280, "height": 720})
    accept_dialogs(page)
    page.goto(f"{console}/q/jobs/")
    bar = page.locator(".bulk[data-bulk]")
    height = bar.bounding_box()["height"]  # type: ignore[index]
    for mid in ids[:3]:
        page.get_by_role("checkbox", name=f"Select {mid}").check()
    page.get_by_role("button", name="Requeue", exact=True).click()
    note = page.locator("[data-feedback]")
    expect(note).to_have_text("Requeued 3 messages.")
    # Once: not in a banner, nor a toast, nor twice; read out where it is.
    expect(page.get_by_text("Requeued 3 messages.")).to_have_count(1)
    expect(page.locator("#flash .flash")).to_have_count(0)
    expect(note).to_have_attribute("role", "status")
    expect(note).to_be_focused()
    expect(note).to_be_in_viewport()
    # Just above the bar, whose buttons stay on one line.
    assert bar.locator("[data-feedback]").count() == 0
    assert page.evaluate(
        "() => document.querySelector('[data-feedback]').nextElementSibling.matches('.bulk')"
    )
    assert bar.bounding_box()["height"] == height  # type: ignore[index]
    shot(page, "edges-answer-above-the-bulk-bar-1280")
    assert page.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [1440, 390])
def test_no_answer_covers_a_control_after_actions_in_a_row(
    console, settings, page_as, admin, rsmq: RedisSMQ, width: int
) -> None:
    """Stacked answers used to float over "Delete queue" for 8 s: after one action after
    another, every control is still where a click reaches it."""
    settings.RSMQ_REFRESH_SECONDS = 0
    rsmq.create_queue("jobs")
    page = page_as(admin, viewport={"width": width, "height": 800})
    page.goto(f"{console}/q/jobs/")
    for i in range(3):
        rsmq.send_messages("jobs", ["a", "b"])
        page.fill("#id_body", f"m{i}")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.locator("[data-feedback]")).to_contain_text("Sent message")
        page.fill("#id_purge-confirm", "jobs")
        page.get_by_role("button", name="Purge queue").click()
        expect(page.locator("[data-feedback]")).to_contain_text("Purged 3 messages from jobs.")
        assert page.evaluate(COVERED) == []
    delete = page.get_by_role("button", name="Delete queue")
    delete.scroll_into_view_if_needed()
    at = delete.bounding_box()
    assert at is not None
    hit = page.evaluate(
        "([x, y]) => document.elementFromPoint(x, y).closest('button')?.textContent",
        [at["x"] + at["width"] / 2, at["y"] + at["height"] / 2],
    )
    assert hit == "Delete queue"
    assert page.evaluate(COVERED) == []


def test_created_queue_answer_links_to_the_queue(console, settings, page_as, admin) -> None:
    settings.RSMQ_REFRESH_SECONDS = 0
    page = page_as(admin)
    page.goto(f"{console}/")
    page.locator("summary", has_text="Create queue").click()
    page.fill("#id_name", "invoices")
    page.fill("#id_vt", "2m")
    page.get_by_role("button", name="Create").click()
    note = page.locator("[data-feedback]")
    expect(note).to_have_text("Created queue invoices.")
    note.get_by_role("link", name="invoices").click()
    expect(page).to_have_url(re.compile(re.escape(f"{console}/q/invoices/") + "$"))
    expect(page.locator("#id_vt")).to_have_value("2m")
    assert page.errors == []  # type: ignore[attr-defined]


# -- visibility in s / min / h ------------------------------------------------------------------


def test_visibility_is_typed_with_a_unit_and_a_bad_one_names_the_range(
    console, settings, page_as, admin, rsmq: RedisSMQ
) -> None:
    settings.RSMQ_REFRESH_SECONDS = 0
    rsmq.create_queue("jobs")
    mid = rsmq.send_message("jobs", "x")
    page = page_as(admin)
    page.goto(f"{console}/q/jobs/")
    page.fill("#id_vt", "1h30m")
    page.fill("#id_delay", "90s")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("[data-feedback]")).to_contain_text("Saved: vt 5400 s, delay 90 s")
    a = rsmq.get_queue_attributes("jobs")
    assert (a.vt, a.delay) == (5400, 90)
    expect(page.locator("#id_vt")).to_have_value("90m")

    page.fill("#id_vt", "5 weeks")
    page.get_by_role("button", name="Save", exact=True).click()
    error = page.locator("#id_vt ~ .error")
    expect(error).to_contain_text("vt must be seconds (90) or a number with a unit")
    expect(error).to_contain_text("between 0 and 9999999 s (115 d)")
    expect(page.locator("#id_vt")).to_be_focused()
    assert rsmq.get_queue_attributes("jobs").vt == 5400

    page.goto(f"{console}/q/jobs/m/{mid}/")
    page.fill("#id_vt", "2h")
    page.get_by_role("button", name="Change visibility").click()
    expect(page.locator("[data-feedback]")).to_have_text("Visible again in 7200 s.")
    in_two_hours = time.time() * 1000 + 7_200_000
    assert abs(rsmq.get_message("jobs", mid).visible_at - in_two_hours) < 60_000
    shot(page, "edges-message-visibility-1440-light")
    assert page.errors == []  # type: ignore[attr-defined]


# -- the audit log by time range ----------------------------------------------------------------


def test_the_audit_log_is_filtered_by_a_time_range_kept_in_the_url(
    settings, page_as, admin
) -> None:
    day = dt.datetime(2026, 11, 25, tzinfo=dt.UTC)
    AuditEntry.objects.bulk_create(
        AuditEntry(username="otto", queue="q1", action=f"a{m:04d}", outcome="ok",
                   at=day + dt.timedelta(minutes=m))
        for m in range(0, 24 * 60, 10)
    )  # fmt: skip
    page = page_as(admin)
    page.goto("/audit/")
    page.fill("input[name=from]", "2026-11-25T10:00")
    page.fill("input[name=to]", "2026-11-25T19:59")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"from=2026-11-25T10%3A00.*to=2026-11-25T19%3A59"))
    expect(page.locator(".pagination")).to_contain_text("Page 1 of 2 · 60 in all")
    first = page.locator("table.audit tbody tr td time").first  # newest first, zone said
    expect(first).to_have_attribute("title", "2026-11-25 19:50:00.000 UTC")
    page.get_by_role("link", name="Next →").click()
    expect(page.locator("table.audit tbody tr")).to_have_count(10)
    expect(page.locator("table.audit tbody tr td").last.locator("..")).to_contain_text("a0600")
    expect(page.locator("input[name=from]")).to_have_value("2026-11-25T10:00")
    shot(page, "edges-audit-by-time-1440-light")

    page.goto("/audit/?from=2026-11-25T10:00&to=2026-11-25T09:00")
    expect(page.locator("[data-filter-error]")).to_have_text("to must not be before from")
    assert page.errors == []  # type: ignore[attr-defined]


# -- absolute times say their zone -------------------------------------------------------------

TIMES = """() => Array.from(document.querySelectorAll("main time")).map((t) => [
  t.textContent.trim(), t.getAttribute("title") || ""])"""
RELATIVE = re.compile(r"^(now|in .+|.+ ago)$")
ZONED = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d(\.\d{3})?)? UTC$")


def test_every_time_on_every_page_says_its_zone(page_as, world, admin) -> None:
    page = page_as(admin)
    bad: dict[str, list] = {}
    seen = 0
    for name, path in world.items():
        page.goto(path)
        for text, title in page.evaluate(TIMES):
            seen += 1
            relative_and_zoned = RELATIVE.match(text) and ZONED.search(title)
            if not (relative_and_zoned or ZONED.search(text)):
                bad.setdefault(name, []).append((text, title))
    assert seen > 20
    assert bad == {}


def test_a_refresh_answered_after_an_action_replaced_its_part_logs_no_error(
    console, make_user, page_as, rsmq: RedisSMQ
) -> None:
    """A live refresh still on its way when an action's answer replaced the part it was
    for: its answer has nowhere to go (htmx said "oobErrorNoTarget #alert" in the console)
    and is dropped, quietly."""
    rsmq.create_queue("jobs")
    rsmq.send_messages("jobs", ["a", "b"])
    user = make_user("operator")
    Preference.objects.create(user=user, refresh_seconds=2)
    page = page_as(user)
    said: list[str] = []
    page.on("console", lambda m: m.type in ("error", "warning") and said.append(m.text))
    held: list = []

    def hold(route) -> None:  # a refresh, answered only when the test says so
        if route.request.headers.get("hx-request") and route.request.method == "GET":
            held.append((route, route.fetch()))
        else:
            route.continue_()

    page.goto(f"{console}/q/jobs/")
    page.route(re.compile(r".*/q/jobs/(\?.*)?$"), hold)
    page.wait_for_timeout(2500)
    assert held, "no live refresh was sent"
    page.fill("#id_body", "c")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator("[data-feedback]")).to_contain_text("Sent message ")
    for route, response in held:
        route.fulfill(response=response)
    page.unroute(re.compile(r".*/q/jobs/(\?.*)?$"))
    page.wait_for_timeout(2500)  # the held answers arrive, and the next refresh runs
    expect(page.locator("[data-count=msgs]")).to_have_text("3")
    expect(page.locator("[data-feedback]")).to_contain_text("Sent message ")
    assert said == []
    assert page.errors == []  # type: ignore[attr-defined]
