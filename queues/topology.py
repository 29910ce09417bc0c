"""A redis-py client for any Redis URL the project accepts: a plain Redis, a Sentinel
group's master, or the node of a Redis Cluster that holds a namespace's slot.

Whatever the topology, the clients get a ``redis.Redis`` (``redis.asyncio.Redis``): the
RSMQ scripts of one namespace touch only keys of its hash tag (queues/urls.py refuses a
namespace without one on a Cluster), so all of a namespace's commands go to the one node
that holds its slot, pipelined like on a single Redis. redis-py's own ``Sentinel`` finds
the master, its ``RedisCluster`` the slot's node; a connection asks them again when it
(re)connects, after a failover (Sentinel) or a MOVED reply (Cluster).
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import redis
import redis.asyncio as aioredis
import redis.asyncio.cluster as aiocluster
import redis.asyncio.sentinel as aiosentinel
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.exceptions import (
    ConnectionError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
)
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelManagedConnection

from . import _redis_internals as internals
from ._redis_internals import AsyncRelocating, Relocating
from .errors import InvalidArgument
from .urls import Target, cluster_namespace_problem, redacted

# redis-py's untyped constructors, called as what they are
_Sentinel: Any = Sentinel
_AsyncSentinel: Any = aiosentinel.Sentinel
_AsyncSentinelPool: Any = aiosentinel.SentinelConnectionPool
_ClusterNode: Any = redis.cluster.ClusterNode

#: a connection's attempts to reach the master while Sentinel promotes another (about
#: 1 s in all): enough for a SENTINEL FAILOVER; a longer one (a master killed) answers
#: "unavailable" meanwhile, and the next call asks the sentinels again
RECONNECTS = 3
#: how often (s) a connection asks the sentinels whether its master is still the one:
#: after a SENTINEL FAILOVER the old master takes writes until the sentinels demote it
#: (their INFO round, up to 10 s), and those writes are lost when it resyncs
MASTER_CHECK = 1.0


def slot_key(t: Target, ns: str) -> str:
    """The key whose slot holds namespace ``ns`` (refused on a Cluster without a tag)."""
    if t.kind == "cluster":
        problem = cluster_namespace_problem(ns)
        if problem:
            raise InvalidArgument("ns", problem)
    return ns + ":QUEUES"


def _reconnects() -> Retry:
    return Retry(ExponentialBackoff(cap=0.5, base=0.1), RECONNECTS)


def sync_client(t: Target, key: str, **options: Any) -> redis.Redis:
    """A client of the Sentinel group's master, or of the Cluster node holding ``key``
    (a plain Redis: `queues.driver.Endpoint.make`)."""
    internals.check_relocating()
    auth: dict[str, Any] = {"username": t.username, "password": t.password}
    if t.kind == "sentinel":
        sentinels = _Sentinel(
            list(t.hosts),
            sentinel_kwargs={
                "password": t.sentinel_password,
                "socket_timeout": options.get("socket_timeout"),
            },
        )
        master: redis.Redis = sentinels.master_for(
            t.service, redis_class=redis.Redis, connection_class=MasterConnection, db=t.db,
            retry=_reconnects(), sentinel=sentinels, **auth, **options,
        )  # fmt: skip
        return master
    owner = SlotOwner(t, key, {**auth, **options})
    pool = redis.ConnectionPool(connection_class=SlotConnection, owner=owner, **auth, **options)
    return redis.Redis(connection_pool=pool)


def async_pool(t: Target, key: str, **options: Any) -> aioredis.ConnectionPool:
    """`sync_client`'s pool for redis.asyncio."""
    internals.check_relocating()
    auth: dict[str, Any] = {"username": t.username, "password": t.password}
    if t.kind == "sentinel":
        sentinels = _AsyncSentinel(
            list(t.hosts),
            sentinel_kwargs={
                "password": t.sentinel_password,
                "socket_timeout": options.get("socket_timeout"),
            },
        )
        pool: aioredis.ConnectionPool = _AsyncSentinelPool(
            t.service, sentinels, connection_class=AsyncMasterConnection, db=t.db,
            retry=_reconnects(), sentinel=sentinels, **auth,
            **{k: v for k, v in options.items() if k not in ("max_connections", "timeout")},
        )  # fmt: skip
        return pool
    owner = AsyncSlotOwner(t, key, {**auth, **options})
    return aioredis.BlockingConnectionPool(
        connection_class=AsyncSlotConnection, owner=owner, **auth, **options
    )


class MasterConnection(Relocating, SentinelManagedConnection):
    """A connection to the group's master, asked of the sentinels every time it opens a
    socket.

    redis-py's own asks them only in ``connect()``; a command sent on a closed
    connection reconnects without it (to localhost:6379). Retried with backoff while
    the sentinels still name a master that is gone (a failover under way); and left
    for the new master once the sentinels name another (see MASTER_CHECK).

    ``sentinel``: the sentinels' client, kept in the pool's options for `close`."""

    checked = 0.0

    def __init__(self, *, sentinel: object = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]

    def connect(self) -> None:
        # redis-py's own connect, not SentinelManagedConnection's, which would ask the
        # sentinels once more before `locate` does
        redis.Connection.connect(self)  # type: ignore[no-untyped-call]

    def locate(self) -> tuple[str, int]:
        self.checked = time.monotonic()
        host, port = self.connection_pool.get_master_address()
        return host, int(port)

    def unreachable(self, error: OSError) -> None:
        raise _unreachable_master(self, error) from error

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if time.monotonic() - self.checked > MASTER_CHECK and internals.is_open(self):
            self.checked = time.monotonic()
            if _demoted(self, self.connection_pool.get_master_address):
                self.disconnect()  # type: ignore[no-untyped-call]
        super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]


class AsyncMasterConnection(AsyncRelocating, aiosentinel.SentinelManagedConnection):
    checked = 0.0

    def __init__(self, *, sentinel: object = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]

    async def connect(self) -> None:
        # (as MasterConnection.connect)
        await aioredis.Connection.connect(self)  # type: ignore[no-untyped-call]

    async def locate(self) -> tuple[str, int]:
        self.checked = time.monotonic()
        host, port = await self.connection_pool.get_master_address()
        return host, int(port)

    def unreachable(self, error: OSError) -> None:
        raise _unreachable_master(self, error) from error

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        if self.check_due() and not await self.still_master():
            await self.disconnect()
        await super().send_packed_command(command, check_health)

    def check_due(self) -> bool:
        """Whether to ask the sentinels where the master is before the next write (every
        MASTER_CHECK s): a failover that left this node up is followed within that."""
        if not self.is_connected or time.monotonic() - self.checked <= MASTER_CHECK:
            return False
        self.checked = time.monotonic()
        return True

    async def still_master(self) -> bool:
        """Whether this connection's node is the master the sentinels name (True when
        they can't be asked)."""
        try:
            where = await self.connection_pool.get_master_address()
        except ConnectionError:
            return True
        return where is None or tuple(where) == (self.host, self.port)


def _unreachable_master(conn: Any, error: OSError) -> ConnectionError:
    # redis-py's ConnectionError, which the connection's retry (RECONNECTS) retries,
    # asking the sentinels again; an OSError is retried by some redis-py versions only
    return ConnectionError(f"Error connecting to the master at {conn.host}:{conn.port}: {error}")


def _demoted(conn: Any, master_address: Any) -> bool:
    """Do the sentinels name another master than the one ``conn`` is connected to?"""
    try:
        where = master_address()
    except ConnectionError:
        return False  # no sentinel answers: keep to the master we have
    return bool(tuple(where) != (conn.host, conn.port))


def _unreachable(t: Target, e: Exception) -> ConnectionError:
    return ConnectionError(f"Redis Cluster at {redacted(t.url)}: {e}")


def _startup_nodes(t: Target, known: Any) -> list[tuple[str, int]]:
    """Where to ask for the Cluster's slots: the nodes a previous view of it knew (``known``:
    its RedisCluster, or None), then the URL's."""
    nodes = [] if known is None else [(n.host, int(n.port)) for n in known.get_nodes()]
    return nodes + [h for h in t.hosts if h not in nodes]


class SlotOwner:
    """Which Cluster node holds a namespace's slot, as redis-py's RedisCluster sees it;
    asked again (a new view: CLUSTER SLOTS) after a connection to the node it named
    failed or was MOVED."""

    def __init__(self, t: Target, key: str, options: dict[str, Any]) -> None:
        self.target = t
        self.key = key
        self.options = {k: v for k, v in options.items() if k != "max_connections"}
        self.cluster: Any = None  # its RedisCluster (untyped)
        self.stale = False
        self.lock = threading.Lock()

    def address(self) -> tuple[str, int]:
        with self.lock:
            try:
                if self.cluster is None or self.stale:
                    old = self.cluster
                    nodes = [_ClusterNode(h, p) for h, p in _startup_nodes(self.target, old)]
                    self.cluster = RedisCluster(startup_nodes=nodes, **self.options)
                    self.stale = False
                    if old is not None:
                        old.close()
                node = self.cluster.get_node_from_key(self.key)
            except (RedisClusterException, redis.RedisError) as e:
                raise _unreachable(self.target, e) from e
            return node.host, int(node.port)

    def close(self) -> None:
        with self.lock:
            if self.cluster is not None:
                self.cluster.close()
                self.cluster = None


class SlotConnection(Relocating):
    """A connection to the node that holds the namespace's slot, wherever that is now."""

    def __init__(self, *, owner: SlotOwner, **kwargs: Any) -> None:
        self.owner = owner
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]

    def locate(self) -> tuple[str, int]:
        return self.owner.address()

    def unreachable(self, error: OSError) -> None:
        self.owner.stale = True

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except ResponseError as e:
            if not internals.slot_moved(e):
                raise
            # The slot moved (a failover, a resharding): nothing ran. As a closed
            # connection, the command is sent again on a new one, to the slot's node.
            self.owner.stale = True
            self.disconnect()  # type: ignore[no-untyped-call]
            raise ConnectionError(f"the namespace's slot moved: {e}") from e


class AsyncSlotOwner:
    """SlotOwner for redis.asyncio: its RedisCluster belongs to one event loop."""

    def __init__(self, t: Target, key: str, options: dict[str, Any]) -> None:
        self.target = t
        self.key = key
        self.options = {k: v for k, v in options.items() if k not in ("max_connections", "timeout")}
        self.cluster: Any = None  # its redis.asyncio RedisCluster (untyped)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stale = False

    async def address(self) -> tuple[str, int]:
        try:
            loop = asyncio.get_running_loop()
            if self.cluster is None or self.loop is not loop or self.stale:
                old = self.cluster if self.loop is loop else None
                nodes = [aiocluster.ClusterNode(h, p) for h, p in _startup_nodes(self.target, old)]
                self.cluster = aiocluster.RedisCluster(startup_nodes=nodes, **self.options)
                self.loop, self.stale = loop, False
                await self.cluster.initialize()
                if old is not None:
                    await old.aclose()
            node = self.cluster.get_node_from_key(self.key)
        except (RedisClusterException, redis.RedisError) as e:
            raise _unreachable(self.target, e) from e
        return node.host, int(node.port)

    async def close(self) -> None:
        if self.cluster is not None and self.loop is asyncio.get_running_loop():
            await self.cluster.aclose()
        self.cluster = None


class AsyncSlotConnection(AsyncRelocating):
    def __init__(self, *, owner: AsyncSlotOwner, **kwargs: Any) -> None:
        self.owner = owner
        super().__init__(**kwargs)

    async def locate(self) -> tuple[str, int]:
        return await self.owner.address()

    def unreachable(self, error: OSError) -> None:
        self.owner.stale = True

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except ResponseError as e:
            if not internals.slot_moved(e):
                raise
            self.owner.stale = True
            await self.disconnect()
            raise ConnectionError(f"the namespace's slot moved: {e}") from e


def wrong_node(conn: Any, reply: ResponseError) -> ConnectionError | None:
    """What an error reply read off ``conn`` without its own ``read_response`` (the
    async client's lanes read replies themselves) means for the connection: the slot
    moved (Cluster: MOVED, CLUSTERDOWN) or the node is no longer the master (Sentinel:
    READONLY) — nothing ran; a ConnectionError, so the command is sent again on a new
    connection, to the right node — or None: the reply is the caller's."""
    if isinstance(conn, AsyncSlotConnection) and internals.slot_moved(reply):
        conn.owner.stale = True
        return ConnectionError(f"the namespace's slot moved: {reply}")
    if isinstance(conn, AsyncMasterConnection) and isinstance(reply, ReadOnlyError):
        return ConnectionError(f"the master moved (a failover): {reply}")
    return None


def close(pool: Any) -> None:
    """Close what a sync client's pool holds besides its connections: the sentinels'
    clients, the Cluster's view of its nodes."""
    owner = pool.connection_kwargs.get("owner")
    if owner is not None:
        owner.close()
    sentinel = pool.connection_kwargs.get("sentinel")
    if sentinel is not None:
        internals.close_sentinel(sentinel)


async def aclose(pool: Any) -> None:
    owner = pool.connection_kwargs.get("owner")
    if owner is not None:
        await owner.close()
    sentinel = pool.connection_kwargs.get("sentinel")
    if sentinel is not None:
        await internals.aclose_sentinel(sentinel)
