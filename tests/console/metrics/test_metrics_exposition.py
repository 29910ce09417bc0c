"""/metrics at scale: the per-queue series written by dashboard/probes/exposition.py are byte for
byte what prometheus_client writes; a big namespace is served from its last snapshot and
says how old it is; a small one is read live."""

from __future__ import annotations

import pytest
from django.db.models import F
from django.test import Client
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from support.metrics_scrape import scrape

from dashboard.models import Snapshot
from dashboard.probes.exposition import Family, labels, render
from dashboard.probes.metrics import FAMILIES, QueueRow, place_labels
from dashboard.snapshots import latest
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ
from queues.models import QueueStats

# Label values the text format must escape: quote, backslash, newline; and UTF-8.
PLACES = [("main", "rsmq"), ('we"ird\\conn\nname', "ns-ü")]


def stats(qname: str, n: int) -> QueueStats:
    return QueueStats(
        qname=qname, vt=30, delay=0, maxsize=65536, totalsent=n * 1_000_003, totalrecv=n,
        created=1_763_683_200 + n, modified=0, msgs=n, visible=n // 2, hidden=n - n // 2,
        inflight=n // 3, delayed=n - n // 2 - n // 3, oldest_sent=None if n % 2 else 1e12,
        now=1_000_000_000_000 + n * 1234,
    )  # fmt: skip


def library(rows: list[tuple[str, str, QueueStats]]) -> bytes:
    """The same families through prometheus_client: the reference."""

    class Collector:
        def collect(self) -> list[Metric]:
            out: list[Metric] = []
            for f in FAMILIES:
                kind = CounterMetricFamily if f.type == "counter" else GaugeMetricFamily
                family = kind(f.name, f.doc, labels=["connection", "namespace", "queue"])
                for conn, ns, s in rows:
                    value = getattr(QueueRow.of_stats(place_labels(conn, ns), s), f.field)
                    if f.type == "counter":
                        family.add_metric([conn, ns, s.qname], value, created=s.created)
                    else:
                        family.add_metric([conn, ns, s.qname], value)
                out.append(family)
            return out

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    return generate_latest(registry)


@pytest.mark.parametrize("n", [0, 1, 250])
def test_the_queues_series_are_what_prometheus_client_writes(n: int) -> None:
    rows = [(c, ns, stats(f"q-{i}", i * 7919)) for i in range(n) for c, ns in PLACES]
    ours = render(FAMILIES, [QueueRow.of_stats(place_labels(c, ns), s) for c, ns, s in rows])
    assert "".join(ours).encode() == library(rows)


def test_labels_are_sorted_and_escaped_as_the_text_format_wants() -> None:
    assert labels(queue="q", connection='a"b\\c\nd') == r'connection="a\"b\\c\nd",queue="q"'


def test_a_counter_without_series_has_no_created_family() -> None:
    text = "".join(render([Family("x", "doc", "counter", "msgs")], []))
    assert text == "# HELP x_total doc\n# TYPE x_total counter\n"


# -- served from the snapshot ---------------------------------------------------------------


@pytest.fixture
def big(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(latest, "LIVE_MAX", 2)


@pytest.fixture
def five(console, lake, rsmq: RedisSMQ) -> RedisSMQ:
    for i in range(5):
        rsmq.create_queue(f"q{i}")
        rsmq.send_messages(f"q{i}", ["m"] * i)
    return rsmq


@pytest.mark.django_db
def test_a_big_namespace_is_served_from_its_last_snapshot(console, token, big, five) -> None:
    run = take_snapshot()
    assert run.rows == 5
    five.send_messages("q4", ["new"] * 10)  # after the snapshot: not in this scrape

    samples = scrape(Client())

    place = ("default", console.ns)
    assert samples[("rsmq_queue_messages", (*place, "q4"))] == 4
    assert samples[("rsmq_queue_visible_messages", (*place, "q3"))] == 3
    assert samples[("rsmq_queue_sent_total", (*place, "q4"))] == 4
    assert samples[("rsmq_up", (*place, ""))] == 1
    assert 0 <= samples[("rsmq_stats_age_seconds", (*place, ""))] < 60


@pytest.mark.django_db
def test_a_big_namespace_whose_snapshots_stopped_is_read_live(
    console, token, big, five, settings
) -> None:
    take_snapshot()
    five.send_messages("q4", ["new"] * 10)
    # Older than three intervals (at least a minute): snapshots aren't running.
    stale_ms = 1000 * 2 * max(60, 3 * settings.RSMQ_SNAPSHOT_INTERVAL)
    Snapshot.objects.update(taken_at=F("taken_at") - stale_ms)
    samples = scrape(Client())
    place = ("default", console.ns)
    assert samples[("rsmq_queue_messages", (*place, "q4"))] == 14
    assert samples[("rsmq_stats_age_seconds", (*place, ""))] == 0


@pytest.mark.django_db
def test_a_small_namespace_is_read_live(console, token, five) -> None:
    take_snapshot()
    five.send_messages("q4", ["new"] * 10)
    samples = scrape(Client())
    place = ("default", console.ns)
    assert samples[("rsmq_queue_messages", (*place, "q4"))] == 14
    assert samples[("rsmq_stats_age_seconds", (*place, ""))] == 0
