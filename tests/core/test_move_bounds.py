"""Moving and redriving long bodies: a script call copies MOVE_BYTES of bodies at most
(after one message at least), so a move of 8 MB messages is one short call per message,
never one call holding Redis for the whole chunk (issue 23 item 2)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from queues import RedisSMQ
from queues.limits import MOVE_BYTES
from queues.server import EmbeddedRedis

MB = 1024 * 1024


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(tmp_path_factory.mktemp("moves")) as s:
        yield s


def script_calls(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("evalsha", "eval"))


@pytest.mark.parametrize("by_id", [False, True])
def test_a_move_of_long_bodies_takes_a_call_per_body(server: EmbeddedRedis, by_id: bool) -> None:
    q = RedisSMQ(url=server.url, ns=f"m{int(by_id)}")
    r = redis.Redis.from_url(server.url)
    q.create_queue("a", maxsize=-1)
    q.create_queue("b", maxsize=-1)
    bodies = [c * (3 * MB) for c in "xyz"] + ["small"] * 5
    ids = [q.send_message("a", b) for b in bodies]
    q.move_messages("b", "a", ids[:1] if by_id else None)  # its script loaded (no NOSCRIPT below)
    r.config_resetstat()
    moved = q.move_messages("a", "b", ids if by_id else None)
    calls = script_calls(r)
    assert moved == len(bodies)
    assert sorted(m.message for m in q.list_messages("b", limit=10).items) == sorted(bodies)
    assert q.get_queue_attributes("a").msgs == 0
    # 3 MB bodies, MOVE_BYTES (1 MB) a call: one call each, then one for the small ones
    assert 3 * MB > MOVE_BYTES and calls == 4
    r.close()
    q.close()


def test_a_redrive_of_long_bodies_takes_a_call_per_body(server: EmbeddedRedis) -> None:
    q = RedisSMQ(url=server.url, ns="rd")
    r = redis.Redis.from_url(server.url)
    q.create_queue("dlq", maxsize=-1)
    q.create_queue("work", maxsize=-1)
    bodies = [c * (3 * MB) for c in "xy"] + ["small"] * 3
    q.send_messages("dlq", bodies)
    q.redrive("work", to="dlq")  # its scripts loaded (an empty queue: nothing moves)
    r.config_resetstat()
    q.redrive("work", to="dlq")
    before = script_calls(r)  # what a redrive of nothing takes
    assert q.redrive("dlq", to="work") == len(bodies)
    assert script_calls(r) - before == 3
    assert sorted(m.message for m in q.list_messages("work", limit=10).items) == sorted(bodies)
    r.close()
    q.close()
