"""GET /api/queues/<q>/export/ (a viewer's token; the query is the queue page's filter;
streamed JSON Lines) and POST /api/queues/<q>/import/ (an operator's token; the body an
export's lines, at most exports.IMPORT_MAX_BYTES): a round trip keeps bodies byte for
byte, a bad line is a 400 naming it, both are audited."""

from __future__ import annotations

import json
import time

import pytest
import redis
from django.http import StreamingHttpResponse
from django.test import Client

from dashboard.access import tokens
from dashboard.acting.exports import IMPORT_MAX_BYTES
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

BODIES = ['{"n": 1}', "plain ünïcode \u2028 \r tab\t", "", "x" * 40_000]


def client(role: str) -> Client:
    _, token = tokens.mint(f"bot-{role}", role, "test", 10_000)
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> list[str]:
    rsmq.create_queue("q1", maxsize=-1)
    rsmq.create_queue("q2", maxsize=-1)
    ids = rsmq.send_messages("q1", BODIES)
    rsmq.receive_message("q1", vt=600)
    return ids


def test_export_then_import_round_trip(
    q1: list[str], rsmq: RedisSMQ, redis_url: str, ns: str
) -> None:
    response = client("viewer").get("/api/queues/q1/export/")
    assert response.status_code == 200 and isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"].startswith("application/x-ndjson")
    data = b"".join(response.streaming_content)
    got = [json.loads(line) for line in data.split(b"\n") if line]
    # queue order: the received one is hidden for 10 min, so last
    assert [g["id"] for g in got] == q1[1:] + q1[:1] and [g["rc"] for g in got] == [0, 0, 0, 1]
    answer = client("operator").post(
        "/api/queues/q2/import/", data=data, content_type="application/x-ndjson"
    )
    assert answer.status_code == 200, answer.content
    report = answer.json()
    assert report == {
        "lines": 4, "imported": 4, "skipped": 0, "skipped_lines": [], "batches": 1,
        "first_id": report["first_id"], "last_id": report["last_id"],
    }  # fmt: skip
    new = [m.id for m in rsmq.browse("q2").items]
    with redis.Redis.from_url(redis_url) as r:  # the raw bodies, byte for byte
        raw = sorted(r.hget(f"{ns}:q2:Q", i) for i in new)
    assert raw == sorted(b.encode() for b in BODIES)
    assert {m.rc for m in rsmq.browse("q2").items} == {0}  # new ids: new messages
    rows = {(e.action, e.outcome, e.username) for e in AuditEntry.objects.all()}
    assert rows == {("export", "ok", "token:bot-viewer"), ("import", "ok", "token:bot-operator")}


def test_keep_ids_keeps_rc_and_fr(q1: list[str], rsmq: RedisSMQ) -> None:
    data = b"".join(client("viewer").get("/api/queues/q1/export/").streaming_content)
    answer = client("operator").post(
        "/api/queues/q2/import/?keep_ids=true", data=data, content_type="application/x-ndjson"
    )
    assert answer.json()["imported"] == 4
    moved = {m.id: (m.rc, m.fr) for m in rsmq.browse("q2").items}
    original = {m.id: (m.rc, m.fr) for m in rsmq.browse("q1").items}
    assert moved == original


def test_a_filtered_export(q1: list[str]) -> None:
    response = client("viewer").get("/api/queues/q1/export/?rc=1")
    got = [json.loads(x) for x in b"".join(response.streaming_content).split(b"\n") if x]
    assert [g["id"] for g in got] == q1[:1]


def test_a_bad_filter_is_a_400_naming_it(q1: list[str]) -> None:
    response = client("viewer").get("/api/queues/q1/export/?state=nope")
    assert response.status_code == 400 and response.json()["error"].startswith("state must be")
    assert AuditEntry.objects.get().outcome == "invalid"


def test_bad_lines_are_a_400_by_number_with_nothing_written(
    q1: list[str], rsmq: RedisSMQ, ns_state
) -> None:
    before = ns_state()
    answer = client("operator").post(
        "/api/queues/q2/import/",
        data=b'{"body": "a"}\n{"body": "b", "delay_ms": -5}\n\n{"id": 1}\n',
        content_type="application/x-ndjson",
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error.startswith("2 line(s) can't be imported, nothing was: line 2: delay_ms")
    assert "line 4: body must be a string" in error
    assert ns_state() == before


def test_an_import_over_the_limit_is_refused(q1: list[str], rsmq: RedisSMQ) -> None:
    line = (json.dumps({"body": "x" * 1000}) + "\n").encode()
    data = line * (IMPORT_MAX_BYTES // len(line) + 1)
    answer = client("operator").post(
        "/api/queues/q2/import/", data=data, content_type="application/x-ndjson"
    )
    assert answer.status_code == 400 and "rsmq message import" in answer.json()["error"]
    assert rsmq.browse("q2").items == []


@pytest.mark.parametrize(("role", "status"), [("viewer", 403), ("operator", 200)])
def test_importing_needs_an_operator(q1: list[str], role: str, status: int) -> None:
    answer = client(role).post(
        "/api/queues/q2/import/", data=b'{"body": "x"}\n', content_type="application/x-ndjson"
    )
    assert answer.status_code == status


def test_exporting_needs_a_token(q1: list[str]) -> None:
    assert Client().get("/api/queues/q1/export/").status_code == 401
    assert client("viewer").get("/api/queues/nope/export/").status_code == 404


def test_a_body_over_the_servers_limit_is_refused(q1: list[str], rsmq: RedisSMQ) -> None:
    line = (json.dumps({"body": "x" * 1000}) + "\n").encode()
    data = line * 3000  # ~3 MB: over DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB) too
    answer = client("operator").post(
        "/api/queues/q2/import/", data=data, content_type="application/x-ndjson"
    )
    assert answer.status_code == 413, answer.content[:300]
    assert "rsmq message import" in answer.json()["error"]
    assert rsmq.browse("q2").items == []


# A response's close() ends its request as served (the connection closed): a real transaction.
@pytest.mark.django_db(transaction=True)
def test_an_export_past_the_process_slots_is_a_503_with_retry_after(q1, settings) -> None:
    settings.RSMQ_EXPORTS = 1
    api = client("viewer")
    first = api.get("/api/queues/q1/export/")

    second = api.get("/api/queues/q1/export/")

    assert second.status_code == 503 and second["Retry-After"] == "30"
    assert second.json()["error"].startswith("1 export is already running in this web process")
    first.close()
    third = api.get("/api/queues/q1/export/")
    assert third.status_code == 200
    third.close()


def test_an_import_counts_against_the_tokens_rate_by_its_messages(
    q1: list[str], rsmq: RedisSMQ, ns_state
) -> None:
    if time.time() % tokens.WINDOW > tokens.WINDOW - 5:  # all in one window of the rate
        time.sleep(tokens.WINDOW - time.time() % tokens.WINDOW)
    _, token = tokens.mint("small", "operator", "test", 10)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    lines = b"".join(json.dumps({"body": f"m{i}"}).encode() + b"\n" for i in range(20))
    before = ns_state()
    big = api.post("/api/queues/q2/import/", data=lines, content_type="application/x-ndjson")
    assert big.status_code == 429, big.content
    assert "counts for 20" in big.json()["error"] and "rsmq message import" in big.json()["error"]
    assert ns_state() == before  # nothing written, nothing counted
    five = b"".join(lines.splitlines(keepends=True)[:5])  # the refused one counted 1
    assert api.post("/api/queues/q2/import/", data=five,
                    content_type="application/x-ndjson").status_code == 200  # fmt: skip
    four = b"".join(lines.splitlines(keepends=True)[:4])
    assert api.post("/api/queues/q2/import/", data=four,
                    content_type="application/x-ndjson").status_code == 200  # fmt: skip
    again = api.post("/api/queues/q2/import/", data=four, content_type="application/x-ndjson")
    assert again.status_code == 429 and "try again in" in again.json()["error"]
    assert rsmq.get_queue_attributes("q2").msgs == 9
    row = AuditEntry.objects.filter(action="import", outcome="throttled").first()
    assert row is not None
