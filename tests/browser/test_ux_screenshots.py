"""The README's screenshots (docs/screenshots/), from real data: ``RSMQ_SCREENSHOTS=1``.

Nothing drawn here is made up: the queues of support.browser.seed_realistic get real traffic
for a few minutes — producers sending in bursts, a worker receiving and deleting, some
messages failing until the dead-letter policy moves them — while the real snapshot task
(dashboard.snapshots.runs.take, what Celery beat runs) records them every two seconds. The
charts, sparklines, rates and the "needs attention" order are what that traffic left.
``RSMQ_SCREENSHOT_SECONDS`` sets how long the traffic runs (default 240).
"""

from __future__ import annotations

import json
import os
import random
import threading
import time

import pytest
from playwright.sync_api import expect
from support.browser import ROOT, seed_realistic

from dashboard.alerting import evaluate
from dashboard.models import AlertRule
from dashboard.triage import conditions
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
# The browser, the users and the logged-in pages of the main browser module.

SECONDS = float(os.environ.get("RSMQ_SCREENSHOT_SECONDS", "240"))


def traffic(url: str, ns: str, stop: threading.Event) -> None:
    """Producers and a worker, as a shop's services would run them, until ``stop``."""
    rng = random.Random(11)
    with RedisSMQ(url=url, ns=ns) as rsmq:
        started = time.monotonic()
        n = 0
        while not stop.is_set():
            elapsed = time.monotonic() - started
            # A morning rush on orders in the middle of the run: the worker falls behind.
            rush = SECONDS * 0.3 < elapsed < SECONDS * 0.6
            burst = rng.randint(4, 9) if rush else rng.randint(0, 3)
            orders = [
                {"order_id": 20_000 + n + i, "sku": f"SKU-{rng.randint(100, 999)}",
                 "qty": rng.randint(1, 4), "currency": "EUR"}
                for i in range(burst)
            ]  # fmt: skip
            if orders:
                rsmq.send_messages("orders", [json.dumps(o) for o in orders])
            n += burst
            if rng.random() < 0.5:
                rsmq.send_message(
                    "emails", json.dumps({"to": f"user{n}@example.com", "template": "receipt"})
                )
            if rng.random() < 0.3:
                rsmq.send_message(
                    "webhooks",
                    json.dumps({"url": "https://hooks.example.com/h/7", "event": "order.paid"}),
                )
            # The worker: takes a few orders; an order for a SKU ending in 7 fails every
            # time (not deleted, back after its vt) until the dead-letter policy takes it.
            for m in rsmq.receive_messages("orders", 2 if rush else 5, vt=2):
                if '7", "qty"' not in m.message:
                    rsmq.delete_message("orders", m.id)
            for m in rsmq.receive_messages("emails", 2, vt=30):
                rsmq.delete_message("emails", m.id)
            for m in rsmq.receive_messages("webhooks", 1, vt=5):
                if rng.random() < 0.7:
                    rsmq.delete_message("webhooks", m.id)
            stop.wait(0.5)


@pytest.mark.skipif(
    os.environ.get("RSMQ_SCREENSHOTS") != "1", reason="set RSMQ_SCREENSHOTS=1 to rewrite them"
)
def test_readme_screenshots_from_real_traffic(
    settings, lake, redis_url: str, make_user, page_as
) -> None:
    ns = "shop"  # a readable namespace in the header; emptied first, it is this test's own
    settings.RSMQ_CONNECTIONS = [
        {"name": "local", "url": redis_url, "namespaces": [ns], "environment": "staging"}
    ]
    settings.RSMQ_SNAPSHOT_INTERVAL = 2
    settings.RSMQ_BACKLOG_WINDOW = min(600, SECONDS / 3)
    settings.RSMQ_NO_CONSUMER_AFTER = min(300, SECONDS / 4)  # nothing consumes orders-dlq
    with RedisSMQ(url=redis_url, ns=ns) as rsmq:
        for q in rsmq.list_queues():
            rsmq.delete_queue(q)
        inflight = seed_realistic(rsmq)
        rsmq.create_queue("orders-dlq")
        rsmq.set_dead_letter_policy("orders", "orders-dlq", 4)
        stop = threading.Event()
        worker = threading.Thread(target=traffic, args=(redis_url, ns, stop), daemon=True)
        worker.start()
        try:
            end = time.monotonic() + SECONDS
            while time.monotonic() < end:
                take_snapshot()  # what Celery beat runs every RSMQ_SNAPSHOT_INTERVAL
                time.sleep(settings.RSMQ_SNAPSHOT_INTERVAL)
        finally:
            stop.set()
            worker.join()
        # An admin's rule on the consumers' state, notifying nobody but the console.
        AlertRule.objects.create(name="nobody consumes", connection="local", namespace=ns,
                                 pattern="*", metric="state:no_consumers")  # fmt: skip
        take_snapshot()
        evaluate.evaluate()
        conditions.refresh_alerts("local", ns)
        # The pages below take their time: not a "Snapshots stopped" banner meanwhile.
        settings.RSMQ_SNAPSHOT_INTERVAL = 30

        out = ROOT / "docs" / "screenshots"
        out.mkdir(parents=True, exist_ok=True)
        page = page_as(make_user("admin", "ana"), viewport={"width": 1440, "height": 900})
        page.goto(f"/c/local/{ns}/")
        expect(page.locator("table.queues tbody tr")).to_have_count(6)
        page.screenshot(path=str(out / "overview.png"), full_page=True)
        page.goto(f"/c/local/{ns}/q/orders/")
        expect(page.locator("#charts svg").first).to_be_visible()
        page.screenshot(path=str(out / "queue.png"), full_page=False)
        page.goto(f"/c/local/{ns}/q/orders/m/{inflight[3]}/")
        expect(page.locator("pre.body-full")).to_be_visible()
        page.screenshot(path=str(out / "message.png"), full_page=True)
        mobile = page_as(make_user("viewer", "ben"), viewport={"width": 390, "height": 844},
                         color_scheme="dark")  # fmt: skip
        take_snapshot()
        mobile.goto(f"/c/local/{ns}/")
        mobile.screenshot(path=str(out / "overview-390-dark.png"), full_page=False)
        # The overview in the other theme at each width (issue 21: the order, states, reasons).
        dark = page_as(make_user("viewer", "cai"), viewport={"width": 1440, "height": 900},
                       color_scheme="dark")  # fmt: skip
        take_snapshot()  # the last one minutes ago would say "Snapshots stopped"
        dark.goto(f"/c/local/{ns}/")
        dark.screenshot(path=str(out / "overview-1440-dark.png"), full_page=True)
        light = page_as(make_user("viewer", "dee"), viewport={"width": 390, "height": 844})
        take_snapshot()
        light.goto(f"/c/local/{ns}/")
        light.screenshot(path=str(out / "overview-390-light.png"), full_page=False)
        for q in rsmq.list_queues():
            rsmq.delete_queue(q)
    for name in ("overview", "queue", "message", "overview-390-dark", "overview-1440-dark",
                 "overview-390-light"):  # fmt: skip
        assert (out / f"{name}.png").stat().st_mtime > time.time() - 120
