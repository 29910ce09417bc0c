"""The client speaks RESP2 on the connections it reads replies off itself (the sync
client's connection per thread, the async client's lanes), whatever redis-py's default
(RESP3 from redis-py 8 on): every supported redis-py gives the operations the same
replies, and no RESP3 push message comes between them. A client asked for RESP3 is
refused when it is made, saying so."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis

from queues import AsyncRedisSMQ, InvalidArgument, RedisSMQ

#: HGETALL's reply, which RESP2 and RESP3 shape differently (a flat list, or a map)
RESP2 = [1, [b"f", b"v"], 1]


def probe(ns: str) -> list[tuple[str, ...]]:
    return [("HSET", f"{ns}:h", "f", "v"), ("HGETALL", f"{ns}:h"), ("DEL", f"{ns}:h")]


def made(redis_url: str, given: bool, factory: Any) -> dict[str, Any]:
    """The client's options: a URL, or a redis-py client with redis-py's defaults."""
    return {"client": factory.from_url(redis_url)} if given else {"url": redis_url}


@pytest.mark.parametrize("client", [RedisSMQ, AsyncRedisSMQ])
def test_a_url_asking_for_resp3_is_refused_when_the_client_is_made(
    client: type, redis_url: str, ns: str
) -> None:
    with pytest.raises(InvalidArgument) as e:
        client(url=f"{redis_url}?protocol=3", ns=ns)
    assert e.value.field == "protocol"
    assert str(e.value) == "protocol 3: the RSMQ client speaks RESP2 (protocol 2) only"


def test_a_redis_py_client_made_with_resp3_is_refused(redis_url: str, ns: str) -> None:
    with pytest.raises(InvalidArgument, match="RESP2"):
        RedisSMQ(client=redis.Redis.from_url(redis_url, protocol=3), ns=ns)
    with pytest.raises(InvalidArgument, match="RESP2"):
        AsyncRedisSMQ(client=aioredis.Redis.from_url(redis_url, protocol=3), ns=ns)


def test_asking_for_resp2_is_fine(redis_url: str, ns: str) -> None:
    with RedisSMQ(url=f"{redis_url}?protocol=2", ns=ns) as rsmq:
        assert rsmq.ping() is True


@pytest.mark.parametrize("given", [False, True], ids=["url", "redis-py client"])
def test_the_sync_clients_connections_read_resp2(redis_url: str, ns: str, given: bool) -> None:
    with RedisSMQ(ns=ns, **made(redis_url, given, redis.Redis)) as rsmq:
        assert rsmq._roundtrip(probe(ns)) == RESP2


@pytest.mark.parametrize("given", [False, True], ids=["url", "redis-py client"])
def test_the_async_clients_lanes_read_resp2(redis_url: str, ns: str, given: bool) -> None:
    async def main() -> Any:
        async with AsyncRedisSMQ(ns=ns, **made(redis_url, given, aioredis.Redis)) as a:
            return await a._roundtrip(probe(ns))

    assert asyncio.run(main()) == RESP2
