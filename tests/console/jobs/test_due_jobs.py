"""Deliver now, shift and spread the delayed messages of a due window, as jobs (a real
Celery worker in this process): counted, confirmed with the count, run; the job's API
answer carries its Undo's token once it kept one, and the Undo puts every time back."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry, BulkJob
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

HOUR = 3_600_000


class Api:
    def __init__(self, role: str) -> None:
        _, token = tokens.mint(f"bot-{role}", role, "test", 10_000)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", enforce_csrf_checks=True)

    def __call__(self, method: str, path: str, body: Any = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        self.response = getattr(self.client, method.lower())("/api/" + path, **kwargs)
        self.status = self.response.status_code
        return self.response.json()


def until(api: Api, path: str, states: set[str], timeout: float = 30) -> dict[str, Any]:
    end = time.monotonic() + timeout
    while True:
        job = api("GET", path)
        if job["state"] in states:
            return job
        assert time.monotonic() < end, job
        time.sleep(0.05)


def server_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) // 1000


@pytest.fixture
def spike(console, rsmq: RedisSMQ, r: redis.Redis) -> tuple[list[str], int]:
    """q1: 300 delayed messages due in one minute two hours ahead, 50 due later, 20 in
    flight (received: never rescheduled)."""
    rsmq.create_queue("q1")
    now = server_ms(r)
    at = now // HOUR * HOUR + 2 * HOUR
    ids = rsmq.send_messages("q1", ["m"] * 300, delay=60)
    r.zadd(f"{console.ns}:q1", {i: at + k * 100 for k, i in enumerate(ids)})
    later = rsmq.send_messages("q1", ["m"] * 50, delay=60)
    r.zadd(f"{console.ns}:q1", dict.fromkeys(later, at + 5 * HOUR))
    rsmq.send_messages("q1", ["busy"] * 20)
    rsmq.receive_messages("q1", 20, vt=3 * 3600)
    return ids, at


def test_a_spread_job_moves_the_window_and_its_undo_token_puts_it_back(
    console, spike: tuple[list[str], int], r: redis.Redis, worker
) -> None:
    ids, at = spike
    before = dict(r.zrange(f"{console.ns}:q1", 0, -1, withscores=True))
    api = Api("operator")
    body = {"kind": "spread", "due_from": at, "due_until": at + 60_000,
            "spread_from": at + HOUR, "spread_until": at + 2 * HOUR, "rate": 1000}  # fmt: skip
    job = api("POST", "queues/q1/jobs/", body)
    assert api.status == 201, job
    path = f"queues/q1/jobs/{job['id']}/"
    job = until(api, path, {"counted"})
    assert job["matched"] == 300 and job["undo"] is None
    assert "spread evenly over" in job["what"]
    api("POST", path + "confirm/", {"confirm": "q1"})
    job = until(api, path, {"done", "failed"})
    assert (job["state"], job["done"], job["changed"]) == ("done", 300, 0)
    moved = dict(r.zrange(f"{console.ns}:q1", 0, -1, withscores=True))
    assert all(at + HOUR <= moved[i] < at + 2 * HOUR for i in ids)
    token = job["undo"]
    assert token and len(token) == 32
    undone = Api("admin")("POST", f"undo/{token}/")
    assert undone["restored"] == 300
    assert dict(r.zrange(f"{console.ns}:q1", 0, -1, withscores=True)) == before
    end = AuditEntry.objects.filter(action="spread_matches", params__step="end").get()
    assert end.count == 300


def test_deliver_now_is_the_operators_and_touches_delayed_messages_only(
    console, spike: tuple[list[str], int], rsmq: RedisSMQ, worker
) -> None:
    ids, at = spike
    api = Api("operator")
    job = api("POST", "queues/q1/jobs/", {"kind": "deliver", "due_from": at - 1,
                                          "due_until": at + 10 * HOUR})  # fmt: skip
    path = f"queues/q1/jobs/{job['id']}/"
    assert until(api, path, {"counted"})["matched"] == 350  # not the 20 in flight
    api("POST", path + "confirm/", {"confirm": "q1"})
    job = until(api, path, {"done", "failed"})
    assert job["done"] == 350
    stats = rsmq.queue_stats(["q1"])[0]
    assert (stats.visible, stats.inflight, stats.delayed) == (350, 20, 0)
    assert job["undo"]


def test_a_viewer_may_not_start_one(console, spike: tuple[list[str], int]) -> None:
    api = Api("viewer")
    api("POST", "queues/q1/jobs/", {"kind": "deliver"})
    assert api.status == 403
    assert not BulkJob.objects.exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "shift"}, "shift"),
        ({"kind": "shift", "shift": "later"}, "shift"),
        ({"kind": "spread", "spread_from": 1}, "spread_from"),
        ({"kind": "deliver", "state": "visible"}, "state"),
        ({"kind": "deliver", "due_from": "yesterday"}, "due_from"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    console, spike: tuple[list[str], int], body: dict[str, Any], field: str
) -> None:
    api = Api("operator")
    answer = api("POST", "queues/q1/jobs/", body)
    assert api.status == 400 and answer["error"].startswith(field), answer
    assert not BulkJob.objects.exists()


def test_the_due_card_starts_a_job_from_its_window(
    console, spike: tuple[list[str], int], operator: Client
) -> None:
    ids, at = spike
    page = operator.get(console.queue("q1", "?due=hour")).content.decode()
    assert "300 due" in page and "data-due-shift" in page
    response = operator.post(
        console.queue("q1", "jobs/"),
        {"kind": "shift", "state": "delayed", "due_from": at, "due_until": at + 60_000,
         "shift": "30m"},
    )  # fmt: skip
    assert response.status_code == 302
    job = BulkJob.objects.get()
    assert (job.kind, job.params["shift_ms"], job.filter) == (
        "shift",
        1_800_000,
        {"state": "delayed"},
    )
