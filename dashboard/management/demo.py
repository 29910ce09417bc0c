"""Demo queues with messages in every state, for a first look at the console."""

from __future__ import annotations

import json
import random

from queues import RedisSMQ


def seed(rsmq: RedisSMQ) -> list[str]:
    """Create the demo queues unless they exist; returns the names of those created."""
    created: list[str] = []
    existing = set(rsmq.list_queues())
    rng = random.Random(7)

    def queue(name: str, **attrs: int) -> bool:
        if name in existing:
            return False
        rsmq.create_queue(name, **attrs)
        created.append(name)
        return True

    if queue("emails", vt=60):
        rsmq.send_messages(
            "emails",
            [
                json.dumps({"to": f"user{i}@example.com", "template": "welcome", "locale": "en"})
                for i in range(240)
            ],
        )
        rsmq.receive_messages("emails", 12, vt=600)  # in flight

    if queue("orders", vt=30, delay=0):
        rsmq.send_messages(
            "orders",
            [
                json.dumps(
                    {"order_id": 10_000 + i, "sku": f"SKU-{rng.randint(100, 999)}",
                     "qty": rng.randint(1, 5), "total": round(rng.uniform(5, 500), 2)}
                )
                for i in range(60)
            ],
        )  # fmt: skip
        rsmq.receive_messages("orders", 8, vt=900)  # in flight
        rsmq.send_messages(
            "orders", [json.dumps({"order_id": 20_000 + i, "scheduled": True}) for i in range(15)],
            delay=3600,
        )  # fmt: skip

    if queue("webhooks", vt=45):
        hook = '{{"url": "https://hooks.example.com/{}", "event": "invoice.paid"}}'
        # Received four times and never deleted: the poison / dead-letter candidates.
        # While they are the queue's only messages, every receive takes all five.
        rsmq.send_messages("webhooks", [hook.format(i) for i in range(5)])
        for _ in range(4):
            rsmq.receive_messages("webhooks", 5, vt=0)
        rsmq.send_messages("webhooks", [hook.format(i) for i in range(5, 20)])
        rsmq.receive_messages("webhooks", 3, vt=1200)  # in flight, the 5th time for some

    if queue("reports", vt=300, delay=600):
        rsmq.send_messages("reports", [f"nightly report #{i}" for i in range(10)])  # delayed

    if queue("thumbnails", vt=20, maxsize=2048):
        rsmq.send_messages("thumbnails", ["resize:" + "x" * 64 for _ in range(5)])
        rsmq.pop_messages("thumbnails", 5)  # all done: an idle, empty queue with totals

    return created
