"""The pipeline's results on the pages (rows as pipeline_runs loads them): open anomaly
flags on the overview, a queue's flags, hourly rollups and census on its page."""

from __future__ import annotations

import re

import pytest

from dashboard.models import AnomalyFlag, CensusResult, Rollup

pytestmark = pytest.mark.django_db

HOUR = 3_600_000


def flag(console, queue="q1", kind="oldest_age", start=0, end=None, ns=None,
         **figures) -> AnomalyFlag:  # fmt: skip
    figures = figures or {"oldest_age_max": 900.0, "slo": 300.0}
    return AnomalyFlag.objects.create(
        connection="default", namespace=ns or console.ns, queue=queue, kind=kind,
        start=start, end=end, intervals=3, figures=figures,
    )  # fmt: skip


def hour(console, start: int, queue="q1", **fields) -> Rollup:
    row = dict(
        snapshots=360, sent=3600, received=1800, seconds=3600.0, send_rate=1.0,
        receive_rate=0.5, backlog_avg=10.0, backlog_max=20, backlog_last=5, visible_min=0,
        visible_avg=4.0, visible_max=9, hidden_avg=1.0, hidden_max=2, inflight_avg=1.0,
        inflight_max=2, delayed_avg=0.0, delayed_max=0, oldest_age_max=42.0,
    )  # fmt: skip
    row.update(fields)
    return Rollup.objects.create(
        connection="default", namespace=console.ns, queue=queue, grain="hour",
        bucket_start=start, **row,
    )  # fmt: skip


@pytest.fixture
def now(console, queue) -> int:
    return console.rsmq.queue_stats([queue])[0].now


def test_the_overview_shows_open_flags_only(console, queue, now, viewer):
    flag(console, start=now - 600_000)
    flag(console, kind="consumers_stalled", start=now - HOUR, end=now - 60_000,
         visible_max=5.0, received=0.0)  # fmt: skip
    flag(console, queue="elsewhere", start=now, ns="other")
    page = viewer.get(console.overview()).content.decode()
    assert "Open flags by queue" in page
    assert "oldest message over its SLO" in page and "10 min ago" in page
    assert "consumers stalled" not in page and "elsewhere" not in page
    assert 'class="queue-flag sev-low"' in page


def test_the_overview_says_nothing_without_open_flags(console, queue, viewer):
    assert 'id="open-flags"' not in viewer.get(console.overview()).content.decode()


def test_the_queue_page_shows_its_flags_open_and_of_the_last_day(console, queue, now, viewer):
    flag(console, start=now - 600_000)
    flag(console, kind="backlog_growing", start=now - 3 * HOUR, end=now - 2 * HOUR,
         backlog_from=10.0, backlog_to=400.0)  # fmt: skip
    flag(console, kind="redelivery_storm", start=now - 50 * HOUR, end=now - 49 * HOUR,
         received=900.0, sent=10.0, receive_rate_max=5.0, redelivered=890.0)  # fmt: skip
    flag(console, queue="q2", start=now)
    page = viewer.get(console.queue()).content.decode()
    assert "oldest visible message 15 min old (SLO 5 min)" in page
    assert "10 → 400 messages over 3 minutes" in page
    assert "redelivery storm" not in page  # closed two days ago
    # The open one at the top of the page too, the closed one only with the rollups.
    top = page.split('id="open-flags"')[1].split("</section>")[0]
    assert "oldest message over its SLO" in top and "backlog growing" not in top
    assert page.count('class="flag ') == 3


def test_the_queue_page_shows_the_last_day_of_hours_latest_first(console, queue, now, viewer):
    for h in range(30):
        hour(console, now - (30 - h) * HOUR, sent=h)
    hour(console, now, queue="q2", sent=999)
    page = viewer.get(console.queue()).content.decode()
    sent = [int(s) for s in re.findall(r'title="(\d+) sent"', page)]
    assert sent == list(range(29, 5, -1))  # 24 hours


def test_the_queue_page_shows_the_census(console, queue, now, viewer):
    CensusResult.objects.create(
        connection="default", namespace=console.ns, queue="q1", read_at=now, messages=12,
        visible=10, inflight=1, delayed=1, rc_max=9, bytes=4096, size_max=900, age_max=60.0,
        histograms={"rc": [["0", 10], ["1", 1], ["5–9", 1]], "age": [["< 1 min", 12]],
                    "size": [["< 100 B", 12]]},
        poison=[{"id": "x" * 32, "rc": 9, "sent": now, "fr": now, "age": 61.0, "size": 900,
                 "state": "inflight"}],
        min_rc=5,
    )  # fmt: skip
    page = viewer.get(console.queue()).content.decode()
    assert "12 messages read" in page and "10 visible, 1 in flight, 1 delayed" in page
    assert '<th scope="row">5–9</th>' in page
    assert f'/q/q1/m/{"x" * 32}/"' in page and "Poison candidates (rc ≥ 5)" in page


def test_the_queue_page_says_when_the_pipeline_has_not_run(console, queue, viewer):
    page = viewer.get(console.queue()).content.decode()
    assert "Nothing from the Spark pipeline about this queue yet" in page


def test_a_live_refresh_of_the_queue_page_leaves_the_pipeline_out(console, queue, viewer, wire):
    flag(console)
    headers = console.htmx(target="live")
    page = viewer.get(console.queue("q1", "?state=all"), **headers).content.decode()
    assert "pipeline" not in page


def test_a_pipeline_run_replaces_its_own_flags_only(console, tmp_path) -> None:
    """The console's flags (opened at each snapshot) stay when a rollups run loads its
    flags in place of the pipeline's earlier ones."""
    from dashboard.analytics.runs import load_flags
    from dashboard.models import AnomalyFlag

    where = {"connection": "default", "namespace": console.ns, "queue": "q", "end": None,
             "intervals": 1, "start": 1}  # fmt: skip
    AnomalyFlag.objects.create(**where, kind="oldest_age", source="pipeline",
                               figures={"oldest_age_max": 900, "slo": 300})  # fmt: skip
    mine = AnomalyFlag.objects.create(**where, kind="consumers_stalled", source="console",
                                      figures={"visible_max": 5})  # fmt: skip
    assert load_flags(tmp_path) == 0  # a run that found nothing
    assert list(AnomalyFlag.objects.all()) == [mine]
