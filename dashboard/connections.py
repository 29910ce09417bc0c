"""Which Redis (and namespace) a page reads: the configured RSMQ connections."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from django.conf import settings

from queues import RedisSMQ


@dataclass(frozen=True, slots=True)
class Connection:
    name: str
    url: str = field(repr=False)  # it may hold a password: never in a repr or a traceback
    namespaces: tuple[str, ...]
    environment: str = ""


def connections() -> list[Connection]:
    return [
        Connection(
            name=c["name"],
            url=c["url"],
            namespaces=tuple(c.get("namespaces") or ["rsmq"]),
            environment=c.get("environment", ""),
        )
        for c in settings.RSMQ_CONNECTIONS
    ]


def get_connection(name: str | None = None) -> Connection:
    """The named connection, or the first one configured."""
    conns = connections()
    for c in conns:
        if c.name == name:
            return c
    return conns[0]


@lru_cache(maxsize=64)
def _client(url: str, ns: str, timeout: float) -> RedisSMQ:
    # One client (and so one connection pool) per Redis and namespace for the process.
    return RedisSMQ(url=url, ns=ns, socket_timeout=timeout)


def get_rsmq(conn: Connection, ns: str | None = None) -> RedisSMQ:
    namespace = ns if ns in conn.namespaces else conn.namespaces[0]
    return _client(conn.url, namespace, settings.RSMQ_SOCKET_TIMEOUT)
