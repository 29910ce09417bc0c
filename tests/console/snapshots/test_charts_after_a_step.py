"""Charts and forecasts that do not mislead after a step (a 27,000-message import on a
165,000 backlog growing at 20/s): the backlog's axis fits the data, not 0; the time axis
spans the data's 25 minutes, not an hour with the data in its last part; the rate chart
draws the backlog's net change (in − out), below 0 when it drains; the drain forecast
reads the rate of the last minute (+20/s), not a line fitted across the step; the
overview's *Drains in* is a time or "never"."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.triage import forecast

pytestmark = pytest.mark.django_db

SEC = 1000


def _figure(page: str, title: str) -> str:
    start = page.index(f'<figure class="chart"><figcaption>{title}')
    return page[start : page.index("</figure>", start)]


@pytest.fixture
def stepped(settings, console, queue, add_snapshot, redis_now) -> int:
    """25 minutes of q1, a snapshot every 10 s: 165,000 + 20/s sent and never received,
    and 27,000 more imported at once 5 minutes ago. Returns now."""
    settings.RSMQ_SNAPSHOT_INTERVAL = 10
    settings.RSMQ_BACKLOG_WINDOW = 600
    now = redis_now()
    for i in range(151):
        t = 1500 - 10 * i  # seconds ago
        step = 27_000 if t <= 300 else 0
        msgs = 165_000 + 20 * (1500 - t) + step
        add_snapshot("q1", now - t * SEC, msgs=msgs, totalsent=msgs, oldest_age=float(1500 - t))
    return now


def test_the_drain_forecast_reads_the_last_minute_not_a_fit_across_the_step(
    console, stepped: int
) -> None:
    o = forecast.outlooks("default", console.ns, ["q1"], stepped)["q1"]
    assert o.drain is not None and o.drain.rate == pytest.approx(20.0)
    assert str(o.drain) == "never drains: growing +20/s" and o.drain.short == "never"


def test_the_backlog_axis_fits_the_data(console, stepped: int, viewer: Client) -> None:
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Backlog")
    bottom, top = map(float, re.search(r'data-axis="([\d.]+)-([\d.]+)"', figure).groups())
    assert 0 < bottom <= 165_000 and top >= 222_000 and top - bottom <= 100_000


def test_the_time_axis_spans_the_datas_25_minutes(console, stepped, viewer: Client) -> None:
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Backlog")
    xs = [
        float(x) for x in re.findall(r'<polyline class="line s-visible" points="([\d.]+),', figure)
    ]
    assert xs and xs[0] < 60  # the first point at the plot's left edge (46 px), not 25 min in


def test_the_rate_chart_draws_the_net_change(console, stepped: int, viewer: Client) -> None:
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Messages per second")
    assert 'class="line s-net"' in figure
    assert "net in − out <b>20/s</b>" in figure
    assert "net +2.7k/s (+27.2k)" in figure  # the import, in its 10 s


def test_a_draining_queues_net_goes_below_zero(console, queue, add_snapshot, redis_now, viewer):
    now = redis_now()
    for i in range(13):
        add_snapshot("q1", now - (12 - i) * 60 * SEC, msgs=30_000 - 1_200 * i,
                     totalsent=100_000, totalrecv=100_000 + 1_200 * i)  # fmt: skip
    figure = _figure(viewer.get(console.queue("q1")).content.decode(), "Messages per second")
    labels = re.findall(r'<text class="y"[^>]*>([^<]+)</text>', figure)
    assert labels[0].startswith("−") and labels[1] == "0/s"
    assert "net in − out <b>−20/s</b>" in figure
    page = viewer.get(console.overview()).content.decode()
    # 15,600 left at −20/s: 13 min, a time
    assert re.search(
        r'data-drain><span title="drains in ~13 min at −20/s[^"]*">~13 min</span>', page
    )
