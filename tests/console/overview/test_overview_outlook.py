"""The overview's time columns: each queue's latest wait p95 and its drain estimate
(from its snapshots, dashboard/triage/forecast.py), sortable, hidden on a phone's width."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db

MIN = 60_000


def _names(response) -> list[str]:
    return [s.qname for s in response.context["stats"]]


def _cell(page: str, qname: str, attr: str) -> str:
    row = re.search(rf'<a href="[^"]*/q/{qname}/">{qname}</a>.*?</tr>', page, re.S)[0]
    cell = re.search(rf"<td [^>]*{attr}>(.*?)</td>", row, re.S)[1]
    return re.sub(r"<[^>]+>", "", cell).strip()


@pytest.fixture
def histories(console, rsmq: RedisSMQ, add_snapshot, redis_now, settings) -> None:
    """drains (24,000 at -20/s), grows (+3/s), quiet (flat), none (no snapshots)."""
    settings.RSMQ_BACKLOG_WINDOW = 600
    now = redis_now()
    for q in ("drains", "grows", "quiet", "none"):
        rsmq.create_queue(q)
    for i in range(6):
        at = now - (5 - i) * MIN
        add_snapshot("drains", at, msgs=30_000 - 1_200 * i, wait_p50=1.0, wait_p95=9.5,
                     wait_p99=12.0, wait_samples=100)  # fmt: skip
        add_snapshot("grows", at, msgs=1_000 + 180 * i, wait_p50=0.1, wait_p95=0.25,
                     wait_p99=0.5, wait_samples=7, timings_sampled=True)  # fmt: skip
        add_snapshot("quiet", at, msgs=5)


def test_it_shows_each_queues_wait_p95_and_drain(console, histories, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert _cell(page, "drains", "data-wait-p95") == "9.5 s"
    assert _cell(page, "drains", "data-drain") == "~20 min"
    assert _cell(page, "grows", "data-wait-p95") == "0.25 s"
    assert _cell(page, "grows", "data-drain") == "never"
    assert 'title="never drains: growing +3/s"' in page
    assert "7 messages, sampled" in page
    assert _cell(page, "quiet", "data-drain") == "–"  # flat: nothing said
    assert _cell(page, "none", "data-wait-p95") == "–"


def test_the_time_columns_sort(console, histories, viewer: Client) -> None:
    by_wait = viewer.get(console.overview("?sort=-wait"))
    assert _names(by_wait) == ["drains", "grows", "quiet", "none"][:2] + ["quiet", "none"]
    assert _names(viewer.get(console.overview("?sort=wait")))[-2:] == ["grows", "drains"]
    # longest to drain last; not draining after every draining one
    assert _names(viewer.get(console.overview("?sort=drain"))) == [
        "none",
        "quiet",
        "drains",
        "grows",
    ]
    assert _names(viewer.get(console.overview("?sort=-drain")))[:2] == ["grows", "drains"]
    page = viewer.get(console.overview("?sort=-drain")).content.decode()
    assert re.search(
        r'<th class="num col-low sorted" scope="col" aria-sort="descending">\s*'
        r'<a href="\?sort=drain">Drains in',
        page,
    )


def test_the_time_columns_are_the_ones_a_phone_leaves_out(
    console, histories, viewer: Client
) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert page.count('class="num col-low"') == 2 * 4 + 2  # two per row, and a header each
    css = (Path(__file__).parents[3] / "static/css/console.css").read_text()
    assert "@media (max-width: 700px) { .grid.queues .col-low { display: none; } }" in css


@pytest.mark.parametrize("sort", ["wait", "-wait", "drain", "-drain"])
def test_a_big_namespace_sorts_by_the_outlooks_its_snapshot_stored(
    console, histories, rsmq: RedisSMQ, viewer: Client, wire, monkeypatch, sort: str
) -> None:
    """Past LIVE_MAX queues the time columns sort by what the snapshot judged (each
    queue's wait p95 and drain key on its condition row), in the order a small namespace
    gets live, reading only the page's counters."""
    from dashboard.models import QueueCondition
    from dashboard.snapshots import latest
    from dashboard.triage import conditions, forecast

    live = _names(viewer.get(console.overview(f"?sort={sort}")))
    stats = rsmq.queue_stats()
    conditions.update("default", console.ns, stats, rsmq)
    stored = dict(
        QueueCondition.objects.filter(namespace=console.ns).values_list(
            "queue", "drain_key" if "drain" in sort else "wait_p95"
        )
    )
    expected = forecast.outlooks("default", console.ns, None, max(s.now for s in stats))
    assert stored == {
        q: (getattr(expected[q], "drain_key" if "drain" in sort else "wait_key") if q in expected
            else None)
        for q in ("drains", "grows", "quiet", "none")
    }  # fmt: skip
    assert stored["grows" if "drain" in sort else "drains"] == (
        forecast.DRAIN_NEVER if "drain" in sort else 9.5
    )
    monkeypatch.setattr(latest, "LIVE_MAX", 1)
    monkeypatch.setattr(latest, "last_run", lambda c, n: (1, _rows(console.ns)))
    wire.sends = 0

    big = viewer.get(console.overview(f"?sort={sort}"))

    assert b"Sorted by the snapshot of" in big.content
    assert wire.sends <= 3
    got = _names(big)
    # the same order, queues without an outlook together (first ascending, last
    # descending), tied by name in either direction
    unknown = {q for q, v in stored.items() if v is None}
    assert [q for q in got if q not in unknown] == [q for q in live if q not in unknown]
    ends = got[: len(unknown)] if not sort.startswith("-") else got[len(got) - len(unknown) :]
    assert set(ends) == unknown


def _rows(ns: str):
    from dashboard.models import Snapshot

    return Snapshot.objects.filter(namespace=ns)
