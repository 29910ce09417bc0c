"""Every effect audited, and never a 500 after one: an action's audit row is written
before it runs and finished after it. A failure injected at the first write (the
database refusing the row) leaves nothing done — a 503 saying so, Redis as it was; one
injected at the finishing write leaves the effect's own answer (the row says the action
started) — on the API and on the pages, on SQLite and (``[postgres]``) Postgres."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.db import DatabaseError
from django.db.models import QuerySet
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry, UndoEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(console) -> Client:
    _, token = tokens.mint("bot", "admin", "test", 10_000)
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    return rsmq.send_message("q1", '{"a": 1}')


@pytest.fixture
def no_new_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The database refuses every new audit row (full, down, a constraint)."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise DatabaseError("injected: the audit table refuses the row")

    monkeypatch.setattr(AuditEntry.objects, "create", refused)


@pytest.fixture
def no_finished_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The database refuses to finish an audit row (it went away mid-request)."""
    update = QuerySet.update

    def refused(self: QuerySet[Any], **kwargs: Any) -> int:
        if self.model is AuditEntry:
            raise DatabaseError("injected: the audit row can't be finished")
        return update(self, **kwargs)

    monkeypatch.setattr(QuerySet, "update", refused)


def resend(api: Client, mid: str) -> Any:
    return api.post(
        f"/api/queues/q1/messages/{mid}/resend/",
        json.dumps({"message": '{"a": 2}', "to": "q2", "delete_original": True}),
        content_type="application/json",
    )


def test_an_action_whose_row_cant_be_written_does_nothing(
    api: Client, q1: str, rsmq: RedisSMQ, ns_state, no_new_rows
) -> None:
    before = ns_state()
    response = resend(api, q1)
    assert response.status_code == 503
    assert response.json()["error"].startswith("The audit log can't be written")
    assert "nothing was done" in response.json()["error"]
    assert ns_state() == before  # the original is there, nothing was sent
    purge = api.post("/api/queues/q1/purge/")
    assert purge.status_code == 503 and ns_state() == before


def test_an_action_whose_row_cant_be_finished_answers_with_its_effect(
    api: Client, q1: str, rsmq: RedisSMQ, no_finished_rows, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, "dashboard.audit.log")
    response = resend(api, q1)
    assert response.status_code == 201  # the effect's answer, never a 500 after it
    new = response.json()["id"]
    assert rsmq.get_message("q1", q1) is None
    assert rsmq.get_message("q2", new).message == '{"a": 2}'  # type: ignore[union-attr]
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.ids) == ("resend", "started", [q1])
    assert "stays 'started'" in caplog.text

    purged = api.post("/api/queues/q2/purge/")
    assert purged.status_code == 200 and purged.json()["count"] == 1
    assert purged.json()["undo"]  # and its Undo is kept, tied to the started row
    row = AuditEntry.objects.get(action="purge")
    assert row.outcome == "started" and UndoEntry.objects.get().audit == row


def test_a_page_action_whose_row_cant_be_written_does_nothing(
    console, q1: str, admin: Client, ns_state, no_new_rows
) -> None:
    before = ns_state()
    response = admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"})
    assert response.status_code == 503
    assert "The audit log can&#x27;t be written" in response.content.decode()
    assert ns_state() == before


def test_a_page_action_whose_row_cant_be_finished_shows_its_outcome(
    console, q1: str, admin: Client, rsmq: RedisSMQ, no_finished_rows
) -> None:
    response = admin.post(console.act(), {"action": "purge", "purge-confirm": "q1"}, follow=True)
    assert response.status_code == 200
    assert console.flashes(response) == ["Purged 1 message from q1."]
    assert rsmq.get_queue_attributes("q1").msgs == 0
    assert AuditEntry.objects.get().outcome == "started"
