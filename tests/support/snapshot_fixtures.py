"""Snapshots under test: the lake in a temporary folder, and the snapshot lock (the Celery
broker's Redis) in a database of the test Redis of its own.

tests/conftest.py loads it for every folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from dashboard.models import Snapshot

BROKER_DB = 15


@pytest.fixture
def broker_url(redis_url: str) -> str:
    url = f"{redis_url.rsplit('/', 1)[0]}/{BROKER_DB}"
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return url


@pytest.fixture
def lake(settings, tmp_path: Path, broker_url: str) -> Path:
    """Where the snapshots go: the lake folder (returned) and the lock's Redis."""
    settings.RSMQ_LAKE_DIR = tmp_path / "lake"
    settings.CELERY_BROKER_URL = broker_url
    return settings.RSMQ_LAKE_DIR


@pytest.fixture
def redis_now(r: redis.Redis) -> Callable[[], int]:
    """The test Redis server's TIME in epoch ms, the clock snapshots are stamped with."""

    def now() -> int:
        seconds, micros = r.time()
        return seconds * 1000 + micros // 1000

    return now


@pytest.fixture
def add_snapshot(db, ns: str) -> Callable[..., Snapshot]:
    """``add_snapshot("q1", at_ms, msgs=3, totalsent=10)``: one row of the default
    connection's test namespace, as the snapshot task would have written it."""

    def add(queue: str, at: int, conn: str = "default", **counts: int | float | None) -> Snapshot:
        fields = dict.fromkeys(
            ("msgs", "hiddenmsgs", "inflight", "delayed", "totalsent", "totalrecv"), 0
        )
        fields.update(created=1, oldest_age=None)
        fields.update(counts)
        return Snapshot.objects.create(
            connection=conn,
            namespace=ns,
            queue=queue,
            taken_at=at,
            **fields,
        )

    return add
