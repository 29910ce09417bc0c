"""A queue's page "as of" a past time (?as_of=, views/queue_as_of.py): its snapshot then
beside its counters now, its condition and reasons then and how it got there, its flags
open and alerts firing then; frozen (no action)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client
from support.as_of import incident_then

from dashboard.models import Alert, AlertEvent, AlertRule, AnomalyFlag
from dashboard.triage import as_of
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def past(console, settings, rsmq: RedisSMQ, lake: Path) -> int:
    """q1's backlog grew over two runs (its reason then), then it was purged."""
    return incident_then(settings, rsmq, ["q1"], growing="q1")


def test_it_shows_the_counts_then_beside_now(console, past, viewer: Client) -> None:
    response = viewer.get(console.queue("q1", f"?as_of={past}"))
    assert response.status_code == 200
    rows = {label: (a, b, d) for label, a, b, d in response.context["then_now"]}
    assert rows["Messages"] == (60, 2, -58)
    assert rows["Sent (total)"] == (60, 62, 2)


def test_it_shows_the_condition_then_and_how_it_got_there(console, past, viewer) -> None:
    response = viewer.get(console.queue("q1", f"?as_of={past}"))
    then = response.context["then"]
    assert then.reasons[0].startswith("backlog +55 in ")
    changes = response.context["changes"]
    assert [c.at <= response.context["moment"].taken_at for c in changes] == [True] * len(changes)
    assert changes[0].reason == then.reason
    body = response.content.decode()
    assert "backlog +55 in " in body and "How it got there" in body


def test_it_shows_the_flags_open_and_alerts_firing_then(console, past, viewer) -> None:
    where = {"connection": "default", "namespace": console.ns, "queue": "q1"}
    AnomalyFlag.objects.create(**where, kind="consumers_stalled", start=past - 60_000,
                               end=past + 1, intervals=1, figures={"visible_max": 60})  # fmt: skip
    AnomalyFlag.objects.create(**where, kind="oldest_age", start=past + 1, end=None,
                               intervals=1, figures={})  # fmt: skip
    rule = AlertRule.objects.create(name="q1 backlog", connection="default",
                                    namespace=console.ns, queue="q1", metric="visible")  # fmt: skip
    alert = Alert.objects.create(rule=rule, **where, state="resolved", since=past - 5000,
                                 changed=past + 1)  # fmt: skip
    AlertEvent.objects.create(alert=alert, at=past - 5000, state="firing")
    AlertEvent.objects.create(alert=alert, at=past + 1, state="resolved")
    response = viewer.get(console.queue("q1", f"?as_of={past}"))
    # the console's own flag of the growth then, and the stalled one; not the later one
    kinds = sorted(f.kind for f, _ in response.context["flags_then"])
    assert kinds == ["backlog_growing", "consumers_stalled"]
    assert [a.rule.name for a in response.context["alerts_then"]] == ["q1 backlog"]
    assert as_of.firing_at("default", console.ns, past) == {"q1": 1}
    assert as_of.firing_at("default", console.ns, past + 2) == {}


def test_it_offers_no_action(console, past, admin: Client) -> None:
    body = admin.get(console.queue("q1", f"?as_of={past}")).content.decode()
    main = body.split("<main", 1)[1]
    assert 'method="post"' not in main
    assert "data-as-of-title" in body


def test_it_says_a_queue_that_did_not_exist_then(console, past, rsmq, viewer) -> None:
    rsmq.create_queue("later")
    response = viewer.get(console.queue("later", f"?as_of={past}"))
    assert response.status_code == 200
    assert "was not in the snapshot of" in response.content.decode()


def test_its_charts_drawn_again_by_htmx_still_end_then(console, past, viewer: Client) -> None:
    page = console.queue("q1", f"?as_of={past}")
    headers = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver" + page}
    response = viewer.get(console.queue("q1", "charts/?range=hour"), **headers)
    assert response.status_code == 200
    body = response.content.decode()
    # the backlog's legend: its last value is then's (60 visible), not now's (2)
    assert re.search(r"visible <b>60</b>", body)
    assert 'hx-trigger="every' not in body  # frozen: no refresh
    live = viewer.get(console.queue("q1", "charts/?range=hour"), **{
        "HTTP_HX_REQUEST": "true",
        "HTTP_HX_CURRENT_URL": "http://testserver" + console.queue("q1"),
    }).content.decode()  # fmt: skip
    assert re.search(r"visible <b>2</b>", live)


def test_its_owner_is_the_one_then(console, past, admin: Client, ns: str) -> None:
    """An owner added after that time is not the owner shown then; it is now."""
    added = {"place": f"default/{ns}", "queue": "q1", "pattern": "", "owner": "Team Later"}
    assert admin.post("/owners/", added).status_code == 302
    assert "Team Later" not in admin.get(console.queue("q1", f"?as_of={past}")).content.decode()
    assert "Team Later" in admin.get(console.queue("q1")).content.decode()
