"""The console through a real Sentinel group: pages, /metrics and snapshots read the
master the sentinels name; while the master is gone the pages show the "Redis is
unavailable" banner, and once a replica is promoted they read it, with no change of
configuration."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client
from support.redis_topologies import SentinelGroup

from dashboard.models import Snapshot
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

TOKEN = "sentinel-scrape-token"


def configure(settings, group: SentinelGroup, ns: str) -> RedisSMQ:
    settings.RSMQ_CONNECTIONS = [{"name": "ha", "url": group.url(), "namespaces": [ns]}]
    settings.RSMQ_METRICS_TOKEN = TOKEN
    rsmq = RedisSMQ(url=group.url(), ns=ns, wait_replicas=1)
    rsmq.create_queue("jobs")
    rsmq.send_messages("jobs", ["one", "two"])
    return rsmq


@pytest.fixture
def sns() -> str:
    return "c" + uuid.uuid4().hex[:8]


def test_pages_metrics_and_snapshots_read_the_master(
    settings, lake, viewer: Client, client: Client, sentinel_group: SentinelGroup, sns: str
) -> None:
    with configure(settings, sentinel_group, sns):
        overview = viewer.get(f"/c/ha/{sns}/")
        assert overview.status_code == 200 and "jobs" in overview.content.decode()
        queue = viewer.get(f"/c/ha/{sns}/q/jobs/?state=all")
        assert "two" in queue.content.decode()
        metrics = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").getvalue().decode()
        assert (
            f'rsmq_queue_messages{{connection="ha",namespace="{sns}",queue="jobs"}} 2.0' in metrics
        )
        assert take_snapshot().rows == 1
        assert Snapshot.objects.get().msgs == 2


@pytest.fixture
def slow_group(tmp_path: Path) -> Iterator[SentinelGroup]:
    """Sentinels that would wait a minute before failing over by themselves: the test
    decides when the failover happens."""
    with SentinelGroup(tmp_path, down_after_ms=60_000, failover_timeout_ms=10_000) as g:
        yield g


@pytest.mark.slow
def test_a_banner_shows_while_the_master_is_gone_and_the_new_one_is_read_after(
    settings, viewer: Client, slow_group: SentinelGroup, sns: str
) -> None:
    with configure(settings, slow_group, sns):
        url = f"/c/ha/{sns}/"
        assert viewer.get(url).status_code == 200
        old = slow_group.master_port()
        slow_group.kill_master()

        down = viewer.get(url)
        assert down.status_code == 503
        assert "Redis is unavailable" in down.content.decode()
        refresh = viewer.get(
            url, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver" + url
        )
        assert refresh.status_code == 503 and "Retrying" in refresh.content.decode()

        slow_group.failover()
        slow_group.wait_for_new_master(old)
        up = viewer.get(url)
        assert up.status_code == 200 and "jobs" in up.content.decode()
        assert "Redis is unavailable" not in up.content.decode()


@pytest.mark.slow
def test_the_census_reads_every_message_through_sentinel(
    settings, spark, sentinel_group: SentinelGroup, sns: str
) -> None:
    from pipeline import source

    with configure(settings, sentinel_group, sns) as rsmq:
        source.register(spark)
        reader = spark.read.format("rsmq").option("url", sentinel_group.url())
        rows = reader.option("namespace", sns).option("body", "true").load().collect()
        assert sorted((r.queue, r.body) for r in rows) == [("jobs", "one"), ("jobs", "two")]
        assert sorted(r.id for r in rows) == sorted(rsmq.census_range("jobs", 0, 10).ids)
