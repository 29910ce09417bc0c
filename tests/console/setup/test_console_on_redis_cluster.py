"""The console on a real 3-master Redis Cluster: its pages, /metrics, snapshots and the
census read namespaces that live on different shards, each from its own node."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from support.redis_topologies import RedisClusterGroup

from dashboard.models import Snapshot
from dashboard.places.connections import get_connection, stats_of_all
from dashboard.triage.conditions import take_snapshot
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

TOKEN = "cluster-scrape-token"


@pytest.fixture
def shards(settings, redis_cluster: RedisClusterGroup) -> Iterator[list[RedisSMQ]]:
    """One namespace on each master, with a queue holding 1, 2, 3 messages."""
    rc = redis_cluster.client()
    by_port: dict[int, str] = {}
    while len(by_port) < 3:
        ns = "{" + uuid.uuid4().hex[:8] + "}:orders"
        by_port.setdefault(int(rc.get_node_from_key(ns).port), ns)
    rc.close()
    clients = [RedisSMQ(url=redis_cluster.url, ns=ns) for ns in by_port.values()]
    for i, c in enumerate(clients):
        c.create_queue("jobs")
        c.send_messages("jobs", [f"body-{i}-{k}" for k in range(i + 1)])
    settings.RSMQ_CONNECTIONS = [
        {"name": "big", "url": redis_cluster.url, "namespaces": [c.ns for c in clients]}
    ]
    settings.RSMQ_METRICS_TOKEN = TOKEN
    yield clients
    for c in clients:
        c.delete_queue("jobs")
        c.close()


def page(ns: str, rest: str = "") -> str:
    return f"/c/big/{quote(ns)}/{rest}"


def test_the_overview_queue_and_message_pages_read_each_shard(
    viewer: Client, shards: list[RedisSMQ]
) -> None:
    for i, c in enumerate(shards):
        overview = viewer.get(page(c.ns))
        assert overview.status_code == 200
        assert "jobs" in overview.content.decode()
        queue = viewer.get(page(c.ns, "q/jobs/?state=all"))
        assert queue.status_code == 200
        assert f"body-{i}-0" in queue.content.decode()
        mid = c.list_messages("jobs").items[0].id
        message = viewer.get(page(c.ns, f"q/jobs/m/{mid}/"))
        assert message.status_code == 200 and f"body-{i}-0" in message.content.decode()


def test_an_admin_purges_a_queue_on_a_shard(admin: Client, shards: list[RedisSMQ]) -> None:
    c = shards[2]
    form = {"action": "purge", "purge-confirm": "jobs"}
    response = admin.post(page(c.ns, "q/jobs/act/"), form, follow=True)
    assert response.status_code == 200
    assert c.get_queue_attributes("jobs").msgs == 0
    assert [s.get_queue_attributes("jobs").msgs for s in shards[:2]] == [1, 2]


def test_metrics_report_every_namespace_of_the_cluster(
    client: Client, shards: list[RedisSMQ]
) -> None:
    text = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").getvalue().decode()
    samples = {
        (s.name, s.labels.get("namespace")): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.labels.get("queue", "jobs") == "jobs"
    }
    for i, c in enumerate(shards):
        assert samples[("rsmq_up", c.ns)] == 1
        assert samples[("rsmq_queue_messages", c.ns)] == i + 1


def test_a_snapshot_stores_a_row_per_queue_of_every_shard(lake, shards: list[RedisSMQ]) -> None:
    run = take_snapshot()
    assert (run.rows, run.skipped) == (3, [])
    got = dict(Snapshot.objects.values_list("namespace", "msgs"))
    assert got == {c.ns: i + 1 for i, c in enumerate(shards)}


def test_a_snapshot_reads_wait_times_on_every_shard(lake, shards: list[RedisSMQ]) -> None:
    take_snapshot()
    for c in shards:
        c.receive_messages("jobs", 10, vt=600)
    take_snapshot()
    got = dict(
        Snapshot.objects.filter(wait_samples__isnull=False).values_list("namespace", "wait_samples")
    )
    assert got == {c.ns: i + 1 for i, c in enumerate(shards)}


@pytest.mark.slow
def test_the_census_reads_every_message_of_a_shard(
    spark, redis_cluster: RedisClusterGroup, shards: list[RedisSMQ]
) -> None:
    from pipeline import source

    source.register(spark)
    c = shards[2]
    df = spark.read.format("rsmq").option("url", redis_cluster.url).option("namespace", c.ns)
    rows = df.load().collect()
    expected = c.census_range("jobs", 0, 100)
    assert sorted(r.id for r in rows) == sorted(expected.ids)
    assert {r.queue for r in rows} == {"jobs"}


def test_the_namespaces_of_the_shards_are_read_at_once(
    shards: list[RedisSMQ], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each read waits until all three are under way: read one after another, the
    # first would wait alone and the barrier would break.
    barrier = threading.Barrier(3, timeout=5)
    real = RedisSMQ.queue_stats

    def meeting(self: RedisSMQ, *args: object, **kwargs: object) -> object:
        barrier.wait()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(RedisSMQ, "queue_stats", meeting)
    got = stats_of_all([(get_connection("big"), c.ns) for c in shards])
    assert [[s.msgs for s in stats] for stats in got] == [[1], [2], [3]]  # type: ignore[union-attr]
