"""The client's state and its keys: the only place Redis key names are made."""

from __future__ import annotations

import re
from typing import Generic, TypeVar

from .. import validation as v
from ..driver import Command, Endpoint, Op, operation
from ..errors import InvalidArgument
from ..limits import (
    FAILURES_SUFFIX,
    FLOW_SUFFIX,
    TIMINGS_SUFFIX,
)
from ..urls import MAX_WAIT_REPLICAS, MAX_WAIT_TIMEOUT

#: the redis-py client a driver runs on (redis.Redis or redis.asyncio.Redis)
R = TypeVar("R")
#: the console API's audit stream of a namespace ({ns}:$console:audit)
AUDIT_SUFFIX = "$console:audit"
#: the console API's token counters and generation: one hash tag, one Cluster slot,
#: outside every namespace
API_KEY = "{rsmq-console:api}"
#: undo stashes of a namespace: {ns}:@undo:{token} (the record), ...:z and ...:m (what the
#: action removed). '@' is in no RSMQ queue name: no queue's key is ever one of these
UNDO_PART = "@undo:"
UNDO_TOKEN_RE = re.compile(r"[0-9a-f]{32}")


class Base(Generic[R]):
    """The RSMQ API. A subclass is a driver (queues/driver.py): it supplies ``_drive``,
    and ``_open`` to set up the redis-py client ``R`` it runs on."""

    ns: str
    realtime: bool
    redis: R

    def __init__(
        self,
        url: str | None = None,
        ns: str = "rsmq",
        realtime: bool = False,
        client: R | None = None,
        host: str = "127.0.0.1",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        socket_timeout: float | None = None,
        wait_replicas: int = 0,
        wait_timeout: int = 1000,
    ) -> None:
        """Use ``client``, or make one for ``url`` (else host, port, db, password).

        ``wait_replicas``: a send returns only once that many replicas have it (``WAIT``,
        at most ``wait_timeout`` ms, else `NotReplicated`); also ``?wait_replicas=`` in
        the URL."""
        if not isinstance(ns, str) or not ns:
            raise InvalidArgument("ns", "ns must be a non-empty string")
        self.ns = ns
        self.realtime = realtime
        self._prefix = ns + ":"
        self._keys: dict[str, tuple[str, str]] = {}
        self._fkeys: dict[str, tuple[str, str, str]] = {}
        self._rkeys: dict[str, tuple[str, str, str, str]] = {}
        # The namespace's queue names as the last queue_stats() of all saw them: the
        # next one reads them and their counters in the same round trip.
        self._known_names: list[str] = []
        # How many queues the namespace held when last listed (None: not yet known).
        self._count_hint: int | None = None
        v.integer("wait_replicas", wait_replicas, 0, MAX_WAIT_REPLICAS)
        v.integer("wait_timeout", wait_timeout, 0, MAX_WAIT_TIMEOUT)
        endpoint = Endpoint(
            url, host, port, db, password, socket_timeout, wait_replicas, wait_timeout
        )
        self.redis = self._open(client, endpoint)

    def _open(self, client: R | None, endpoint: Endpoint) -> R:
        """Set up the driver; return ``client``, or the redis-py client it makes."""
        raise NotImplementedError

    # -- keys: the only place Redis key names are made ------------------------------

    @property
    def queues_key(self) -> str:
        return self._prefix + "QUEUES"

    def _queue_keys(self, qname: str) -> tuple[str, str]:
        """(zset, hash) of a queue, validating the name once per client."""
        keys = self._keys.get(qname)
        if keys is None:
            v.qname(qname)
            if len(self._keys) > 10_000:
                self._keys.clear()
            z = self._prefix + qname
            keys = self._keys[qname] = (z, z + ":Q")
        return keys

    def _failures_key(self, qname: str) -> str:
        """The queue's failure histories (see FAILURES_SUFFIX)."""
        return self._queue_keys(qname)[0] + FAILURES_SUFFIX

    def _with_failures(self, qname: str) -> tuple[str, str, str]:
        """(zset, hash, failure key) of a queue: what every delete path's script takes."""
        keys = self._fkeys.get(qname)
        if keys is None:
            z, h = self._queue_keys(qname)
            if len(self._fkeys) > 10_000:
                self._fkeys.clear()
            keys = self._fkeys[qname] = (z, h, z + FAILURES_SUFFIX)
        return keys

    def _receive_keys(self, qname: str) -> tuple[str, str, str, str]:
        """(zset, hash, failure key, flow key) of a queue: what the receive script takes
        (made once per queue: a receive is the hottest call)."""
        keys = self._rkeys.get(qname)
        if keys is None:
            z, h, f = self._with_failures(qname)
            if len(self._rkeys) > 10_000:
                self._rkeys.clear()
            keys = self._rkeys[qname] = (z, h, f, z + FLOW_SUFFIX)
        return keys

    def _timings_key(self, qname: str) -> str:
        """The worker's wait and processing records of the queue (see TIMINGS_SUFFIX)."""
        return self._queue_keys(qname)[0] + TIMINGS_SUFFIX

    def _flow_key(self, qname: str) -> str:
        """The queue's flow flag: paused or throttled (see FLOW_SUFFIX, queues/ops/flow.py)."""
        return self._queue_keys(qname)[0] + FLOW_SUFFIX

    @property
    def _flow_index_key(self) -> str:
        """The namespace's flagged queues and their flags, in brief (queues/ops/flow.py)."""
        return self._prefix + "@flow"

    @property
    def _due_index_key(self) -> str:
        """The namespace's peaks of what is coming due, as the console's snapshot task
        last found them (queues/ops/flow.py ``store_due_peaks``)."""
        return self._prefix + "@due"

    def _purge_key(self, qname: str) -> str:
        """Where a purge parks a queue's messages while their bodies are deleted."""
        return self._queue_keys(qname)[0] + ":purge"

    def _undo_keys(self, token: str) -> tuple[str, str, str]:
        """An undo stash's zset, hash and record (queues/ops/undo.py)."""
        if not isinstance(token, str) or not UNDO_TOKEN_RE.fullmatch(token):
            raise InvalidArgument("token", "token must be 32 lowercase hex digits")
        record = self._prefix + UNDO_PART + token
        return record + ":z", record + ":m", record

    def _kept(self, token: str | None) -> tuple[str, ...]:
        """The stash keys a destructive script takes last (none without a token)."""
        return () if token is None else self._undo_keys(token)

    @property
    def audit_key(self) -> str:
        """The namespace's audit stream: the records of the console API's audited calls
        until the console moves them into its database. ``$`` is in no RSMQ queue name,
        so no queue's key is ever this one, and other RSMQ clients never list it."""
        return self._prefix + AUDIT_SUFFIX

    @staticmethod
    def _api_rate_key(token: str, slot: int) -> str:
        """An API token's (digest's) call count in window ``slot``."""
        return f"{API_KEY}:rate:{token}:{slot}"

    @staticmethod
    def _api_generation_key() -> str:
        """The API tokens' generation: bumped at every change of a token."""
        return f"{API_KEY}:generation"

    def _channel(self, qname: str) -> str:
        return f"{self._prefix}rt:{qname}" if self.realtime else ""

    def realtime_channel(self, qname: str) -> str:
        """The pub/sub channel a realtime send publishes the queue's size on."""
        v.qname(qname)
        return f"{self._prefix}rt:{qname}"

    @operation
    def ping(self) -> Op[bool]:
        return bool((yield Command(("PING",))))
