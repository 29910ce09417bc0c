"""Act on every match, through the console with a real Celery worker (in this process,
celery.contrib.testing) and the test Redis: count → the confirmation stating it → run
→ progress → pause / resume / cancel; audited at start and end; roles; bad input."""

from __future__ import annotations

import datetime as dt
import html
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from dashboard.access.roles import Role
from dashboard.acting import jobs
from dashboard.acting.message_filter import checked
from dashboard.models import AuditEntry, BulkJob
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queue(console, rsmq: RedisSMQ) -> str:
    """q1: 600 messages, every third a "poison" one (200)."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    rsmq.send_messages("q1", [f"job {i} {'poison' if i % 3 == 0 else 'ok'}" for i in range(600)])
    return "q1"


def wait_for(job_id: int, states: set[str], timeout: float = 30) -> BulkJob:
    until = time.monotonic() + timeout
    while True:
        job = BulkJob.objects.get(pk=job_id)
        if job.state in states:
            return job
        assert time.monotonic() < until, (job.state, job.phase, job.done, job.note)
        time.sleep(0.05)


def start(client: Client, console, qname: str = "q1", **data: str) -> int:
    response = client.post(console.queue(qname, "jobs/"), data)
    assert response.status_code == 302, response.content.decode()[:500]
    m = re.search(r"/jobs/(\d+)/$", response["Location"])
    assert m, response["Location"]
    return int(m.group(1))


def test_count_confirm_run_with_progress(
    console, queue, operator: Client, rsmq: RedisSMQ, worker
) -> None:
    pk = start(operator, console, kind="delete", search="poison", rate="")
    job = wait_for(pk, {"counted"})
    assert job.matched == 200
    page = html.unescape(operator.get(console.queue("q1", f"jobs/{pk}/")).content.decode())
    assert "Delete 200 messages of q1 matching all messages, whose body contains 'poison'" in page
    assert rsmq.get_queue_attributes("q1").msgs == 600  # nothing yet

    wrong = operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q2"})
    assert wrong.status_code == 400 and "Type q1 exactly to confirm." in wrong.content.decode()
    assert rsmq.get_queue_attributes("q1").msgs == 600

    ok = operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    assert ok.status_code == 302
    job = wait_for(pk, {"done"})
    assert (job.done, job.changed) == (200, 0)
    assert rsmq.get_queue_attributes("q1").msgs == 400
    assert not rsmq.browse("q1", contains="poison", limit=1000).items
    rows = list(AuditEntry.objects.filter(action="delete_matches").order_by("at", "pk"))
    who = operator.user.username  # type: ignore[attr-defined]
    assert [(r.params["step"], r.count, r.username) for r in rows] == [
        ("count", None, who), ("start", 200, who), ("end", 200, who),
    ]  # fmt: skip
    assert "Job" in rows[2].detail and "200 of 200 deleted" in rows[2].detail

    # the progress partial htmx polls
    part = operator.get(
        console.queue("q1", f"jobs/{pk}/"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="job-progress"
    ).content.decode()
    assert part.lstrip().startswith('<section id="job-progress"') and "200</strong> of 200" in part


def test_pause_resume_and_cancel(console, queue, operator: Client, rsmq: RedisSMQ, worker) -> None:
    pk = start(operator, console, kind="move", to="q2", search="job", rate="40")
    assert wait_for(pk, {"counted"}).matched == 600
    operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    wait_for(pk, {"running"})
    time.sleep(0.6)
    operator.post(console.queue("q1", f"jobs/{pk}/pause/"))
    paused = wait_for(pk, {"paused"})
    time.sleep(0.8)
    moved = rsmq.get_queue_attributes("q2").msgs
    time.sleep(0.8)
    assert rsmq.get_queue_attributes("q2").msgs == moved  # nothing moves while paused
    assert 0 < paused.done < 600
    page = operator.get(console.queue("q1", f"jobs/{pk}/")).content.decode()
    assert "data-job-resume" in page and "paused." in page

    operator.post(console.queue("q1", f"jobs/{pk}/resume/"))
    wait_for(pk, {"running"})
    time.sleep(0.6)
    assert rsmq.get_queue_attributes("q2").msgs > moved
    operator.post(console.queue("q1", f"jobs/{pk}/cancel/"))
    job = wait_for(pk, {"cancelled"})
    assert 0 < job.done < 600
    assert rsmq.get_queue_attributes("q2").msgs == job.done
    assert rsmq.get_queue_attributes("q1").msgs == 600 - job.done
    end = AuditEntry.objects.filter(action="move_matches", params__step="end").get()
    assert end.count == job.done and "cancelled" in end.detail


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"kind": "explode"}, "kind"),
        ({"kind": "delete", "rc": "-1"}, "rc"),
        ({"kind": "delete", "state": "gone"}, "state"),
        ({"kind": "move", "search": "x"}, "to"),
        ({"kind": "move", "search": "x", "to": "q1"}, "to"),
        ({"kind": "move", "search": "x", "to": "q2", "rate": "0"}, "rate"),
        ({"kind": "move", "search": "x", "to": "q2", "canary": "5"}, "watch"),
        (
            {
                "kind": "move",
                "search": "x",
                "to": "q2",
                "canary": "5",
                "watch": "1",
                "max_bounce": "200",
            },
            "max_bounce",
        ),  # fmt: skip
        ({"kind": "visibility", "search": "x", "vt": "soon"}, "vt"),
        ({"kind": "requeue", "search": "x"}, "state"),
        ({"kind": "delete", "search": "x", "canary": "3", "watch": "1"}, "canary"),
        ({"kind": "delete", "search": "a\x00b"}, "search"),  # no database stores a NUL
        ({"kind": "move", "search": "x", "to": "q\x002"}, "to"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    console, queue, operator: Client, ns_state, data: dict, field: str
) -> None:
    before = ns_state()
    response = operator.post(console.queue("q1", "jobs/"), data)
    assert response.status_code == 400
    assert f'data-field="{field}"' in response.content.decode()
    assert not BulkJob.objects.exists()
    assert ns_state() == before
    assert AuditEntry.objects.get().outcome == "invalid"


def test_a_canary_larger_than_the_count_is_refused_at_the_confirmation(
    console, queue, operator: Client, rsmq: RedisSMQ, worker
) -> None:
    pk = start(operator, console, kind="move", to="q2", search="poison", canary="500", watch="1")
    assert wait_for(pk, {"counted"}).matched == 200
    response = operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    assert response.status_code == 400
    assert "canary must be at most the 200 matching messages" in response.content.decode()
    assert BulkJob.objects.get(pk=pk).state == "counted"
    assert rsmq.get_queue_attributes("q2").msgs == 0


ROLE_CASES = [
    # (what is posted, the least role that may)
    ({"kind": "delete", "search": "poison"}, "operator"),  # a filter's matches: a message action
    ({"kind": "delete", "state": "all"}, "admin"),  # every message of a state: whole-queue
    ({"kind": "move", "rc": "1", "to": "q2"}, "operator"),
    ({"kind": "visibility", "state": "visible", "vt": "30"}, "admin"),
    ({"kind": "redrive", "state": "visible", "to": "q2"}, "admin"),  # q1 is no dead-letter queue
]


@pytest.mark.parametrize(("data", "least"), ROLE_CASES)
@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_roles(
    console, queue, as_role: Callable[[str], Client], data: dict, least: str, role: str
) -> None:
    client = as_role(role)
    response = client.post(console.queue("q1", "jobs/"), data)
    allowed = ["viewer", "operator", "admin"].index(role) >= ["operator", "admin"].index(least) + 1
    if allowed:
        assert response.status_code == 302
        assert BulkJob.objects.get().username == client.user.username  # type: ignore[attr-defined]
        return
    assert response.status_code == 403
    assert not BulkJob.objects.exists()
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == (f"{data['kind']}_matches", "denied")


def test_a_viewer_can_not_confirm_nor_cancel(
    console, queue, operator: Client, viewer: Client, worker
) -> None:
    pk = start(operator, console, kind="delete", search="poison")
    wait_for(pk, {"counted"})
    page = viewer.get(console.queue("q1", f"jobs/{pk}/")).content.decode()
    assert "data-job-start" not in page
    for verb in ("confirm", "cancel"):
        assert (
            viewer.post(console.queue("q1", f"jobs/{pk}/{verb}/"), {"confirm": "q1"}).status_code
            == 403
        )
    assert BulkJob.objects.get(pk=pk).state == "counted"


GUIDE = Path(__file__).resolve().parents[3] / "docs" / "console.md"
#: each row of the guide's table of who may run a job → jobs it stands for
#: (kind, filter, whether the queue is a dead-letter queue)
GUIDE_ROWS = {
    "delete, requeue, change visibility or move what a filter narrows (received ≥ N, body "
    "contains)": [("delete", {"search": "x"}, False), ("requeue", {"state": "inflight",
                  "rc": "2"}, False), ("visibility", {"search": "x"}, False),
                  ("move", {"rc": "1"}, True)],
    "delete, requeue, change visibility or move every message of a state": [
        ("delete", {}, False), ("requeue", {"state": "hidden"}, False),
        ("visibility", {"state": "visible"}, False), ("move", {"state": "all"}, True)],
    "redrive from a dead-letter queue (one some queue's policy names)": [
        ("redrive", {}, True), ("redrive", {"search": "x"}, True)],
    "redrive from any other queue": [("redrive", {}, False), ("redrive", {"rc": "3"}, False)],
    "deliver now, shift or spread the delayed messages due in a window (the Coming due card)": [
        ("deliver", {"state": "delayed"}, False), ("shift", {}, False),
        ("spread", {"state": "delayed"}, True)],
}  # fmt: skip


def test_the_guides_table_of_who_may_run_a_job_is_what_the_console_checks() -> None:
    lines = GUIDE.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("| job | who may"))
    rows: dict[str, set[str]] = {}
    for line in lines[head + 2 :]:
        if not line.strip().startswith("|"):
            break
        what, who = (c.strip() for c in line.strip().strip("|").split("|"))
        rows[what] = {w.strip() for w in who.split(",")}
    assert set(rows) == set(GUIDE_ROWS)
    for what, cases in GUIDE_ROWS.items():
        for kind, params, dead in cases:
            least = jobs.role_for(kind, checked(params), dead)
            expected = {"operator", "admin"} if least == Role.OPERATOR else {"admin"}
            assert rows[what] == expected, (what, kind, params)


def test_a_queue_deleted_under_a_running_job_fails_it_saying_why(
    console, queue, operator: Client, rsmq: RedisSMQ, worker
) -> None:
    pk = start(operator, console, kind="move", to="q2", search="job", rate="50")
    assert wait_for(pk, {"counted"}).matched == 600
    operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    wait_for(pk, {"running"})
    time.sleep(0.3)
    rsmq.delete_queue("q2")
    job = wait_for(pk, {"failed"})
    assert "q2" in job.note and job.finished is not None
    end = AuditEntry.objects.get(action="move_matches", params__step="end")
    assert end.outcome == "error" and end.count == job.done


def _raw(r, ns: str, qname: str) -> tuple[dict, list]:
    return r.hgetall(f"{ns}:{qname}:Q"), r.zrange(f"{ns}:{qname}", 0, -1, withscores=True)


@pytest.mark.parametrize("kind", ["delete", "move"])
def test_a_jobs_page_and_its_end_audit_entry_offer_undo_which_puts_them_back(
    console, queue, operator: Client, admin: Client, rsmq: RedisSMQ, r, ns: str, worker, kind: str
) -> None:
    before = _raw(r, ns, "q1"), _raw(r, ns, "q2")
    pk = start(operator, console, kind=kind, search="poison", to="q2" if kind == "move" else "")
    assert wait_for(pk, {"counted"}).matched == 200
    counted = html.unescape(operator.get(console.queue("q1", f"jobs/{pk}/")).content.decode())
    assert "An admin can undo it within 24 h." in counted  # the operator's page: Undo is an admin's
    operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    assert wait_for(pk, {"done"}).done == 200
    assert rsmq.get_queue_attributes("q1").msgs == 400

    end = AuditEntry.objects.get(action=f"{kind}_matches", params__step="end")
    assert end.undo.count == 200 and end.undo.token  # type: ignore[attr-defined]
    token = end.undo.token  # type: ignore[attr-defined]
    page = admin.get(console.queue("q1", f"jobs/{pk}/")).content.decode()
    assert f'value="{token}"' in page and "data-undo" in page
    audit_page = admin.get("/audit/").content.decode()
    assert f'value="{token}"' in audit_page
    assert (
        f'value="{token}"' not in operator.get(console.queue("q1", f"jobs/{pk}/")).content.decode()
    )

    done = admin.post(
        console.act("q1"),
        {"action": "undo", "undo-token": token, "undo-confirm": "yes"},
    )
    assert done.status_code == 302, done.content.decode()[:300]
    assert (_raw(r, ns, "q1"), _raw(r, ns, "q2")) == before
    assert AuditEntry.objects.filter(action="undo", outcome="ok").count() == 1
    again = admin.get(console.queue("q1", f"jobs/{pk}/")).content.decode()
    assert "Undone" in again and f'value="{token}"' not in again


def test_a_job_past_the_undo_bound_says_it_cannot_be_undone_and_keeps_nothing(
    console, queue, operator: Client, rsmq: RedisSMQ, r, ns: str, worker, settings
) -> None:
    settings.RSMQ_UNDO_MAX_MB = 0.001  # 1 KiB: less than 200 messages
    pk = start(operator, console, kind="delete", search="poison")
    assert wait_for(pk, {"counted"}).matched == 200
    page = operator.get(console.queue("q1", f"jobs/{pk}/")).content.decode()
    assert "This cannot be undone" in page
    operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    assert wait_for(pk, {"done"}).done == 200
    end = AuditEntry.objects.get(action="delete_matches", params__step="end")
    assert not hasattr(end, "undo") or end.undo is None  # type: ignore[attr-defined]
    assert not list(r.scan_iter(f"{ns}:@undo:*"))


def test_a_requeue_job_keeps_no_stash(
    console, queue, admin: Client, rsmq: RedisSMQ, r, ns: str, worker
) -> None:
    rsmq.receive_messages("q1", 10, vt=1000)
    pk = start(admin, console, kind="requeue", state="hidden")
    assert wait_for(pk, {"counted"}).matched == 10
    assert "data-undo-note" not in admin.get(console.queue("q1", f"jobs/{pk}/")).content.decode()
    admin.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    assert wait_for(pk, {"done"}).done == 10
    assert not list(r.scan_iter(f"{ns}:@undo:*"))


def test_a_counted_jobs_page_shows_when_its_queue_is_gone_meanwhile(
    console, queue, operator: Client, rsmq: RedisSMQ, worker
) -> None:
    pk = start(operator, console, kind="delete", search="poison")
    assert wait_for(pk, {"counted"}).matched == 200
    rsmq.delete_queue("q1")
    page = operator.get(console.queue("q1", f"jobs/{pk}/"))
    assert page.status_code == 200 and "data-undo-note" in page.content.decode()


def test_a_job_whose_queue_was_created_again_since_its_count_refuses_to_run(
    console, queue, operator: Client, rsmq: RedisSMQ, worker
) -> None:
    """Its count was of another queue's messages: nothing of the new queue is touched."""
    pk = start(operator, console, kind="delete", search="poison")
    assert wait_for(pk, {"counted"}).matched == 200
    time.sleep(1.1)  # `created` is whole seconds
    rsmq.delete_queue("q1")
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["new poison 1", "new poison 2", "new poison 3"])
    response = operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    assert response.status_code == 400
    assert "was deleted and created again since it was counted" in response.content.decode()
    assert BulkJob.objects.get(pk=pk).state == "counted"
    assert rsmq.get_queue_attributes("q1").msgs == 3


def test_a_running_job_stops_when_its_queue_is_created_again(
    console, queue, operator: Client, rsmq: RedisSMQ, worker
) -> None:
    """Looked at before each step: the step after the queue came back acts on nothing."""
    pk = start(operator, console, kind="delete", search="job", rate="2")
    assert wait_for(pk, {"counted"}).matched == 600
    time.sleep(1.1)  # `created` is whole seconds
    operator.post(console.queue("q1", f"jobs/{pk}/confirm/"), {"confirm": "q1"})
    until = time.monotonic() + 10
    while BulkJob.objects.get(pk=pk).done == 0:  # its first step (1 at 2 a second) is done
        assert time.monotonic() < until
        time.sleep(0.01)
    rsmq.delete_queue("q1")
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["a new job 1", "a new job 2", "a new job 3"])
    job = wait_for(pk, {"failed"})
    assert "created again since it was counted" in job.note and job.done == 1
    assert rsmq.get_queue_attributes("q1").msgs == 3


def test_a_step_lost_with_its_task_is_queued_again_by_the_sweep_once(
    console, queue, operator: Client, rsmq: RedisSMQ, worker
) -> None:
    pk = start(operator, console, kind="delete", search="poison")
    assert wait_for(pk, {"counted"}).matched == 200
    # started, but its first step's task never reached the worker (lost with a restart)
    long_ago = timezone.now() - dt.timedelta(minutes=5)
    BulkJob.objects.filter(pk=pk).update(state="running", started=long_ago, due=long_ago)
    time.sleep(1)
    assert BulkJob.objects.get(pk=pk).done == 0
    assert jobs.sweep() == {"queued_again": 1, "abandoned": 0}
    jobs.sweep()  # twice: a duplicate step does nothing
    job = wait_for(pk, {"done"})
    assert (job.done, rsmq.get_queue_attributes("q1").msgs) == (200, 400)


def test_a_counted_job_never_confirmed_is_cancelled_by_the_sweep(
    console, queue, operator: Client, worker
) -> None:
    pk = start(operator, console, kind="delete", search="poison")
    wait_for(pk, {"counted"})
    BulkJob.objects.filter(pk=pk).update(updated=timezone.now() - dt.timedelta(hours=2))
    assert jobs.sweep()["abandoned"] == 1
    job = BulkJob.objects.get(pk=pk)
    assert job.state == "cancelled" and "Not confirmed within 1 h" in job.note
