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


def create_queues(url: str, ns: str, names: list[str], messages: int = 0) -> None:
    """Create many queues fast: AsyncRedisSMQ pipelines a thousand create scripts a write.
    Every seventh queue gets ``messages`` messages."""
    import asyncio

    from queues import AsyncRedisSMQ

    async def main() -> None:
        async with AsyncRedisSMQ(url=url, ns=ns) as a:
            for k in range(0, len(names), 1000):
                chunk = names[k : k + 1000]
                await asyncio.gather(*(a.create_queue(n) for n in chunk))
                if messages:
                    await asyncio.gather(
                        *(a.send_messages(n, ["m"] * messages) for n in chunk[::7])
                    )

    asyncio.run(main())


class SlowLog:
    """Redis's SLOWLOG of calls over ``micros``: ``reset()`` before, ``calls()`` after."""

    def __init__(self, url: str, micros: int = 5000) -> None:
        import redis

        self.r = redis.Redis.from_url(url)
        self.r.config_set("slowlog-log-slower-than", micros)
        self.r.config_set("slowlog-max-len", 10_000)

    def reset(self) -> None:
        self.r.slowlog_reset()

    def calls(self) -> list[tuple[int, str]]:
        """(µs, the command's first 40 characters) of each call logged since reset."""
        return [
            (e["duration"], e["command"][:40].decode(errors="replace"))
            for e in self.r.slowlog_get(10_000)
            if not e["command"].startswith((b"SLOWLOG", b"CONFIG"))
        ]

    def summary(self) -> str:
        calls = self.calls()
        if not calls:
            return "none over 5 ms"
        worst = max(calls)
        return f"{len(calls)} over 5 ms, worst {worst[0] / 1000:.1f} ms ({worst[1].split()[0]})"


def rss_mb() -> str:
    """This process's resident memory now and at its peak."""
    import resource

    import psutil

    now = psutil.Process().memory_info().rss / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return f"{now:.0f} MB (peak {peak:.0f} MB)"
