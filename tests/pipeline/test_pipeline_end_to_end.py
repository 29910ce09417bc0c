"""The pipeline in the console, end to end: snapshots taken by the real snapshot run
(dashboard/snapshots/runs.py take, as the Celery task does) → ``manage.py pipeline rollups`` →
rows in the database and on the queue page and the overview; the census the same way;
the command without Java; beat's task starting a run without waiting for it."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from dashboard import tasks
from dashboard.analytics import runs as pipeline_runs
from dashboard.models import AnomalyFlag, CensusResult, Rollup
from dashboard.snapshots import locks
from dashboard.triage.conditions import take_snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def pipeline_dir(settings, tmp_path: Path) -> Path:
    settings.RSMQ_PIPELINE_DIR = tmp_path / "pipeline"
    return settings.RSMQ_PIPELINE_DIR


def pipeline(*args: str) -> dict:
    out = io.StringIO()
    call_command("pipeline", *args, stdout=out)
    return json.loads(out.getvalue())


def test_snapshots_rolled_up_show_on_the_queue_page_and_the_overview(
    spark, console, lake, pipeline_dir, settings, viewer
):
    settings.RSMQ_OLDEST_AGE_SLOS = {"q1": 0}  # any visible message is too old: a flag
    rsmq = console.rsmq
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    take_snapshot()
    rsmq.send_messages("q1", ["job"] * 30)
    rsmq.receive_messages("q1", 10)
    time.sleep(0.05)  # the oldest visible message has an age
    take_snapshot()

    result = pipeline("rollups")
    assert (result["new_files"], result["flags_loaded"]) == (2, 1)
    q1 = Rollup.objects.filter(namespace=console.ns, queue="q1", grain="hour")
    assert (sum(h.sent for h in q1), sum(h.received for h in q1)) == (30, 10)
    assert Rollup.objects.filter(namespace=console.ns, queue="q2").count() >= 1
    flag = AnomalyFlag.objects.get()
    assert (flag.queue, flag.kind, flag.open) == ("q1", "oldest_age", True)

    page = viewer.get(console.queue("q1")).content.decode()
    assert 'title="30 sent"' in page and 'title="10 received"' in page
    assert "oldest message over its SLO" in page and "(SLO 0 s)" in page
    overview = viewer.get(console.overview()).content.decode()
    assert 'id="open-flags"' in overview and 'class="queue-flag sev-low"' in overview

    # Hourly by beat: the next run, with nothing new in the lake, changes nothing.
    assert pipeline("rollups")["new_files"] == 0
    assert Rollup.objects.filter(namespace=console.ns, queue="q1").count() == q1.count()


def test_a_census_shows_on_the_queue_page(spark, console, lake, pipeline_dir, settings, viewer):
    rsmq = console.rsmq
    rsmq.create_queue("q1", vt=0)
    poison = rsmq.send_message("q1", "fails every time")
    for _ in range(6):  # vt 0: visible again at once
        rsmq.receive_message("q1")
    rsmq.send_messages("q1", ["fine"] * 4)

    assert pipeline("census", "--namespace", console.ns) == {
        "queues": 1, "messages": 5, "poison": 1
    }  # fmt: skip
    census = CensusResult.objects.get(namespace=console.ns, queue="q1")
    assert (census.messages, census.rc_max, census.min_rc) == (5, 6, 5)
    assert census.histograms["rc"][0] == ["0", 4]
    assert [p["id"] for p in census.poison] == [poison]

    page = viewer.get(console.queue("q1")).content.decode()
    assert "5 messages read" in page
    assert f'/q/q1/m/{poison}/">{poison}</a>' in page
    assert "Receive count (rc)" in page and "5–9" in page


def test_a_census_of_one_queue_leaves_the_others_as_they_were(spark, console, lake, pipeline_dir):
    rsmq = console.rsmq
    for q in ("q1", "q2"):
        rsmq.create_queue(q)
        rsmq.send_message(q, "x")
    pipeline("census")
    rsmq.send_message("q2", "y")
    pipeline("census", "--queue", "q2")
    counts = dict(CensusResult.objects.values_list("queue", "messages"))
    assert counts == {"q1": 1, "q2": 2}


def test_without_java_the_command_says_what_to_install(console, pipeline_dir, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    with pytest.raises(CommandError) as e:
        call_command("pipeline", "rollups")
    assert "needs Java 17+" in str(e.value) and "openjdk-17-jre-headless" in str(e.value)
    assert "\n" not in str(e.value)


def test_beat_runs_rollups_hourly_by_default():
    entry = django_settings.CELERY_BEAT_SCHEDULE["pipeline-rollups"]
    assert (entry["task"], entry["schedule"]) == ("dashboard.tasks.pipeline_rollups", 3600.0)


def test_the_task_starts_a_run_and_returns_at_once(pipeline_dir, lake, monkeypatch, tmp_path):
    done = tmp_path / "done"
    slow = [
        sys.executable,
        "-c",
        f"import time, pathlib; time.sleep(1); pathlib.Path({str(done)!r}).touch()",
    ]
    monkeypatch.setattr(pipeline_runs, "command", lambda job: slow)
    t0 = time.monotonic()
    result = tasks.pipeline_rollups()
    assert result["started"] and time.monotonic() - t0 < 0.5 and not done.exists()
    deadline = time.monotonic() + 10
    while not done.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert done.exists()


def test_the_task_starts_nothing_while_a_run_is_going_on(pipeline_dir, lake, monkeypatch):
    monkeypatch.setattr(pipeline_runs, "command", lambda job: pytest.fail("started"))
    with locks.only_one(pipeline_runs.lock_name("rollups"), 60):
        assert tasks.pipeline_rollups() == {"started": False, "reason": "a run is going on"}
