"""Test session fixtures: one real redis-server on a free port for the whole session."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from support.node_rsmq import NodeRsmq, install
from support.parallel import Groups
from support.postgres_fixtures import Backends, twins_last, with_twins
from support.postgres_fixtures import report_header as postgres_report_header
from support.redis_topologies import RedisClusterGroup, SentinelGroup

from queues import RedisSMQ
from queues.server import EmbeddedRedis

# Helper modules that test modules import: their asserts rewritten like a test's.
pytest.register_assert_rewrite("support.console_fixtures", "support.metrics_scrape")

# The fixtures that more than one test folder uses, loaded once for the whole session (the
# only pytest_plugins of the suite); a folder's own fixtures are in its conftest.py.
pytest_plugins = [
    "support.console_fixtures",
    "support.snapshot_fixtures",
    "support.pipeline_fixtures",
    "support.receiver",
]

BACKENDS = pytest.StashKey["Backends"]()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    with server:
        yield server


@pytest.fixture(scope="session")
def redis_url(redis_server: EmbeddedRedis) -> str:
    return redis_server.url


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A raw redis-py client, to read back what the core wrote."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def ns() -> str:
    """A namespace of this test's own, so tests never see each other's queues."""
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture
def rsmq(redis_url: str, ns: str) -> Iterator[RedisSMQ]:
    client = RedisSMQ(url=redis_url, ns=ns)
    yield client
    client.close()


@pytest.fixture
def queue(rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q1")
    return "q1"


class NamespaceState:
    """Reads back every key of one namespace with its content.

    Compare two readings to assert that an operation (a rejected call, a browse) wrote nothing.
    """

    def __init__(self, client: redis.Redis, ns: str) -> None:
        self.client = client
        self.ns = ns

    def __call__(self) -> dict[str, tuple[str, object]]:
        r = self.client
        state: dict[str, tuple[str, object]] = {}
        for key in sorted(r.keys(f"{self.ns}:*")):
            kind = r.type(key)
            if kind == "hash":
                state[key] = (kind, r.hgetall(key))
            elif kind == "zset":
                state[key] = (kind, r.zrange(key, 0, -1, withscores=True))
            elif kind == "set":
                state[key] = (kind, sorted(r.smembers(key)))
            else:
                state[key] = (kind, r.dump(key))
        return state


@pytest.fixture
def ns_state(r: redis.Redis, ns: str) -> NamespaceState:
    """``ns_state()`` is everything this test's namespace holds in Redis right now."""
    return NamespaceState(r, ns)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterGroup]:
    """A real 3-master Redis Cluster (``cluster-enabled yes``), started once if used."""
    with RedisClusterGroup(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def sentinel_group(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelGroup]:
    """A real Sentinel group (a master, a replica, three sentinels) that no test fails
    over (the failover tests start their own)."""
    with SentinelGroup(tmp_path_factory.mktemp("sentinel")) as group:
        yield group


@pytest.fixture(scope="session")
def node_driver() -> Path:
    """The original Node rsmq 0.12.4's driver (installed by npm on first use)."""
    return install()


@pytest.fixture
def node(node_driver: Path, redis_server: EmbeddedRedis, ns: str) -> NodeRsmq:
    """Node rsmq 0.12.4 on this test's namespace."""
    return NodeRsmq(node_driver, redis_server.port, ns)


def pytest_unconfigure(config: pytest.Config) -> None:
    # py4j's garbage-collection thread may still log while the interpreter shuts down,
    # after pytest closed its streams: don't let logging print that failure as a
    # traceback below the test summary (the summary must stay the last thing printed).
    logging.raiseExceptions = False


# -- The console's database tests, a second time on Postgres (tests/support/postgres_fixtures.py) --


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "postgres: the Postgres twin of a database test")
    config.stash[BACKENDS] = Backends(config)
    config.pluginmanager.register(Groups(), "rsmq-xdist-groups")
    from support.roles import remake_after_flushes  # (Django's: not in client_fixtures' runs)

    remake_after_flushes()


def pytest_report_header(config: pytest.Config) -> str:
    return postgres_report_header()


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector: pytest.Collector) -> Iterator[object]:
    return with_twins(collector, (yield))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    twins_last(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    backends = item.config.stash[BACKENDS]
    if item.get_closest_marker("postgres"):
        backends.use_postgres()
    else:
        backends.use_sqlite()


def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash[BACKENDS].stop()


@pytest.fixture
def logged() -> Iterator[Callable[[str], list[str]]]:
    """``logged("queues.locks")``: the messages that logger logs from then on, caught by a
    handler of its own (not through the root logger, which other tests' logging
    configuration — a Celery worker's, a CLI's basicConfig(force=True) — may rearrange)."""
    handlers: list[tuple[logging.Logger, logging.Handler]] = []

    def catch(name: str) -> list[str]:
        messages: list[str] = []

        class Catch(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                messages.append(record.getMessage())

        logger = logging.getLogger(name)
        logger.disabled = False
        handler = Catch(logging.DEBUG)
        logger.addHandler(handler)
        handlers.append((logger, handler))
        return messages

    yield catch
    for logger, handler in handlers:
        logger.removeHandler(handler)


@pytest.fixture(autouse=True)
def _root_log_level() -> Iterator[None]:
    """The root logger's level as each test found it: an in-process Celery worker
    (celery.contrib.testing's start_worker) sets it to ERROR, and every later test's
    warnings would go unheard."""
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)
