"""Bulk jobs never stop the console's heartbeat: on one real Celery worker (in this
process, solo: ./run's one task at a time) with a real `celery beat` process, a job at
0.01 messages a second, a paused job and a busy one exist while the snapshots stay under
two intervals old for a minute — each job is a chain of short steps, none sleeps in its
task, and a paused one has none queued. Meanwhile the live jobs reach the cap: the 51st
is refused, on the page and by the API, naming it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError
from django.db.models import Max
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry, BulkJob, Snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]
INTERVAL = 2  # s between snapshots, beat's and the worker's
WATCHED = 60  # s the snapshots' age is watched


@pytest.fixture
def beat(
    worker, lake: Path, settings, broker_url: str, tmp_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    settings.RSMQ_SNAPSHOT_INTERVAL = INTERVAL
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings",
        "CELERY_BROKER_URL": broker_url, "RSMQ_SNAPSHOT_INTERVAL": str(INTERVAL),
        "RSMQ_DATA_DIR": str(tmp_path),
    }  # fmt: skip
    log = (tmp_path / "beat.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "--app", "dashboard.beat", "beat", "--loglevel", "INFO",
         "--schedule", str(tmp_path / "beat-schedule")],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    yield process
    process.terminate()
    process.wait(timeout=10)
    log.close()


def retried(read: Callable[[], Any]) -> Any:
    """A read of the test database (SQLite's shared cache, which the worker's thread
    writes: a read that meets its write fails at once rather than waiting)."""
    for _ in range(200):
        try:
            return read()
        except OperationalError as e:
            if "locked" not in str(e):
                raise
            time.sleep(0.02)
    raise AssertionError("the database stayed locked for 4 s")


def job(pk: int) -> BulkJob:
    return retried(lambda: BulkJob.objects.get(pk=pk))


def wait_for(pk: int, states: set[str], timeout: float = 30) -> BulkJob:
    until = time.monotonic() + timeout
    while (found := job(pk)).state not in states:
        assert time.monotonic() < until, (found.state, found.phase, found.done, found.note)
        time.sleep(0.05)
    return found


def start(client: Client, console, qname: str, confirm: bool = True, **data: str) -> int:
    response = client.post(console.queue(qname, "jobs/"), data)
    assert response.status_code == 302, response.content.decode()[:500]
    m = re.search(r"/jobs/(\d+)/$", response["Location"])
    assert m
    pk = int(m.group(1))
    if confirm:
        wait_for(pk, {"counted"})
        ok = client.post(console.queue(qname, f"jobs/{pk}/confirm/"), {"confirm": qname})
        assert ok.status_code == 302
    return pk


def test_jobs_never_hold_the_snapshots_back_and_the_51st_is_refused(
    console, settings, beat, operator: Client, rsmq: RedisSMQ, redis_now
) -> None:
    settings.RSMQ_JOBS_PER_USER = settings.RSMQ_JOBS_PER_QUEUE = 1000  # the cap in all
    assert settings.RSMQ_JOBS_MAX == 50
    for q in ("slow", "held", "busy", "dest", "many"):
        rsmq.create_queue(q)
    rsmq.send_messages("slow", [f"slow {i}" for i in range(100)])
    rsmq.send_messages("held", [f"held {i}" for i in range(500)])
    for k in range(0, 30_000, 10_000):
        rsmq.send_messages("busy", [f"busy {i}" for i in range(k, k + 10_000)])
    rsmq.send_messages("many", [f"m {i}" for i in range(20)])

    slow = start(operator, console, "slow", kind="move", to="dest", search="slow", rate="0.01")
    held = start(operator, console, "held", kind="move", to="dest", search="held", rate="50")
    wait_for(held, {"running"})
    operator.post(console.queue("held", f"jobs/{held}/pause/"))
    paused = wait_for(held, {"paused"})
    busy = start(operator, console, "busy", kind="move", to="dest", search="busy", rate="400")

    first = time.monotonic()
    newest = lambda: retried(lambda: Snapshot.objects.aggregate(m=Max("taken_at"))["m"])  # noqa: E731
    while newest() is None:
        assert time.monotonic() - first < 30, "no snapshot within 30 s"
        time.sleep(0.1)
    ages: list[float] = []
    counted: list[int] = []
    watched_from = time.monotonic()
    while time.monotonic() - watched_from < WATCHED:
        ages.append((redis_now() - newest()) / 1000)
        if 3 + len(counted) < 50:  # the live jobs, up to the cap: counting, then counted
            counted.append(start(operator, console, "many", confirm=False, kind="delete",
                                 search="m"))  # fmt: skip
        time.sleep(0.25)
    snapshots = retried(lambda: Snapshot.objects.filter(queue="busy").count())

    # the heartbeat: never two intervals behind, one about every interval
    assert max(ages) < 2 * INTERVAL, sorted(ages)[-10:]
    assert snapshots >= 0.7 * WATCHED / INTERVAL, snapshots
    # the slow job did its first message and waits for the next (100 s later) holding
    # nothing; the paused one did nothing more; the busy one went on beside them
    assert job(slow).state == "running" and job(slow).done == 1
    assert (job(held).state, job(held).done) == ("paused", paused.done)
    assert rsmq.get_queue_attributes("held").msgs == 500 - paused.done
    assert job(busy).state == "running" and job(busy).done > 10_000

    # 50 live jobs: the 51st is refused, naming the cap, on the page and by the API
    assert retried(lambda: BulkJob.objects.filter(finished__isnull=True).count()) == 50
    page = operator.post(console.queue("many", "jobs/"), {"kind": "delete", "search": "m"})
    assert page.status_code == 409
    assert "50 live jobs in all already, the most allowed (RSMQ_JOBS_MAX)" in page.content.decode()
    _, token = tokens.mint("bot", "operator", "test", 1000)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}").post(
        "/api/queues/many/jobs/", {"kind": "delete", "search": "m"}, content_type="application/json"
    )
    assert api.status_code == 409 and "RSMQ_JOBS_MAX" in api.json()["error"]
    assert retried(lambda: BulkJob.objects.count()) == 50
    refused = retried(lambda: AuditEntry.objects.filter(detail__contains="RSMQ_JOBS_MAX").count())
    assert refused == 2

    # a paused job is cancelled at once (no step of it is queued to see the word)
    operator.post(console.queue("held", f"jobs/{held}/cancel/"))
    assert job(held).state == "cancelled"
    end = retried(lambda: AuditEntry.objects.get(action="move_matches", params__job=held,
                                                 params__step="end"))  # fmt: skip
    assert end.count == paused.done and "cancelled" in end.detail
    for pk in (slow, busy):
        operator.post(console.queue("slow" if pk == slow else "busy", f"jobs/{pk}/cancel/"))
    for pk in (slow, busy):
        assert wait_for(pk, {"cancelled", "done"}, timeout=15)
