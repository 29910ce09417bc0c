"""axe-core over every page of the console, light and dark, at desktop width and at 390 px:
no serious or critical violation.

axe-core is vendored for the tests only (tests/browser/vendor/axe-core-4.10.3.min.js,
MPL-2.0, npm's axe-core@4.10.3; never served by the console). It is injected into each
page by Playwright (the context bypasses the Content-Security-Policy for that alone).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from dashboard.models import Preference
from dashboard.triage import as_of
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

# The browser, the users and the logged-in pages of the main browser module.
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe-core-4.10.3.min.js"
MODES = [
    pytest.param("light", 1440, id="light"),
    pytest.param("dark", 1440, id="dark"),
    pytest.param("light", 390, id="light-390px"),
    pytest.param("dark", 390, id="dark-390px"),
]
BAD = ("serious", "critical")


def violations(page: Page) -> list[str]:
    """axe's serious and critical violations on the page, one line each."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} — "
        + "; ".join(json.dumps(n["target"]) for n in v["nodes"][:5])
        for v in found
        if v["impact"] in BAD
    ]


@pytest.fixture
def pages(console, settings, rsmq: RedisSMQ, lake: Path) -> dict[str, str]:
    """Every page of the console, with something on it: a queue with messages in every
    state and a dead-letter queue, a message, the audit log with a row."""
    settings.RSMQ_REFRESH_SECONDS = 0  # no refresh swapping the page under axe
    rsmq.create_queue("orders")
    rsmq.create_queue("orders-dlq")
    rsmq.set_dead_letter_policy("orders", "orders-dlq", 3)
    ids = rsmq.send_messages("orders", [json.dumps({"order": i}) for i in range(8)])
    rsmq.receive_messages("orders", 3, vt=3600)
    rsmq.send_messages("orders", ["later"], delay=3600)
    rsmq.send_messages("orders-dlq", ["dead"])
    rsmq.record_failure("orders", ids[0], ValueError("order 0 has no customer"))
    take_snapshot()  # the pages as of a past time (issue 31) show it
    then = as_of.iso(round(time.time() * 1000) + 1000)[:19]
    return {
        "overview": f"{console}/",
        "queue": f"{console}/q/orders/",
        "queue, in flight": f"{console}/q/orders/?state=inflight",
        "dead-letter queue": f"{console}/q/orders-dlq/",
        "message": f"{console}/q/orders/m/{ids[-1]}/",
        "audit": "/audit/",
        "404": f"{console}/q/nope/",
        # Issue 21's pages (the session's Redis has no persistence: its banner shows too).
        "redis": "/redis/default/",
        "incidents": "/incidents/?range=1h",
        "owners": "/owners/",
        # Issue 22: every page of the header, and the Failing view (a group with its retry /
        # delete forms; a dead-letter queue's)
        "alerts": "/alerts/",
        "tokens": "/tokens/",
        "failing": f"{console}/q/orders/failing/",
        "dead-letter queue, failing": f"{console}/q/orders-dlq/failing/",
        # Issue 31: the pages as of a past time, and one before the oldest snapshot kept
        "overview, as of": f"{console}/?as_of={then}",
        "queue, as of": f"{console}/q/orders/?as_of={then}",
        "incidents, as of": f"/incidents/?as_of={then}&range=1h",
        "overview, before retention": f"{console}/?as_of=2020-01-01T00:00",
    }


@pytest.fixture
def admin(make_user):
    user = make_user("admin")
    Preference.objects.create(user=user, refresh_seconds=0)
    return user


@pytest.fixture
def contexts(browser: Browser, live_server) -> Iterator[list]:
    made: list = []
    yield made
    for ctx in made:
        ctx.close()


@pytest.mark.parametrize(("scheme", "width"), MODES)
def test_no_page_has_a_serious_or_critical_violation(
    browser: Browser, live_server, contexts, pages, admin, scheme: str, width: int
) -> None:
    from django.test import Client

    ctx = browser.new_context(
        base_url=live_server.url,
        viewport={"width": width, "height": 900},
        color_scheme=scheme,  # type: ignore[arg-type]
        bypass_csp=True,  # to inject axe; the console's own pages are unchanged
    )
    contexts.append(ctx)
    page = ctx.new_page()
    found: dict[str, list[str]] = {}

    page.goto("/login/")  # logged out: the login page
    found["login"] = violations(page)

    client = Client()
    client.force_login(admin)
    client.post(pages["queue"] + "act/", {"action": "send", "body": "x"})  # an audit row
    ctx.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    for name, path in pages.items():
        response = page.goto(path)
        assert response is not None and response.status == (404 if name == "404" else 200)
        found[name] = violations(page)
        # The preferences (the header's live-refresh control) are on every page.
        assert page.locator("form.refresh select").count() == 1
        if width <= 390:
            assert page.evaluate("document.documentElement.scrollWidth") <= width, name
    bad = [f"{page_name}: {line}" for page_name, lines in found.items() for line in lines]
    assert bad == [], "\n".join(bad)
