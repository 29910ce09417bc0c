"""Act on every match through the API (a token; a real Celery worker in this process):
start (it counts), read, confirm with the queue's name, paced with a canary that stops
on bounce-back; roles; bad input a 400 naming the field, nothing changed."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry, BulkJob
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)


class Api:
    def __init__(self, role: str) -> None:
        self.row, token = tokens.mint(f"bot-{role}", role, "test", 10_000)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", enforce_csrf_checks=True)

    def __call__(self, method: str, path: str, body: Any = None) -> Any:
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs = {"data": json.dumps(body), "content_type": "application/json"}
        self.response = getattr(self.client, method.lower())("/api/queues/" + path, **kwargs)
        self.status = self.response.status_code
        return self.response.json()


@pytest.fixture
def dead(console, rsmq: RedisSMQ) -> list[str]:
    """q1 dead-letters into "dlq" after one receive: 100 dead letters there."""
    rsmq.create_queue("q1")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("q1", "dlq", 1)
    ids = rsmq.send_messages("q1", [f"job {i}" for i in range(100)])
    rsmq.receive_messages("q1", 100, vt=0)
    while rsmq.receive_messages("q1", 100, vt=0):
        pass
    return ids


def until(api: Api, path: str, states: set[str], timeout: float = 30) -> dict[str, Any]:
    end = time.monotonic() + timeout
    while True:
        job = api("GET", path)
        if job["state"] in states:
            return job
        assert time.monotonic() < end, job
        time.sleep(0.05)


def test_a_canary_redrive_that_stops_on_bounce_back(
    console, dead: list[str], rsmq: RedisSMQ, redis_url: str, worker
) -> None:
    api = Api("operator")
    job = api("POST", "dlq/jobs/", {"kind": "redrive", "state": "visible", "rate": 50,
                                     "canary": 10, "watch": 5, "max_bounce": 10})  # fmt: skip
    assert api.status == 201 and job["state"] == "counting"
    path = f"dlq/jobs/{job['id']}/"
    job = until(api, path, {"counted"})
    assert job["matched"] == 100
    assert "a canary of 10 first" in job["what"]

    consumer = RedisSMQ(url=redis_url, ns=console.ns)
    stop = threading.Event()

    def fail_everything() -> None:
        while not stop.is_set():
            if not consumer.receive_messages("q1", 100, vt=0):
                time.sleep(0.05)

    t = threading.Thread(target=fail_everything, daemon=True)
    t.start()
    try:
        assert api("POST", path + "confirm/", {"confirm": "dlq"})["state"] == "running"
        job = until(api, path, {"stopped", "done", "failed"})
    finally:
        stop.set()
        t.join(5)
        consumer.close()
    assert job["state"] == "stopped", job
    assert job["done"] == 10 and job["bounced"] > 1
    assert "came back to dlq" in job["note"]
    assert rsmq.get_queue_attributes("dlq").msgs >= 90
    end = AuditEntry.objects.get(action="redrive_matches", params__step="end")
    assert end.username == "token:bot-operator" and "stopped" in end.detail


def test_a_canary_that_stays_goes_on(console, dead: list[str], rsmq: RedisSMQ, worker) -> None:
    api = Api("operator")
    job = api("POST", "dlq/jobs/", {"kind": "redrive", "state": "visible", "rate": 200,
                                     "canary": 10, "watch": 1, "max_bounce": 10})  # fmt: skip
    path = f"dlq/jobs/{job['id']}/"
    until(api, path, {"counted"})
    api("POST", path + "confirm/", {"confirm": "dlq"})
    job = until(api, path, {"stopped", "done", "failed"})
    assert (job["state"], job["done"], job["bounced"]) == ("done", 100, 0)
    assert {rsmq.get_message("q1", i).rc for i in dead} == {0}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "redrive", "rate": 0}, "rate"),
        ({"kind": "redrive", "canary": 3}, "watch"),
        ({"kind": "nuke"}, "kind"),
        ({"kind": "move", "search": "x"}, "to"),
        ({"kind": "delete", "rc": -2}, "rc"),
        ({"kind": "delete", "where": "amount >"}, "where"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    console, dead, ns_state, body: dict, field: str
) -> None:
    api = Api("admin")
    before = ns_state()
    got = api("POST", "dlq/jobs/", body)
    assert api.status == 400 and field in got["error"], got
    assert not BulkJob.objects.exists()
    assert ns_state() == before


def test_roles(console, dead) -> None:
    assert Api("viewer")("POST", "dlq/jobs/", {"kind": "redrive"}) == {
        "error": "Not allowed: This needs the operator role. Nothing was changed."
    }
    op = Api("operator")
    op("POST", "dlq/jobs/", {"kind": "delete", "state": "all"})  # every message: the admin's
    assert op.status == 403
    row = AuditEntry.objects.get(outcome="denied", username="token:bot-operator")
    assert row.action == "delete_matches"
    op("POST", "dlq/jobs/", {"kind": "redrive"})  # a dead-letter queue: the operator's
    assert op.status == 201
    Api("admin")("POST", "dlq/jobs/", {"kind": "delete", "state": "all"})
    assert BulkJob.objects.count() == 2


def test_the_schema_describes_the_routes(console) -> None:
    paths = Client().get("/api/schema/").json()["paths"]
    start = paths["/api/queues/{qname}/jobs/"]["post"]
    assert set(start["responses"]) >= {"201", "400", "403"}
    assert "/api/queues/{qname}/jobs/{pk}/{verb}/" in paths


def test_a_json_field_filter_picks_what_the_job_acts_on(console, rsmq: RedisSMQ, worker) -> None:
    """The API's job takes the queue page's whole filter, JSON fields included."""
    rsmq.create_queue("orders")
    ids = rsmq.send_messages(
        "orders", [json.dumps({"amount": a, "status": s}) for a, s in
                   [(50, "ok"), (150, "failed"), (250, "failed"), (300, "ok"), (0, "failed")]]
    )  # fmt: skip
    rsmq.send_message("orders", "not json")
    api = Api("operator")
    job = api(
        "POST", "orders/jobs/", {"kind": "delete", "where": "amount > 100 and status = failed"}
    )
    assert api.status == 201, job
    path = f"orders/jobs/{job['id']}/"
    assert until(api, path, {"counted"})["matched"] == 2
    api("POST", path + "confirm/", {"confirm": "orders"})
    assert until(api, path, {"done", "failed"})["done"] == 2
    left = {m.id for m in rsmq.list_messages("orders").items}
    assert left == set(ids) - {ids[1], ids[2]} | (left - set(ids))
    assert len(left) == 4
