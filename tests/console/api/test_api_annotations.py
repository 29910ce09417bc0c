"""POST /api/annotations/: a deploy marker posted by an API token of the operator role or
above (typed, documented in /api/schema/, audited), on a queue, a pattern or the whole
namespace, at a time that defaults to now; bad input is a 400 naming the field, and
nothing is made."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import Annotation, AuditEntry
from dashboard.triage import timeline

pytestmark = pytest.mark.django_db


class Api:
    def __init__(self, role: str) -> None:
        self.row, token = tokens.mint(f"ci-{role}", role, "test", 10_000)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", enforce_csrf_checks=True)

    def post(self, body: Any, path: str = "/api/annotations/") -> Any:
        self.response = self.client.post(path, json.dumps(body), content_type="application/json")
        self.status = self.response.status_code
        return self.response.json()


@pytest.mark.parametrize("role", ["operator", "admin"])
def test_a_token_marks_a_deploy_now(console, ns: str, role: str) -> None:
    api = Api(role)
    before = time.time()
    got = api.post({"text": "deploy payments v2.3 (abc123)", "queue": "payments"})
    assert api.status == 201, got
    a = Annotation.objects.get()
    assert before * 1000 - 5 <= a.at <= time.time() * 1000 + 5
    assert (a.connection, a.namespace, a.queue, a.pattern, a.text, a.created_by) == (
        "default", ns, "payments", "", "deploy payments v2.3 (abc123)", f"token:ci-{role}",
    )  # fmt: skip
    assert got == {
        "id": a.pk, "at": got["at"], "connection": "default", "namespace": ns,
        "queue": "payments", "pattern": "", "text": "deploy payments v2.3 (abc123)",
        "created_by": f"token:ci-{role}",
    }  # fmt: skip
    assert got["at"].endswith("Z")
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome, entry.username, entry.queue) == (
        "annotation_create", "ok", f"token:ci-{role}", "payments",
    )  # fmt: skip


def test_at_a_given_time_on_a_pattern_at_a_named_place(console, ns: str) -> None:
    api = Api("operator")
    when = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=2)
    got = api.post(
        {"text": "config change", "pattern": "orders-*", "at": when.isoformat()},
        path=f"/api/c/default/{ns}/annotations/",
    )
    assert api.status == 201, got
    a = Annotation.objects.get()
    assert a.at == int(when.timestamp() * 1000)
    assert (a.pattern, a.queue) == ("orders-*", "")
    # A time without a zone is UTC.
    api.post({"text": "naive", "at": when.replace(tzinfo=None).isoformat()})
    assert api.status == 201
    assert Annotation.objects.get(text="naive").at == int(when.timestamp() * 1000)
    # On the timeline of a matching queue, not of another.
    f = timeline.Filter(a.at - 1, a.at + 1, "default", ns, queue="orders-eu")
    assert [e.text for e in timeline.events(f)] == ["config change", "naive"]
    f = timeline.Filter(a.at - 1, a.at + 1, "default", ns, queue="payments")
    assert [e.text for e in timeline.events(f)] == ["naive"]  # the namespace-wide one


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "text must be a string of 1 to 500 characters"),
        ({"text": ""}, "text must be 1 to 500 characters"),
        ({"text": "   "}, "text must be 1 to 500 characters"),
        ({"text": "x" * 501}, "text must be 1 to 500 characters"),
        ({"text": 5}, "text must be a string of 1 to 500 characters"),
        ({"text": "t", "queue": "bad name!"}, "Invalid queue format"),
        ({"text": "t", "queue": "a", "pattern": "a*"}, "queue or pattern: give one of the two"),
        ({"text": "t", "pattern": "p" * 161}, "pattern must be at most 160 characters"),
        ({"text": "t", "at": "yesterday"}, "at must be an ISO 8601 time within the last 366"),
        ({"text": "t", "at": "2001-01-01T00:00:00Z"}, "at must be within the last 366 days"),
        ({"text": "t", "at": "2999-01-01T00:00:00Z"}, "at must be within the last 366 days"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(console, body: dict, error: str) -> None:
    api = Api("operator")
    got = api.post(body)
    assert api.status == 400
    assert error in got["error"]
    assert not Annotation.objects.exists()


def test_a_viewer_token_may_not_and_is_audited(console) -> None:
    api = Api("viewer")
    got = api.post({"text": "deploy"})
    assert api.status == 403
    assert "operator" in got["error"]
    assert not Annotation.objects.exists()
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome, entry.username) == (
        "annotation_create", "denied", "token:ci-viewer",
    )  # fmt: skip


def test_no_token_no_session(console, operator: Client) -> None:
    assert Client().post("/api/annotations/", {"text": "x"}).status_code == 401
    response = operator.post(
        "/api/annotations/", json.dumps({"text": "x"}), content_type="application/json"
    )
    assert response.status_code == 401  # a console session never acts through the API
    assert not Annotation.objects.exists()


def test_the_read_only_console_refuses(console, settings) -> None:
    settings.RSMQ_READ_ONLY = True
    api = Api("admin")
    api.post({"text": "deploy"})
    assert api.status == 403
    assert not Annotation.objects.exists()


def test_the_openapi_document_describes_it(console) -> None:
    doc = Client().get("/api/schema/").json()
    post = doc["paths"]["/api/annotations/"]["post"]
    assert post["security"] == [{"TokenAuth": []}]
    assert {"201", "400", "401", "403"} <= set(post["responses"])
    assert "post" in doc["paths"]["/api/c/{conn}/{ns}/annotations/"]
    schema = doc["components"]["schemas"]["AnnotationIn"]
    assert set(schema["properties"]) == {"text", "queue", "pattern", "at"}
    assert schema["required"] == ["text"]
