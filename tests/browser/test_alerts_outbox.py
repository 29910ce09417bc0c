"""/alerts/ with a rule and notifications waiting and given up (issue 23): at 390 px,
light and dark, the page is no wider than the phone (its tables scroll in regions of
their own, the admin's long delivery errors wrap) and axe finds no serious or critical
violation; the viewer's page has no error text at all."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from django.utils import timezone

from dashboard.models import AlertRule, Notification, Preference

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

AXE = Path(__file__).parent / "vendor" / "axe-core-4.10.3.min.js"
LONG_URL = "https://hooks.internal.example/" + "a" * 120
ERRORS = [
    (None, f"could not reach the receiver: Connection refused ({LONG_URL})"),
    (timezone.now(), "refused: [::ffff:169.254.169.254] is 169.254.169.254, which is"
     " link-local; allow it with RSMQ_OUTBOUND_ALLOW (gave up: this can't succeed as it is)"),
]  # fmt: skip


@pytest.fixture
def outbox(console, ns: str) -> None:
    AlertRule.objects.create(
        name="backlog", connection="default", namespace=ns, queue="", pattern="orders-*",
        metric="visible", threshold=100, webhook_url=LONG_URL, slack_url=LONG_URL,
        emails="ops@example.com", webhook_secret="k",
    )  # fmt: skip
    for i, (gave_up, error) in enumerate(ERRORS):
        Notification.objects.create(
            key=f"k{i}", channel="webhook", target=LONG_URL, payload={"rule": {"name": "backlog"}},
            attempts=3, next_attempt=timezone.now() + dt.timedelta(minutes=5), last_error=error,
            gave_up=gave_up,
        )  # fmt: skip


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_outbox_fits_a_phone_and_errors_show_to_admins_only(
    page_as, make_user, outbox, scheme: str
) -> None:
    for role, shown in (("admin", True), ("viewer", False)):
        user = make_user(role)
        Preference.objects.create(user=user, refresh_seconds=0)
        page = page_as(user, viewport={"width": 390, "height": 844}, color_scheme=scheme,
                       bypass_csp=True)  # fmt: skip
        assert page.goto("/alerts/").status == 200  # type: ignore[union-attr]
        text = page.inner_text("main")
        assert "Notifications waiting: 1" in text and "Notifications given up: 1" in text
        assert ("link-local" in text) is shown and ("Connection refused" in text) is shown
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.add_script_tag(path=str(AXE))
        found = page.evaluate("async () => (await axe.run(document)).violations")
        bad = [
            f"{v['id']}: {json.dumps([n['target'] for n in v['nodes'][:3]])}"
            for v in found
            if v["impact"] in ("serious", "critical")
        ]
        assert bad == [], bad
        assert page.errors == []  # type: ignore[attr-defined]
        user.delete()
