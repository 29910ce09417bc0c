"""/api/schema/ documents every response of every route under /api/ (the read API's
too, whose views write their JSON by hand): each operation's answers, errors included,
have a shape with properties; and what the routes answer validates against the shape
they declare (the read API's schemas refuse fields they do not name)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import Client
from ninja.operation import Operation

from dashboard.access import tokens
from dashboard.api import api
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

JSON = "application/json"
METHODS = ("get", "head", "put", "post", "delete", "patch")


def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        *_, name = schema["$ref"].split("/")
        schema = doc["components"]["schemas"][name]
    return schema


def _shapes(doc: dict[str, Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a response may be (each branch of a union)."""
    schema = _resolve(doc, schema)
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return [s for b in branches for s in _shapes(doc, b)]
    return [schema]


def test_every_operation_documents_each_answer_with_a_shape(console) -> None:
    doc = Client().get("/api/schema/").json()
    operations = [
        (path, method, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]
    assert len(operations) > 40  # the native routes, their /c/ forms and rest-rsmq's
    reads = {op["operationId"] for _, _, op in operations if "read" in op.get("tags", [])}
    assert {"list_queues", "describe_queue", "queue_failures"} <= reads
    missing = []
    for path, method, op in operations:
        answers = op.get("responses", {})
        if not any(code.startswith("2") for code in answers):
            missing.append(f"{method.upper()} {path}: no success answer")
        if not any(code.startswith("4") for code in answers):
            missing.append(f"{method.upper()} {path}: no error answer")
        for code, answer in answers.items():
            schema = answer.get("content", {}).get("application/json", {}).get("schema")
            if schema is None:
                missing.append(f"{method.upper()} {path} {code}: no schema")
                continue
            for shape in _shapes(doc, schema):
                if not shape.get("properties"):
                    missing.append(f"{method.upper()} {path} {code}: a shape with no properties")
    assert not missing, "\n".join(missing)


def test_the_read_api_documents_its_fields(console) -> None:
    """The shapes say what the JSON holds: a queue's counts, attributes and rates."""
    doc = Client().get("/api/schema/").json()
    op = doc["paths"]["/api/queues/"]["get"]
    (listing,) = _shapes(doc, op["responses"]["200"]["content"]["application/json"]["schema"])
    row = _resolve(doc, listing["properties"]["queues"]["items"])
    assert {"name", "msgs", "visible", "vt", "created", "send_rate"} <= set(row["properties"])
    op = doc["paths"]["/api/queues/{qname}/failures/"]["get"]
    shapes = _shapes(doc, op["responses"]["200"]["content"]["application/json"]["schema"])
    assert sorted(sorted(s["properties"]) for s in shapes) == [
        ["complete", "dlq", "groups", "name", "read_at"],
        ["failures", "id", "name"],
    ]


def _operations() -> dict[str, Operation]:
    found: dict[str, Operation] = {}
    for _, router in api._routers:
        for path_view in router.path_operations.values():
            for op in path_view.operations:
                if op.operation_id:
                    found[op.operation_id] = op
    return found


def _check(op: Operation, response: Any) -> None:
    """The answer validates against the model its operation declares for its status."""
    assert response["Content-Type"].startswith("application/json"), response.content
    model = op.response_models.get(response.status_code)
    assert model is not None, f"{op.operation_id}: {response.status_code} is not documented"
    model.model_validate({"response": response.json()})


def test_what_the_routes_answer_validates_against_their_schema(
    console, rsmq: RedisSMQ, viewer: Client, add_snapshot
) -> None:
    ops = _operations()
    rsmq.create_queue("orders", vt=45)
    rsmq.create_queue("orders-dlq")
    rsmq.set_dead_letter_policy("orders", "orders-dlq", 5)
    a, b = rsmq.send_messages("orders", ["a", "b"])
    rsmq.receive_messages("orders", 2, vt=0)
    rsmq.record_failure("orders", a, ValueError("bad sku"))
    rsmq.record_failure("orders", b, KeyError("sku"))
    now = round(dt.datetime.now(dt.UTC).timestamp() * 1000)
    add_snapshot("orders", now - 70_000, totalsent=0, totalrecv=0, msgs=1)
    add_snapshot("orders", now - 10_000, totalsent=2, totalrecv=2, msgs=2, oldest_age=3.5)
    base = f"/api/c/{console.conn}/{console.ns}"
    _, admin_token = tokens.mint("schema", "admin", "test", 10_000)
    admin = Client(HTTP_AUTHORIZATION=f"Bearer {admin_token}")

    checked = [
        ("list_queues", viewer.get("/api/queues/")),
        ("list_queues_at", viewer.get(f"{base}/queues/?q=ord")),
        ("describe_queue_at", viewer.get(f"{base}/queues/orders/?range=day")),
        ("describe_queue_at", viewer.get(f"{base}/queues/orders/?range=year")),  # 400
        ("describe_queue_at", viewer.get(f"{base}/queues/nope/")),  # 404
        ("describe_queue", Client().get("/api/queues/orders/")),  # 401
        ("queue_failures_at", viewer.get(f"{base}/queues/orders/failures/")),
        ("queue_failures_at", viewer.get(f"{base}/queues/orders/failures/?id={a}")),
        ("queue_failures_at", viewer.get(f"{base}/queues/orders/failures/?id=x")),  # 400
        ("send_at", admin.post(f"{base}/queues/orders/messages/", {"message": "c"}, JSON)),
        ("rest_rsmq_receive_message", admin.get("/api/rest-rsmq/messages/orders")),
        ("rest_rsmq_receive_message", admin.get("/api/rest-rsmq/messages/orders-dlq")),  # {}
        ("rest_rsmq_list_queues", admin.get("/api/rest-rsmq/queues")),
    ]  # fmt: skip
    statuses = []
    for name, response in checked:
        _check(ops[name], response)
        statuses.append(response.status_code)
    assert statuses == [200, 200, 200, 400, 404, 401, 200, 200, 400, 201, 200, 200, 200]
    groups = checked[6][1].json()["groups"]
    assert {g["type"] for g in groups} == {"ValueError", "KeyError"}
    assert set(checked[10][1].json()) == {"id", "message", "rc", "fr", "sent"}
    assert checked[11][1].json() == {}
    assert len(checked[2][1].json()["series"]["backlog"]) >= 1


def test_a_field_the_schema_does_not_name_fails_validation() -> None:
    """The check above can fail: the read schemas refuse an undocumented field."""
    from pydantic import ValidationError

    op = _operations()["list_queues"]
    body = {"connection": "default", "namespace": "rsmq", "now": None, "queues": []}
    op.response_models[200].model_validate({"response": body})
    with pytest.raises(ValidationError):
        op.response_models[200].model_validate({"response": {**body, "extra": 1}})
