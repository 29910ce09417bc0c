"""``spark.read.format("rsmq")``: every message of a namespace, read straight from Redis
in parallel partitions, without changing anything (a census, not a receive: rc, fr and
totalrecv stay as they are).

    register(spark)
    messages = (
        spark.read.format("rsmq")
        .option("url", "redis://redis.internal:6379/0")
        .option("namespace", "rsmq")          # default "rsmq"
        .option("queues", "emails,reports")   # default: every queue of the namespace
        .option("partitionSize", 50000)       # messages per partition (zset rank range)
        .option("batchSize", 2000)            # messages per Redis round trip
        .option("body", "true")               # default false: sizes only
        .load()
    )

Partitions are planned on the driver from each queue's size: one per queue and rank
range, the last range of a queue open-ended so that messages sent since are read too.
Each Redis call reads ``batchSize`` messages in one short Lua script (queues/census.py),
so a census never holds Redis for long. A queue deleted in the meantime yields what was
read before it went, and nothing more. A live queue moves under a census: a message that
changes rank between two calls (received, requeued) can be seen twice or not at all;
a queue at rest is read exactly.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import LongType, StringType, StructField, StructType

NAME = "rsmq"
MESSAGES = StructType(
    [
        StructField("queue", StringType(), False),
        StructField("id", StringType(), False),
        StructField("sent", LongType(), True),  # epoch ms, from the id; null: no time in it
        StructField("visible_at", LongType(), False),  # epoch ms: the zset score
        StructField("rc", LongType(), False),  # receive count
        StructField("fr", LongType(), True),  # epoch ms of the first receive; null: never
        StructField("size", LongType(), False),  # body bytes
        StructField("body", StringType(), True),  # null unless option body=true
        StructField("read_at", LongType(), False),  # the Redis server's TIME at the read
    ]
)
DEFAULT_PARTITION_SIZE = 50_000
DEFAULT_BATCH_SIZE = 2_000
TIMEOUT = 60.0  # s a Redis call may take before the task fails (and Spark retries it)


@dataclass(frozen=True)
class Options:
    url: str
    namespace: str = "rsmq"
    queues: tuple[str, ...] | None = None
    partition_size: int = DEFAULT_PARTITION_SIZE
    batch_size: int = DEFAULT_BATCH_SIZE
    body: bool = False

    @classmethod
    def parse(cls, options: Any) -> Options:
        """From the reader's options (case-insensitive keys, string values)."""
        o = {str(k).lower(): str(v) for k, v in dict(options).items()}
        if not o.get("url"):
            raise ValueError('the rsmq data source needs option("url", "redis://host:port/db")')
        queues = (
            tuple(q.strip() for q in o["queues"].split(",") if q.strip()) if "queues" in o else None
        )
        out = cls(
            url=o["url"],
            namespace=o.get("namespace") or "rsmq",
            queues=queues,
            partition_size=int(o.get("partitionsize", DEFAULT_PARTITION_SIZE)),
            batch_size=int(o.get("batchsize", DEFAULT_BATCH_SIZE)),
            body=o.get("body", "false").lower() in {"1", "true", "yes"},
        )
        if out.partition_size < 1 or not 1 <= out.batch_size <= 10_000:
            raise ValueError("partitionSize must be >= 1 and batchSize between 1 and 10000")
        return out


class Range(InputPartition):
    """Ranks ``first`` .. ``last`` (inclusive; None: to the end) of one queue."""

    def __init__(self, queue: str, first: int, last: int | None) -> None:
        super().__init__((queue, first, last))
        self.queue = queue
        self.first = first
        self.last = last


class RsmqDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        return MESSAGES

    def reader(self, schema: StructType) -> RsmqReader:
        return RsmqReader(Options.parse(self.options))


class RsmqReader(DataSourceReader):
    def __init__(self, options: Options) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        from queues import RedisSMQ
        from queues.census import queue_sizes

        o = self.options
        with RedisSMQ(url=o.url, ns=o.namespace, socket_timeout=TIMEOUT) as rsmq:
            sizes = queue_sizes(rsmq, o.queues)
        return plan(sizes, o.partition_size) or [InputPartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, Range):
            return  # nothing to read: no queue, or only empty ones
        import pyarrow as pa

        from queues import QueueNotFound, RedisSMQ
        from queues.census import read_range

        o = self.options
        schema = _arrow_schema()
        rank = partition.first
        with RedisSMQ(url=o.url, ns=o.namespace, socket_timeout=TIMEOUT) as rsmq:
            while partition.last is None or rank <= partition.last:
                want = o.batch_size
                if partition.last is not None:
                    want = min(want, partition.last - rank + 1)
                try:
                    got = read_range(rsmq, partition.queue, rank, want, o.body)
                except QueueNotFound:
                    return  # deleted while the census ran: what was read stands
                if len(got):
                    n = len(got)
                    body = pa.array(got.body, pa.string()) if got.body is not None else None
                    yield pa.RecordBatch.from_arrays(
                        [
                            pa.array([partition.queue] * n, pa.string()),
                            pa.array(got.ids, pa.string()),
                            pa.array(got.sent, pa.int64()),
                            pa.array(got.visible_at, pa.int64()),
                            pa.array(got.rc, pa.int64()),
                            pa.array(got.fr, pa.int64()),
                            pa.array(got.size, pa.int64()),
                            body if body is not None else pa.nulls(n, pa.string()),
                            pa.array([got.read_at] * n, pa.int64()),
                        ],
                        schema=schema,
                    )
                if len(got) < want:
                    return  # the end of the queue
                rank += len(got)


def plan(sizes: dict[str, int], partition_size: int) -> list[InputPartition]:
    """Rank ranges of ``partition_size`` messages per queue, by queue name; a queue's last
    range is open-ended. Empty queues get none."""
    out: list[InputPartition] = []
    for queue, size in sorted(sizes.items()):
        for first in range(0, size, partition_size):
            last = first + partition_size - 1
            out.append(Range(queue, first, None if last >= size - 1 else last))
    return out


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            pa.field(
                f.name, pa.int64() if isinstance(f.dataType, LongType) else pa.string(), f.nullable
            )
            for f in MESSAGES.fields
        ]
    )


#: the sessions the source is registered in
_registered: weakref.WeakSet[SparkSession] = weakref.WeakSet()


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("rsmq")`` available in this session (once: registering
    it again makes Spark warn that it replaced it)."""
    if spark not in _registered:
        spark.dataSource.register(RsmqDataSource)
        _registered.add(spark)
