"""/metrics' wait and processing percentiles and forecasts, from the snapshots."""

from __future__ import annotations

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from support.metrics_scrape import TOKEN, scrape

from queues import RedisSMQ

pytestmark = pytest.mark.django_db

MIN = 60_000


@pytest.fixture
def histories(console, rsmq: RedisSMQ, add_snapshot, redis_now, settings) -> None:
    settings.RSMQ_BACKLOG_WINDOW = 600
    settings.RSMQ_OLDEST_AGE_SLO = 300
    now = redis_now()
    for q in ("drains", "grows", "quiet"):
        rsmq.create_queue(q)
    for i in range(6):
        at = now - (5 - i) * MIN
        add_snapshot("drains", at, msgs=30_000 - 1_200 * i, oldest_age=10.0 + 30 * i,
                     wait_p50=1.0, wait_p95=9.5, wait_p99=12.0, wait_samples=100,
                     processing_p50=0.1, processing_p95=0.3, processing_p99=0.9,
                     processing_samples=80)  # fmt: skip
        add_snapshot("grows", at, msgs=1_000 + 180 * i)
        add_snapshot("quiet", at, msgs=5, oldest_age=50.0)


def test_it_exposes_the_percentiles_and_forecasts(console, token, histories) -> None:
    samples = scrape(Client())
    drains, grows, quiet = (("default", console.ns, q) for q in ("drains", "grows", "quiet"))
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    families = {f.name: f for f in text_string_to_metric_families(response.getvalue().decode())}
    waits = {
        s.labels["quantile"]: s.value
        for s in families["rsmq_queue_wait_seconds"].samples
        if s.labels["queue"] == "drains"
    }
    assert waits == {"0.5": 1.0, "0.95": 9.5, "0.99": 12.0}
    assert families["rsmq_queue_wait_seconds"].type == "gauge"
    processing = {
        s.labels["quantile"]: s.value for s in families["rsmq_queue_processing_seconds"].samples
    }
    assert processing == {"0.5": 0.1, "0.95": 0.3, "0.99": 0.9}
    assert samples[("rsmq_queue_wait_samples", drains)] == 100
    assert samples[("rsmq_queue_processing_samples", drains)] == 80
    assert samples[("rsmq_queue_drain_seconds", drains)] == pytest.approx(24_000 / 20)
    assert samples[("rsmq_queue_drain_seconds", grows)] == float("inf")
    assert ("rsmq_queue_drain_seconds", quiet) not in samples  # flat: no series
    # 160 s old, ageing 0.5 s a second: 280 s to the 300 s SLO
    assert samples[("rsmq_queue_oldest_age_slo_breach_seconds", drains)] == pytest.approx(280)
    assert ("rsmq_queue_oldest_age_slo_breach_seconds", quiet) not in samples
    assert ("rsmq_queue_wait_samples", grows) not in samples


def test_a_namespace_over_the_limit_has_no_such_series(
    console, token, histories, monkeypatch
) -> None:
    from dashboard.probes import metrics

    monkeypatch.setattr(metrics, "OUTLOOK_MAX", 2)  # the namespace holds 3 queues
    samples = scrape(Client())
    assert not [k for k in samples if k[0].startswith(("rsmq_queue_wait", "rsmq_queue_drain"))]
    assert samples[("rsmq_queue_messages", ("default", console.ns, "drains"))] == 0
