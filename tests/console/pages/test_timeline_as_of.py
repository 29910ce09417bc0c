"""The incident timeline "as of" a past time (?as_of=): its range ends then, frozen (no
Mark an event), with each queue's condition changes — what the overview said, and why."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.models import ConditionChange
from dashboard.triage import as_of, timeline
from dashboard.triage.timeline import Filter

pytestmark = pytest.mark.django_db

T0 = 1_790_000_000_000  # epoch ms, a fixed past moment


def change(ns: str, minutes: float, queue: str, state: str, reason: str = "", was: str = ""):
    return ConditionChange.objects.create(
        connection="default", namespace=ns, queue=queue, at=T0 + round(minutes * 60_000),
        state=state, reason=reason, was=was,
    )  # fmt: skip


@pytest.fixture
def changes(console) -> None:
    ns = console.ns
    change(ns, 0, "orders", "healthy")  # first seen, calm: no event
    change(ns, 5, "orders", "no_consumers", "no consumer for 2 min", was="healthy")
    change(ns, 20, "orders", "healthy", was="no_consumers")
    change(ns, 30, "other", "falling_behind", "falling behind: 1/s received, 4/s sent")


def test_condition_changes_are_events(console, changes) -> None:
    f = Filter(T0 - 1, T0 + 3_600_000, "default", console.ns)
    got = [(e.queue, e.text) for e in timeline.events(f) if e.kind == "condition"]
    assert got == [
        ("orders", "healthy → no consumers: no consumer for 2 min"),
        ("orders", "no consumers → healthy"),
        ("other", "falling behind: falling behind: 1/s received, 4/s sent"),
    ]


def test_the_frozen_timeline_ends_at_the_time_asked(console, changes, viewer: Client) -> None:
    asked = T0 + 25 * 60_000
    response = viewer.get(f"/incidents/?as_of={as_of.iso(asked)}&range=1h&kind=condition")
    assert response.status_code == 200
    texts = [e.text for e in response.context["events"]]
    assert texts == ["no consumers → healthy", "healthy → no consumers: no consumer for 2 min"]
    body = response.content.decode()
    assert f"As of {as_of.label(asked)} — frozen view; now: " in body
    assert "Mark an event" not in body


def test_it_offers_a_link_that_freezes_it(console, operator: Client) -> None:
    body = operator.get("/incidents/?range=1h").content.decode()
    assert "data-freeze" in body and "as_of=" in body


def test_it_refuses_a_time_in_the_future(console, viewer: Client) -> None:
    response = viewer.get("/incidents/?as_of=2999-01-01T00:00Z")
    assert response.status_code == 400
    assert "is in the future" in response.content.decode()
