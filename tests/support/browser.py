"""What the browser tests share besides their fixtures (those are in conftest.py): the
chromium they drive, the roles' users, and the realistic queues of the README's
screenshots (test_ux_screenshots.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from django.contrib.auth.models import Group, Permission

from queues import RedisSMQ

if TYPE_CHECKING:
    from playwright.sync_api import Dialog, Page

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ROLES = {
    "observer": ["observe_console"],
    "viewer": ["observe_console", "view_console"],
    "operator": ["observe_console", "view_console", "operate_messages"],
    "admin": ["observe_console", "view_console", "operate_messages", "administer_queues"],
}
PASSWORD = "correct horse battery staple"


def accept_dialogs(page: Page) -> list[str]:
    """Accept every confirmation the page asks (``data-confirm``); what it asked, in order."""
    asked: list[str] = []

    def answer(d: Dialog) -> None:
        asked.append(d.message)
        d.accept()

    page.on("dialog", answer)
    return asked


def role_group(role: str) -> Group:
    """The role's group (tests/support/roles.py keeps the roles through flushes)."""
    group = Group.objects.get(name=role)
    perms = Permission.objects.filter(content_type__app_label="dashboard", codename__in=ROLES[role])
    assert set(group.permissions.all()) == set(perms) and perms.count() == len(ROLES[role])
    return group


def in_flight(rsmq: RedisSMQ, qname: str, body: str, rc: int, vt: int) -> str:
    """Send a message and receive it ``rc`` times; it stays in flight for ``vt`` seconds.

    Only call while the queue has no other visible message, so each receive gets this one.
    """
    mid = rsmq.send_message(qname, body)
    for _ in range(rc - 1):
        got = rsmq.receive_message(qname, vt=0)
        assert got is not None and got.id == mid
    got = rsmq.receive_message(qname, vt=vt)
    assert got is not None and got.id == mid and got.rc == rc
    return mid


def seed_realistic(rsmq: RedisSMQ) -> dict[str, str]:
    """Queues with messages in every state, payloads as real services send them."""
    rsmq.create_queue("orders", vt=30)
    inflight = {}
    for i, rc in enumerate((1, 1, 2, 3, 4)):
        body = {"order_id": 10_230 + i, "customer": f"cust_{4811 + i}", "sku": "SKU-3341",
                "qty": 1 + i % 3, "total": round(19.9 * (1 + i), 2), "currency": "EUR"}  # fmt: skip
        inflight[rc] = in_flight(rsmq, "orders", json.dumps(body), rc=rc, vt=60 + 120 * i)
    rsmq.send_messages(
        "orders",
        [
            json.dumps(
                {
                    "order_id": 10_240 + i,
                    "customer": f"cust_{5100 + 7 * i}",
                    "sku": f"SKU-{1200 + 37 * i}",
                    "qty": 1 + i % 4,
                    "total": round(12.5 + 8.75 * i, 2),
                    "currency": "EUR",
                }
            )  # fmt: skip
            for i in range(12)
        ],
    )
    rsmq.send_messages(
        "orders",
        [
            json.dumps({"order_id": 10_300 + i, "action": "capture_payment", "after": "shipping"})
            for i in range(4)
        ],  # fmt: skip
        delay=900,
    )

    rsmq.create_queue("emails", vt=60)
    rsmq.send_messages(
        "emails",
        [
            json.dumps({"to": f"{name}@example.com", "template": template, "locale": "en"})
            for name, template in [
                ("ana", "welcome"),
                ("ben", "password_reset"),
                ("chloe", "receipt"),
                ("dev", "welcome"),
                ("emma", "shipping_update"),
                ("farid", "receipt"),
                ("greta", "weekly_digest"),
                ("hiro", "welcome"),
            ]
            * 6
        ],  # fmt: skip
    )
    rsmq.receive_messages("emails", 6, vt=300)
    rsmq.send_messages(
        "emails",
        [json.dumps({"to": "ops@example.com", "template": "weekly_digest"})] * 3,
        delay=3600,
    )

    rsmq.create_queue("webhooks", vt=45, maxsize=-1)
    for i, rc in enumerate((2, 3, 4)):
        in_flight(rsmq, "webhooks", json.dumps({"url": f"https://hooks.example.com/h/{i}",
                                                "event": "order.paid", "attempt": rc}),
                  rc=rc, vt=600)  # fmt: skip
    rsmq.send_messages(
        "webhooks",
        [
            json.dumps({"url": f"https://hooks.example.com/h/{i}", "event": "order.created"})
            for i in range(3, 9)
        ],  # fmt: skip
    )

    rsmq.create_queue("reports", vt=600, delay=3600)
    rsmq.send_messages("reports", [f"nightly-sales {d}" for d in ("2024-05-01", "2024-05-02")])
    rsmq.create_queue("thumbnails", vt=20, maxsize=2048)
    rsmq.send_messages("thumbnails", [f"resize:img_{i}.jpg:320x240" for i in range(40)])
    rsmq.pop_messages("thumbnails", 40)  # an idle queue: empty, with totals
    return inflight
