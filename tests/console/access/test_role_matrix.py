"""Every action × every role × every surface, against the docs' table of who may do what
(its rows are read from docs/console.md: the table and the console can't drift apart).

Surfaces: a plain form POST, the same POST from htmx, and the JSON API (read-only: its
routes answer 405 to a POST, and it has no route for an action). An allowed action runs
(its audit row says "ok"); a refused one changes nothing in Redis, answers 403 (the login
page for the anonymous) and is audited as denied (the anonymous: nothing to name).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from dashboard.alerting import acks
from dashboard.models import Alert, AlertRule, AuditEntry, Silence, UndoEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "console.md"
ROLES = ["anonymous", "no role", "observer", "viewer", "operator", "admin", "admin, read-only"]
SURFACES = ["html", "htmx", "api"]


def readme_table() -> dict[str, set[str]]:
    """{action: the roles the guide's table ticks}."""
    lines = GUIDE.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("| what | action |"))
    columns = [c.strip() for c in lines[head].strip().strip("|").split("|")][2:]
    assert columns == ROLES, columns
    table: dict[str, set[str]] = {}
    for line in lines[head + 2 :]:
        if not line.strip().startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        (action,) = re.findall(r"`(\w+)`", cells[1])
        table[action] = {role for role, cell in zip(ROLES, cells[2:], strict=True) if cell}
    return table


TABLE = readme_table()


# q1's one failure group (the first message's, in flight), as the Failing view posts it
GROUP = {"type": "E", "state": "retry", "where": "q1", "count": "1", "confirm": "q1"}


@dataclass(frozen=True)
class Act:
    queue: str  # the queue whose page posts it
    data: Callable[[list[str]], dict]
    audited_as: str
    message: bool = False  # posted from the first message's page
    path: str = ""  # posted to this path of the queue's page instead of its act/
    changes: bool = True  # whether it changes Redis at once (a job first counts)
    failing: bool = False  # posted from the queue's Failing view
    url: Callable[[], str] | None = None  # posted to this path (a page of no queue)


ACTS: dict[str, Act] = {
    "send": Act("q1", lambda ids: {"action": "send", "body": "hi"}, "send"),
    "requeue": Act("q1", lambda ids: {"action": "requeue", "ids": [ids[0]]}, "requeue"),
    "delete": Act("q1", lambda ids: {"action": "delete", "ids": [ids[1]]}, "delete"),
    "move": Act("q1", lambda ids: {"action": "move", "ids": [ids[1]], "to": "q2"}, "move"),
    "message_requeue": Act("q1", lambda ids: {"action": "requeue"}, "requeue", True),
    "message_delete": Act("q1", lambda ids: {"action": "delete"}, "delete", True),
    "message_move": Act("q1", lambda ids: {"action": "move", "to": "q2"}, "move", True),
    "import": Act(
        "q1",
        lambda ids: {"action": "import", "file": SimpleUploadedFile("x.jsonl", b'{"body": "x"}')},
        "import",
    ),
    "message_resend": Act(
        "q1", lambda ids: {"action": "resend", "body": "fixed", "to": "q2"}, "resend", True
    ),
    "visibility": Act("q1", lambda ids: {"action": "visibility", "vt": "0"}, "visibility", True),
    "redrive_dlq": Act(
        "dead", lambda ids: {"action": "redrive", "to": "q1", "confirm": "dead"}, "redrive"
    ),
    "redrive_plain": Act(
        "q1", lambda ids: {"action": "redrive", "to": "q2", "confirm": "q1"}, "redrive"
    ),
    "requeue_all": Act(
        "q1",
        lambda ids: {"action": "requeue_all", "state": "inflight", "all-confirm": "q1"},
        "requeue_all",
    ),
    "delete_all": Act(
        "q1",
        lambda ids: {"action": "delete_all", "state": "all", "all-confirm": "q1"},
        "delete_all",
    ),
    "create": Act(
        "", lambda ids: {"name": "q3", "vt": "30", "delay": "0", "maxsize": "65536"}, "create_queue"
    ),
    "edit": Act(
        "q1",
        lambda ids: {"action": "edit", "vt": "60", "delay": "0", "maxsize": "-1"},
        "edit_queue",
    ),
    "policy": Act("q1", lambda ids: {"action": "policy", "dlq": "q2", "maxrc": "3"}, "set_policy"),
    "purge": Act("q1", lambda ids: {"action": "purge", "purge-confirm": "q1"}, "purge"),
    "delete_queue": Act(
        "q1", lambda ids: {"action": "delete_queue", "delete-confirm": "q1"}, "delete_queue"
    ),
    "clean_orphans": Act(
        "q1", lambda ids: {"action": "clean_orphans", "orphans-confirm": "q1"}, "clean_orphans"
    ),
    "clean_leftover": Act(
        "gone",
        lambda ids: {"action": "clean_leftover", "leftover-confirm": "gone"},
        "clean_leftover",
    ),
    "retry_group": Act(
        "q1", lambda ids: {"action": "retry_group", **GROUP}, "retry_group", failing=True
    ),
    "delete_group": Act(
        "q1", lambda ids: {"action": "delete_group", **GROUP}, "delete_group", failing=True
    ),
    # act on every match (views/jobs.py): starting a job counts, it changes nothing yet
    "delete_matches": Act(
        "q1", lambda ids: {"kind": "delete", "search": "one"}, "delete_matches", False,
        "jobs/", False,
    ),
    "delete_matches_all": Act(
        "q1", lambda ids: {"kind": "delete", "state": "all"}, "delete_matches", False,
        "jobs/", False,
    ),
    "redrive_matches_dlq": Act(
        "dead", lambda ids: {"kind": "redrive", "rate": "10"}, "redrive_matches", False,
        "jobs/", False,
    ),
    "redrive_matches_plain": Act(
        "q1", lambda ids: {"kind": "redrive", "to": "q2"}, "redrive_matches", False,
        "jobs/", False,
    ),
    # pause / throttle / resume (dashboard/acting/flow.py); a resume of a queue that runs
    # freely changes nothing, and says so
    "pause": Act("q1", lambda ids: {"action": "pause", "reason": "deploy"}, "pause_queue"),
    "throttle": Act("q1", lambda ids: {"action": "throttle", "rate": "5"}, "throttle_queue"),
    "resume": Act("q1", lambda ids: {"action": "resume"}, "resume_queue", changes=False),
    # a due window's delayed messages, as a job (it counts first: nothing changes yet)
    "reschedule_matches": Act(
        "q1", lambda ids: {"kind": "shift", "shift": "30m"}, "shift_matches", False,
        "jobs/", False,
    ),
    # what an operator says of a queue, and a mark on its timeline: the database only
    "expected_idle": Act(
        "q1", lambda ids: {"action": "expect", "idle": "idle"}, "expected_idle", False,
        "triage/", False,
    ),
    "annotate": Act(
        "q1", lambda ids: {"text": "deploy v2"}, "annotation_create", False, "annotate/", False,
    ),
    # alert hygiene (views/alerts.py): the database only; the fixture's rule of q1 fires,
    # and a silence is on
    "alert_silence": Act(
        "", lambda ids: {"place": f"default/{AlertRule.objects.get().namespace}",
                         "pattern": "orders-*", "reason": "deploy", "hours": "1"},
        "alert_silence", changes=False, url=lambda: "/alerts/silences/",
    ),
    "alert_silence_expire": Act(
        "", lambda ids: {}, "alert_silence_expire", changes=False,
        url=lambda: f"/alerts/silences/{Silence.objects.get().pk}/expire/",
    ),
    "alert_ack": Act(
        "", lambda ids: {}, "alert_ack", changes=False,
        url=lambda: f"/alerts/ack/{Alert.objects.get().pk}/",
    ),
    "alert_ack_link": Act(
        "", lambda ids: {}, "alert_ack", changes=False,
        url=lambda: f"/alerts/ack/link/{acks.token(Alert.objects.get())}/",
    ),
    # the fixture's kept delete of q1's third message (its token: ids[-1])
    "undo": Act(
        "q1", lambda ids: {"action": "undo", "undo-token": ids[-1], "undo-confirm": "yes"}, "undo"
    ),
}  # fmt: skip


def test_the_readme_table_names_every_action_and_only_those() -> None:
    assert set(TABLE) == {"read", *ACTS}


@pytest.fixture
def ids(console, rsmq: RedisSMQ, r) -> list[str]:
    """q1 with three messages, the first in flight; q2 empty; "dead": q2's dead-letter
    queue, with one visible message that came from q1; what another port (go-rsmq) leaves
    behind: an orphaned body in q1's hash, and "gone", a left-over queue hash. The message
    in flight has a failure recorded (type "E"): q1's one failure group."""
    for q in ("q1", "q2", "dead"):
        rsmq.create_queue(q)
    rsmq.set_dead_letter_policy("q2", "dead", 1)
    ids = rsmq.send_messages("q1", ["one", "two", "three"])
    rsmq.receive_message("q1", vt=60)
    rsmq.record_failure("q1", ids[0], error_type="E")
    rsmq.send_message("dead", "dead letter")
    r.hset(f"{console.ns}:q1:Q", "Zr4kq0T1wXb8mN2pLc7vYd", "a body left by a delete")
    r.hset(f"{console.ns}:gone:Q", mapping={"vt": 30, "delay": 0, "maxsize": 65536})
    # an Undo to try: q1's third message deleted, kept (no audit row: each test's own is
    # the only one)
    token = rsmq.open_undo("delete", "q1")
    rsmq.delete_messages("q1", [ids[2]], keep=token)
    UndoEntry.objects.create(
        token=token, connection="default", namespace=console.ns, queue="q1", action="delete",
        count=1, expires=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    # an alert rule of q1, firing; a silence of orders-* on for an hour
    rule = AlertRule.objects.create(
        name="backlog", connection="default", namespace=console.ns, queue="q1",
        metric="visible", threshold=1,
    )  # fmt: skip
    Alert.objects.create(rule=rule, connection="default", namespace=console.ns, queue="q1",
                         state="firing", value=3, since=1, changed=1)  # fmt: skip
    Silence.objects.create(
        connection="default", namespace=console.ns, pattern="orders-*", reason="deploy",
        created_by="otto", ends=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    return [*ids, token]


@pytest.fixture
def client_as(settings, as_role, anon) -> Callable[[str], Client]:
    def make(role: str) -> Client:
        if role == "admin, read-only":
            settings.RSMQ_READ_ONLY = True
            return as_role("admin")
        if role == "anonymous":
            return anon
        return as_role("outsider" if role == "no role" else role)

    return make


def _url(console, act: Act, ids: list[str]) -> str:
    if act.url is not None:
        return act.url()
    if not act.queue:
        return console.create()
    if act.failing:
        return console.queue(act.queue, "failing/act/")
    if act.path:
        return console.queue(act.queue, act.path)
    return console.message_act(ids[0], act.queue) if act.message else console.act(act.queue)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", list(ACTS))
def test_each_action_for_each_role_on_each_surface(
    console, ids, client_as, ns_state, name: str, role: str, surface: str
) -> None:
    act, allowed = ACTS[name], role in TABLE[name]
    client = client_as(role)
    before = ns_state()
    if surface == "api":
        # Read-only: no route for an action, and its routes refuse a POST.
        api = f"/api/c/default/{console.ns}/queues/"
        assert client.post(api + f"{act.queue or 'q1'}/act/", act.data(ids)).status_code == 404
        assert client.post(api + f"{act.queue or 'q1'}/", act.data(ids)).status_code == 405
        assert client.post(api, act.data(ids)).status_code == 405
        assert ns_state() == before
        assert not AuditEntry.objects.exists()
        return
    headers = console.htmx(current=console.queue(act.queue or "q1")) if surface == "htmx" else {}
    response = client.post(_url(console, act, ids), act.data(ids), **headers)
    if allowed:
        assert response.status_code in (200, 204, 302), response.content.decode()[:300]
        row = AuditEntry.objects.get()
        assert (row.action, row.outcome) == (act.audited_as, "ok"), row.detail
        assert (ns_state() != before) is act.changes
        return
    assert ns_state() == before
    if role == "anonymous":
        assert response.status_code == 302 and response["Location"].startswith("/login/")
        assert not AuditEntry.objects.exists()
        return
    assert response.status_code == 403
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.username) == (
        act.audited_as, "denied", client.user.username,
    )  # fmt: skip
    assert ("read-only" in row.detail) is (role == "admin, read-only")


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("role", ROLES)
def test_reading_for_each_role_on_each_surface(
    console, ids, client_as, role: str, surface: str
) -> None:
    client = client_as(role)
    if surface == "api":
        response = client.get(f"/api/c/default/{console.ns}/queues/")
        expected = 200 if role in TABLE["read"] else 401 if role == "anonymous" else 403
    else:
        headers = console.htmx(current=console.overview()) if surface == "htmx" else {}
        response = client.get(console.queue("q1"), **headers)
        expected = 200 if role in TABLE["read"] else 302 if role == "anonymous" else 403
    assert response.status_code == expected
