"""What the benchmarks share: their own redis-server pinned to core 0, with the measuring
process on core 1 (SPEC §10: else the scheduler decides the figures), and a line saying
what they ran on."""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from queues.server import EmbeddedRedis, redis_server_binary


@contextmanager
def pinned_redis(prefix: str) -> Iterator[tuple[EmbeddedRedis, Path]]:
    """A started redis-server on core 0 and a scratch folder; this process moves to core 1."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    server = EmbeddedRedis(tmp / "redis").start()
    try:
        subprocess.run(
            ["taskset", "-acp", "0", str(server.process.pid)], check=True, capture_output=True
        )
        os.sched_setaffinity(0, {1})
        yield server, tmp
    finally:
        server.stop()


def describe() -> str:
    """Today, the cores and CPU, redis-server's and Python's versions."""
    version = (
        subprocess.run(
            [redis_server_binary(), "--version"], capture_output=True, text=True, check=False
        )
        .stdout.split()[2]
        .removeprefix("v=")
    )
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), platform.processor(),
    )  # fmt: skip
    return (
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores ({cpu}), redis-server {version},"
        f" Python {platform.python_version()}"
    )


def console_env(redis_url: str, tmp: Path, **extra: str) -> None:
    """The console's settings for a benchmark in this process: that Redis, namespace
    "bench", a fresh SQLite database in ``tmp``."""
    os.environ.update(
        DJANGO_SETTINGS_MODULE="dashboard.settings",
        DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}",
        RSMQ_REDIS_URL=redis_url,
        RSMQ_NAMESPACE="bench",
        **extra,
    )
