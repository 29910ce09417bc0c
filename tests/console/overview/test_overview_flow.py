"""The overview's rows: a paused or throttled queue stands out (a badge, its reason on
hover) and a queue's peak of what is coming due is called out."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

from dashboard.triage import due
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_a_paused_queue_has_a_badge_in_its_row(console, rsmq: RedisSMQ, viewer: Client) -> None:
    for q in ("q1", "q2", "q3"):
        rsmq.create_queue(q)
    rsmq.pause_queue("q1", reason="deploy 42", by="ann")
    rsmq.throttle_queue("q2", 50)
    page = viewer.get(console.overview()).content.decode()
    assert page.count("data-flow-badge=") == 2
    assert 'data-flow-badge="paused"' in page and "(deploy 42); set by ann" in page
    assert 'data-flow-badge="throttled">throttled 50/s' in page


def test_the_peak_of_what_is_coming_due_is_called_out(
    console, rsmq: RedisSMQ, viewer: Client, r: redis.Redis
) -> None:
    rsmq.create_queue("q1")
    ids = rsmq.send_messages("q1", ["m"] * 30, delay=60)
    sec, _ = r.time()
    at = (int(sec) // 3600 + 3) * 3_600_000  # three hours ahead, on the hour
    r.zadd(f"{console.ns}:q1", {i: at + k for k, i in enumerate(ids)})
    assert "data-due-peak-row" not in viewer.get(console.overview()).content.decode()
    # what the snapshot task does after each run
    assert due.refresh_peaks(rsmq, rsmq.queue_stats()) == 1
    page = viewer.get(console.overview()).content.decode()
    assert "data-due-peak-row" in page and "30 due " in page
