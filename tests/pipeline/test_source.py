"""The ``rsmq`` Spark data source (pipeline/source.py) against the test Redis: every
message read exactly once across partitions, nothing in Redis changed, queues deleted
under it, its options."""

from __future__ import annotations

import pytest

from pipeline import source
from pipeline.source import Options, Range, RsmqReader
from queues import RedisSMQ


@pytest.fixture
def queues(rsmq: RedisSMQ) -> dict[str, list[str]]:
    """q1: 25 messages (5 received: in flight, or visible again; 3 delayed), q2: 10, q3: none."""
    rsmq.create_queue("q1", vt=3600)
    rsmq.create_queue("q2")
    rsmq.create_queue("q3")
    ids = {
        "q1": rsmq.send_messages("q1", [f"m{i}" * (i + 1) for i in range(22)])
        + rsmq.send_messages("q1", ["later"] * 3, delay=600),
        "q2": rsmq.send_messages("q2", ["é" * 10] * 10),
        "q3": [],
    }
    for _ in range(4):
        rsmq.receive_message("q1")
    rsmq.change_message_visibility("q1", ids["q1"][0], 0)  # visible again, rc 1
    rsmq.receive_message("q1")
    return ids


def load(spark, redis_url: str, ns: str, **options: object):
    source.register(spark)
    reader = spark.read.format("rsmq").option("url", redis_url).option("namespace", ns)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def test_partitions_cover_every_message_exactly_once(spark, redis_url, ns, rsmq, queues):
    df = load(spark, redis_url, ns, partitionSize=7, batchSize=3)
    assert df.rdd.getNumPartitions() == 4 + 2  # q1: ranks 0-6, 7-13, 14-20, 21-; q2: 0-6, 7-
    rows = df.collect()
    assert sorted(r.id for r in rows) == sorted(queues["q1"] + queues["q2"])
    for r in rows:
        m = rsmq.get_message(r.queue, r.id)
        assert (r.sent, r.visible_at, r.rc, r.fr, r.size, r.body) == (
            int(m.sent),
            m.visible_at,
            m.rc,
            m.fr,
            m.size,
            None,
        )
        assert m.visible_at - 3_600_000 <= r.read_at
    assert sorted((r.rc, r.fr is None) for r in rows if r.rc) == [(1, False)] * 5


def test_reading_changes_nothing_in_redis(spark, redis_url, ns, queues, ns_state):
    before = ns_state()
    assert load(spark, redis_url, ns, partitionSize=5, body="true").count() == 35
    assert ns_state() == before  # rc, fr, totalrecv, scores: all as they were


def test_bodies_are_read_when_asked(spark, redis_url, ns, queues):
    rows = load(spark, redis_url, ns, body="true", queues="q2").collect()
    assert {(r.queue, r.body, r.size) for r in rows} == {("q2", "é" * 10, 20)}


def test_the_queues_option_reads_only_those(spark, redis_url, ns, queues):
    got = load(spark, redis_url, ns, queues="q2, q3 ,nosuchqueue").groupBy("queue").count()
    assert [tuple(r) for r in got.collect()] == [("q2", 10)]


def test_a_namespace_without_messages_reads_as_empty(spark, redis_url, ns, rsmq):
    rsmq.create_queue("empty")
    assert load(spark, redis_url, ns).collect() == []
    assert load(spark, redis_url, "nosuchnamespace").collect() == []


def test_a_queue_deleted_after_planning_yields_nothing(redis_url, ns, rsmq, queues):
    reader = RsmqReader(Options(url=redis_url, namespace=ns, partition_size=10))
    parts = reader.partitions()
    rsmq.delete_queue("q1")
    got = {p.queue: sum(b.num_rows for b in reader.read(p)) for p in parts}
    assert got == {"q1": 0, "q2": 10}


def test_a_queue_deleted_mid_partition_keeps_what_was_read(redis_url, ns, rsmq, queues):
    reader = RsmqReader(Options(url=redis_url, namespace=ns, batch_size=10))
    head = [m.id for m in rsmq.list_messages("q1", limit=10).items]
    batches = reader.read(Range("q1", 0, None))
    first = next(batches)
    rsmq.delete_queue("q1")
    assert (first.num_rows, list(batches)) == (10, [])
    assert first.column("id").to_pylist() == head


def test_the_last_range_of_a_queue_reads_what_came_since_planning(redis_url, ns, rsmq, queues):
    reader = RsmqReader(Options(url=redis_url, namespace=ns, partition_size=20, queues=("q2",)))
    (part,) = reader.partitions()
    rsmq.send_messages("q2", ["new"] * 15)
    assert sum(b.num_rows for b in reader.read(part)) == 25


def test_plan_splits_queues_into_rank_ranges():
    parts = source.plan({"b": 5, "a": 10, "empty": 0}, 4)
    assert [(p.queue, p.first, p.last) for p in parts] == [
        ("a", 0, 3), ("a", 4, 7), ("a", 8, None), ("b", 0, 3), ("b", 4, None),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "options, error",
    [
        ({}, "needs option"),
        ({"url": "redis://x", "partitionSize": "0"}, "partitionSize"),
        ({"url": "redis://x", "batchSize": "20000"}, "batchSize"),
    ],
)
def test_bad_options_are_refused(options, error):
    with pytest.raises(ValueError, match=error):
        Options.parse(options)
