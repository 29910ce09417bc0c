"""The charts of the queue page (backlog and rates over the last hour / day / week, from
snapshots) and the overview's rates and sparklines."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from dashboard.probes import health
from dashboard.snapshots.history import MAX_POINTS
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def history(settings, console, queue, add_snapshot, redis_now) -> int:
    """Ten minutes of q1 at one snapshot a minute: 6 messages sent and 3 received per
    minute, 4 visible, 2 in flight, 1 delayed at the end. Returns the last one's time."""
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    now = redis_now()
    for i in range(11):
        add_snapshot(
            "q1", now - (10 - i) * 60_000, msgs=7, hiddenmsgs=3, inflight=2, delayed=1,
            totalsent=6 * i, totalrecv=3 * i, oldest_age=5.0,
        )  # fmt: skip
    return now


def _legend(page: str) -> dict[str, str]:
    return dict(re.findall(r'<span class="swatch s-\w+"></span>([\w −]+) <b>([^<]+)</b>', page))


def test_it_draws_the_backlog_and_the_rates(console, history, viewer: Client) -> None:
    page = viewer.get(console.queue("q1")).content.decode()
    assert page.count('<figure class="chart">') == 2
    assert _legend(page) == {
        "visible": "4",
        "in flight": "2",
        "delayed": "1",
        "sent": "0.1/s",  # 6 a minute
        "received": "0.05/s",
        "net in − out": "0/s",  # the backlog held its 7 messages
    }
    # One point per snapshot for each backlog line; a step per interval for each rate.
    lines = re.findall(r'<polyline class="line (s-\w+)" points="([^"]+)"', page)
    points = {css: len(pts.split()) for css, pts in lines}
    assert points == {"s-visible": 11, "s-inflight": 11, "s-delayed": 11,
                      "s-sent": 20, "s-received": 20, "s-net": 20}  # fmt: skip


def test_it_labels_the_charts_for_screen_readers(console, history, viewer: Client) -> None:
    page = viewer.get(console.queue("q1")).content.decode()
    assert 'aria-label="Backlog: visible 4, in flight 2, delayed 1"' in page
    assert 'aria-label="Messages per second: sent 0.1/s, received 0.05/s, net in − out 0/s"' in page


def test_it_shows_the_last_hour_by_default_with_a_range_selector(
    console, history, viewer: Client
) -> None:
    page = viewer.get(console.queue("q1")).content.decode()
    ranges = re.findall(r'<a href="\?range=(\w+)"[^>]*class="(active)?"', page)
    assert ranges == [("hour", "active"), ("day", ""), ("week", "")]


def test_it_leaves_out_snapshots_older_than_the_range(
    console, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    now = redis_now()
    add_snapshot("q1", now - 2 * 3600_000, msgs=100, hiddenmsgs=0)  # two hours ago
    add_snapshot("q1", now - 60_000, msgs=3)
    add_snapshot("q1", now - 1000, msgs=5)
    hour = viewer.get(console.queue("q1")).content.decode()
    assert "max 5</small>" in hour
    day = viewer.get(console.queue("q1", "?range=day")).content.decode()
    assert "max 100</small>" in day


def test_it_draws_long_ranges_in_buckets(
    console, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    now = redis_now()
    n = MAX_POINTS + 100
    for i in range(n):  # a snapshot every 10 s, sent 1 each: 0.1/s throughout
        add_snapshot("q1", now - (n - i) * 10_000, msgs=i % 50, totalsent=i)
    page = viewer.get(console.queue("q1", "?range=day")).content.decode()
    assert "one point per 4 min" in page  # a day over 400 points: 216 s
    visible = re.search(r'<polyline class="line s-visible" points="([^"]+)"', page)[1]
    assert len(visible.split()) < MAX_POINTS
    assert _legend(page)["sent"] == "0.1/s"
    assert "max 49</small>" in page  # the largest in each bucket: peaks stay


def test_it_breaks_the_lines_where_snapshots_are_missing(
    console, settings, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 60
    now = redis_now()
    for at in (30, 29, 28, 5, 4, 3):  # minutes ago: the worker was down in between
        add_snapshot("q1", now - at * 60_000, msgs=1)
    page = viewer.get(console.queue("q1")).content.decode()
    assert page.count('<polyline class="line s-visible"') == 2


def test_it_says_when_there_are_no_snapshots(console, queue, viewer: Client) -> None:
    page = viewer.get(console.queue("q1")).content.decode()
    assert "No snapshot of this queue in the last hour" in page
    assert "Celery worker and beat" in page
    assert '<figure class="chart">' not in page


def test_it_says_when_snapshots_stopped(
    console, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    add_snapshot("q1", redis_now() - 20 * 60_000, msgs=1)
    page = viewer.get(console.queue("q1")).content.decode()
    assert re.search(r"No snapshot since <time [^>]*>20 min ago</time>", page)
    assert page.count('<figure class="chart">') == 2  # what there is, is still shown


def test_it_serves_the_charts_alone_to_htmx(console, history, viewer: Client) -> None:
    response = viewer.get(
        console.queue("q1", "charts/?range=day"),
        **console.htmx(current=console.queue("q1", "?state=inflight")),
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="charts"')
    assert "<header" not in page and 'id="live"' not in page
    assert re.search(r'class="active" aria-current="true">last day<', page)
    # The links keep the page's own query: reloading shows the same tab and range.
    assert 'href="?state=inflight&amp;range=week"' in page


def test_it_sends_a_plain_request_for_the_charts_to_the_page(
    console, queue, viewer: Client
) -> None:
    response = viewer.get(console.queue("q1", "charts/?range=week"))
    assert response.status_code == 302
    assert response["Location"] == console.queue("q1", "?range=week")
    bad = viewer.get(console.queue("q1", "charts/?range=<script>"))
    assert bad["Location"] == console.queue("q1")


def test_it_refreshes_the_charts_once_per_snapshot_at_most(
    console, settings, history, viewer: Client
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 10
    page = viewer.get(console.queue("q1")).content.decode()
    assert re.search(r'id="charts"[^>]*hx-trigger="every 10s" data-poll', page)
    settings.RSMQ_REFRESH_SECONDS = 0  # live refresh off: the charts stay too
    page = viewer.get(console.queue("q1")).content.decode()
    assert not re.search(r'id="charts"[^>]*hx-trigger', page)


def test_the_live_refresh_does_not_read_snapshots(
    console, history, viewer: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not even the banner's newest-snapshot check, which a page makes when its cached
    # answer is older than a few seconds: the refresh renders no banner.
    monkeypatch.setattr(health, "_cache", (0.0, None))
    with CaptureQueriesContext(connection) as queries:
        response = viewer.get(console.queue("q1"), **console.htmx(target="live"))
    assert response.status_code == 200
    assert not [q for q in queries if "dashboard_snapshot" in q["sql"]]


def test_it_needs_the_viewer_role_for_the_charts(console, queue, outsider: Client) -> None:
    response = outsider.get(console.queue("q1", "charts/"), **console.htmx())
    assert response.status_code == 403


def test_it_sends_the_page_to_its_404_when_the_queue_is_gone(console, viewer: Client) -> None:
    current = console.queue("gone")
    response = viewer.get(console.queue("gone", "charts/"), **console.htmx(current=current))
    assert response.status_code == 204
    assert response["HX-Redirect"] == current


# -- overview ------------------------------------------------------------------------------


def _cells(page: str, qname: str) -> str:
    return re.search(rf">{qname}</a>.*?</td>(.*?)</tr>", page, re.S)[1]


def test_the_overview_shows_each_queues_rates_over_the_last_minute(
    console, queue, add_snapshot, redis_now, rsmq: RedisSMQ, viewer: Client
) -> None:
    rsmq.create_queue("q2")
    now = redis_now()
    add_snapshot("q1", now - 300_000, totalsent=0, totalrecv=0)
    add_snapshot("q1", now - 70_000, totalsent=100, totalrecv=0)  # the one before the minute
    add_snapshot("q1", now - 40_000, totalsent=190, totalrecv=30)
    add_snapshot("q1", now - 10_000, totalsent=280, totalrecv=60)  # 180 and 60 in 60 s
    page = viewer.get(console.overview()).content.decode()
    q1_cells = _cells(page, "q1")
    assert '<td class="num" data-rate="send">3/s</td>' in q1_cells
    assert '<td class="num" data-rate="receive">1/s</td>' in q1_cells
    assert '<svg class="spark"' in q1_cells
    q2_cells = _cells(page, "q2")  # no snapshot yet
    assert '<td class="num" data-rate="send">–</td>' in q2_cells
    assert '<svg class="spark"' not in q2_cells


def test_the_overview_sparkline_spans_the_last_hour(
    console, settings, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 1800  # so one line joins the two
    now = redis_now()
    add_snapshot("q1", now - 2 * 3600_000, msgs=99)  # older: left out
    add_snapshot("q1", now - 3600_000 + 1000, msgs=0)
    add_snapshot("q1", now - 1000, msgs=10)
    page = viewer.get(console.overview()).content.decode()
    spark = re.search(r'<svg class="spark".*?</svg>', _cells(page, "q1"), re.S)[0]
    assert 'aria-label="Messages over the last hour: 0 to 10"' in spark
    [points] = re.findall(r'<polyline [^>]*points="([^"]+)"', spark)
    (x0, y0), (x1, y1) = (tuple(map(float, p.split(","))) for p in points.split())
    assert x0 == pytest.approx(0, abs=0.5) and x1 == pytest.approx(100, abs=0.5)
    assert y0 > y1  # 0 at the bottom, 10 at the top


def test_the_overview_sparkline_draws_snapshots_taken_every_10_s(
    console, settings, queue, add_snapshot, redis_now, viewer: Client
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 10  # the default: points are per-minute peaks
    now = redis_now()
    for i in range(30):  # the last five minutes
        add_snapshot("q1", now - (30 - i) * 10_000, msgs=i)
    page = viewer.get(console.overview()).content.decode()
    spark = re.search(r'<svg class="spark".*?</svg>', _cells(page, "q1"), re.S)[0]
    [points] = re.findall(r'<polyline [^>]*points="([^"]+)"', spark)
    assert len(points.split()) >= 5  # one joined line, a point a minute


def test_the_overview_reads_the_snapshots_of_its_page_only(
    console, settings, rsmq: RedisSMQ, add_snapshot, redis_now, viewer: Client
) -> None:
    settings.RSMQ_PAGE_SIZE = 2
    for name in ("a", "b", "c"):
        rsmq.create_queue(name)
        add_snapshot(name, redis_now() - 1000, msgs=1)
    response = viewer.get(console.overview())
    assert set(response.context["trends"]) == {"a", "b"}
