"""Which Redis (and namespace) a page reads: the configured RSMQ connections."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import redis
from django.conf import settings

from queues import RsmqError
from queues.console import AsyncConsoleRSMQ, ConsoleRSMQ
from queues.models import QueueStats


@dataclass(frozen=True, slots=True)
class Connection:
    name: str
    url: str = field(repr=False)  # it may hold a password: never in a repr or a traceback
    namespaces: tuple[str, ...]
    environment: str = ""


def connections() -> list[Connection]:
    """The configured connections (made once per RSMQ_CONNECTIONS: every request asks)."""
    return list(_made(settings.RSMQ_CONNECTIONS))


_MADE: tuple[object, tuple[Connection, ...]] | None = None


def _made(configured: Sequence[dict[str, Any]]) -> tuple[Connection, ...]:
    global _MADE
    if _MADE is None or _MADE[0] is not configured:
        made = tuple(
            Connection(
                name=str(c["name"]),
                url=str(c["url"]),
                namespaces=tuple(c.get("namespaces") or ["rsmq"]),
                environment=str(c.get("environment", "")),
            )
            for c in configured
        )
        _MADE = (configured, made)
    return _MADE[1]


def get_connection(name: str | None = None) -> Connection:
    """The named connection, or the first one configured."""
    conns = _made(settings.RSMQ_CONNECTIONS)
    for c in conns:
        if c.name == name:
            return c
    return conns[0]


@lru_cache(maxsize=64)
def _client(url: str, ns: str, timeout: float) -> ConsoleRSMQ:
    # One client (and so one connection pool) per Redis and namespace for the process.
    return ConsoleRSMQ(url=url, ns=ns, socket_timeout=timeout)


def get_async_rsmq(conn: Connection, ns: str | None = None) -> AsyncConsoleRSMQ:
    """The process's pipelined client of ``conn`` and ``ns``, for the server's event loop
    (dashboard/serving/fast.py's fast path): the round trips of the calls a turn of the loop
    starts share one write (queues/aio.py)."""
    namespace = ns if ns in conn.namespaces else conn.namespaces[0]
    return _async_client(conn.url, namespace, settings.RSMQ_SOCKET_TIMEOUT)


@lru_cache(maxsize=64)
def _async_client(url: str, ns: str, timeout: float) -> AsyncConsoleRSMQ:
    return AsyncConsoleRSMQ(url=url, ns=ns, socket_timeout=timeout)


def get_rsmq(conn: Connection, ns: str | None = None) -> ConsoleRSMQ:
    namespace = ns if ns in conn.namespaces else conn.namespaces[0]
    return _client(conn.url, namespace, settings.RSMQ_SOCKET_TIMEOUT)


@lru_cache(maxsize=64)
def _reader(url: str, ns: str) -> ThreadPoolExecutor:
    # One thread per namespace, kept: it always reads with the same connection
    # (RedisSMQ's are per thread), so a read is one round trip, never a new handshake.
    return ThreadPoolExecutor(1, thread_name_prefix=f"rsmq-read-{ns}")


def stats_of_all(
    places: Sequence[tuple[Connection, str]],
) -> list[list[QueueStats] | redis.RedisError | RsmqError]:
    """``queue_stats()`` of every (connection, namespace), read in parallel: namespaces on
    different servers or Cluster shards cost the slowest read, not the sum. A place
    Redis failed to answer gets its error, so one down never hides the others."""

    def read(place: tuple[Connection, str]) -> list[QueueStats] | redis.RedisError | RsmqError:
        try:
            return get_rsmq(*place).queue_stats()
        except (redis.RedisError, RsmqError) as e:
            return e

    if len(places) <= 1:
        return [read(p) for p in places]
    futures = [_reader(c.url, ns).submit(read, (c, ns)) for c, ns in places]
    return [f.result() for f in futures]
