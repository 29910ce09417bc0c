"""The Failing view in a real browser, as an operator and an admin would use it at 3 a.m.:
the groups with their error lines, first and last failure; retry a dead group (typed
confirmation, its count), delete a retrying one; a dead-letter queue's page saying what
it is; a trace without newlines wrapped. At 390 px nothing scrolls sideways, light and
dark, and the browser logs no error (CSP included). ``RSMQ_BROWSER_SHOTS=DIR`` saves
their screenshots to DIR."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.browser import CHROMIUM

from dashboard.models import AuditEntry
from queues import RedisSMQ

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)",
        allow_module_level=True,
    )

from playwright.sync_api import ConsoleMessage, Page, expect  # noqa: E402  (after the skip)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_LINE = "card declined by the issuer, reference " + "X" * 180  # no space to break at
TRACE = 'Traceback (most recent call last): File "/srv/app/payments/handlers.py", ' * 8


@pytest.fixture
def failures(console: str, settings, rsmq: RedisSMQ) -> dict[str, list[str]]:
    """payments dead-letters to dlq after 1 receive: 3 dead ValueErrors (a long error line,
    a trace without newlines) and 2 KeyErrors still retrying."""
    settings.RSMQ_REFRESH_SECONDS = 0
    rsmq.create_queue("payments")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("payments", "dlq", 1)
    dead = rsmq.send_messages("payments", ["d1", "d2", "d3"])
    for mid in dead:
        rsmq.receive_message("payments", vt=0)
        rsmq.record_failure(
            "payments", mid, error_type="ValueError", message=LONG_LINE, trace=TRACE
        )
    assert rsmq.receive_messages("payments", 10) == []  # all three dead-lettered
    retrying = rsmq.send_messages("payments", ["k1", "k2"])
    for mid in retrying:
        rsmq.record_failure("payments", mid, KeyError("sku"), vt=600)
    return {"dead": dead, "retrying": retrying}


def watch_console(page: Page) -> list[str]:
    """The browser console's errors (a CSP violation is one), but for the 422 a refused
    form answers with (the page shows why)."""
    errors: list[str] = []

    def seen(m: ConsoleMessage) -> None:
        if m.type == "error" and "status of 422" not in m.text:
            errors.append(m.text)

    page.on("console", seen)
    return errors


SHOTS = os.environ.get("RSMQ_BROWSER_SHOTS", "")


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True, caret="initial")


def fits(page: Page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize(("scheme", "width"), [("light", 390), ("dark", 390), ("light", 1440)])
def test_an_operator_retries_a_dead_group_and_an_admin_deletes_a_retrying_one(
    console: str, failures, make_user, page_as, rsmq: RedisSMQ, scheme: str, width: int
) -> None:
    page = page_as(make_user("operator"), viewport={"width": width, "height": 900},
                   color_scheme=scheme)  # fmt: skip
    errors = watch_console(page)
    page.goto(f"{console}/q/payments/failing/")

    dead = page.locator('[data-section="dead"] [data-group="dead"]')
    expect(dead).to_have_count(1)
    expect(dead.locator("[data-group-type]")).to_have_text("ValueError")
    expect(dead.locator("[data-group-count]")).to_have_text("3")
    expect(dead.locator("[data-error-lines]")).to_contain_text(LONG_LINE)
    expect(dead.locator("[data-error-lines]")).to_contain_text("× 3")
    expect(dead.locator("[data-first-seen] time")).to_have_count(1)
    expect(dead.locator("[data-last-seen] time")).to_have_count(1)
    expect(dead.locator(".group-examples a")).to_have_count(3)
    expect(page.locator('[data-section="retry"] [data-group-type]')).to_have_text("KeyError")
    fits(page, width)

    dead.locator("summary").click()
    form = dead.locator('[data-group-form="retry"]')
    expect(dead.locator('[data-group-form="delete"]')).to_have_count(0)  # an operator's: retry
    form.locator('input[name="confirm"]').fill("payments")
    fits(page, width)
    shot(page, f"failing-{width}-{scheme}")
    form.get_by_role("button", name="Retry all 3 now").click()

    # the answer, once, where it is put (next to what was pressed)
    expect(
        page.get_by_text(
            "Sent 3 dead letters (ValueError) from dlq back to the queue each came from"
        )
    ).to_have_count(1)
    expect(page.locator('[data-section="dead"] [data-group]')).to_have_count(0)
    assert rsmq.get_queue_attributes("dlq").msgs == 0
    assert sorted(m.id for m in rsmq.list_messages("payments", state="visible").items) == sorted(
        failures["dead"]
    )
    fits(page, width)

    admin = page_as(make_user("admin"), viewport={"width": width, "height": 900},
                    color_scheme=scheme)  # fmt: skip
    admin_errors = watch_console(admin)
    admin.goto(f"{console}/q/payments/failing/")
    group = admin.locator('[data-group="retry"][data-type="KeyError"]')
    group.locator("summary").click()
    delete = group.locator('[data-group-form="delete"]')
    delete.locator('input[name="confirm"]').fill("paymentz")  # a typo: refused, nothing goes
    delete.get_by_role("button", name="Delete 2").click()
    expect(admin.locator("[data-group-errors]")).to_contain_text("Type payments exactly")
    shot(admin, f"failing-refused-{width}-{scheme}")
    assert rsmq.get_queue_attributes("payments").msgs == 5
    group = admin.locator('[data-group="retry"][data-type="KeyError"]')
    expect(group.locator("details")).to_have_attribute("open", "")  # its form stays open
    delete = group.locator('[data-group-form="delete"]')
    delete.locator('input[name="confirm"]').fill("payments")
    delete.get_by_role("button", name="Delete 2").click()

    expect(admin.get_by_text("Deleted 2 messages (KeyError) from payments.")).to_have_count(1)
    assert rsmq.get_queue_attributes("payments").msgs == 3
    fits(admin, width)
    assert [(r.action, r.outcome, r.count) for r in AuditEntry.objects.order_by("id")] == [
        ("retry_group", "ok", 3), ("delete_group", "invalid", None), ("delete_group", "ok", 2),
    ]  # fmt: skip
    assert errors == [] and admin_errors == []
    assert page.errors == [] and admin.errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_dead_letter_queue_and_a_long_trace_fit_a_phone(
    console: str, failures, make_user, page_as, scheme: str
) -> None:
    page = page_as(make_user("viewer"), viewport={"width": 390, "height": 900},
                   color_scheme=scheme)  # fmt: skip
    errors = watch_console(page)

    page.goto(f"{console}/q/dlq/")
    expect(page.locator("[data-dlq-head]")).to_contain_text("The dead-letter queue of payments")
    expect(page.locator("[data-dlq-of]")).to_contain_text("A dead-letter queue of payments")
    expect(page.locator("[data-dead-letters]")).to_have_text("3")
    expect(page.locator("[data-why-dead]")).to_contain_text("ValueError × 3")
    expect(page.locator("#dead-letter")).not_to_contain_text("No dead-letter policy")
    fits(page, 390)
    shot(page, f"dlq-390-{scheme}")

    page.goto(f"{console}/q/dlq/failing/")
    expect(page.locator('[data-section="retry"]')).to_have_count(0)
    expect(page.locator('[data-section="dead"] h2')).to_contain_text("Dead letters")
    fits(page, 390)

    page.goto(f"{console}/q/dlq/m/{failures['dead'][0]}/")
    trace = page.locator("pre.trace").first
    expect(trace).to_be_visible()
    assert trace.evaluate("e => e.scrollWidth <= e.clientWidth")  # wrapped, not cut off
    fits(page, 390)
    shot(page, f"trace-390-{scheme}")
    assert errors == [] and page.errors == []  # type: ignore[attr-defined]
