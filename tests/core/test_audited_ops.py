"""The console API's operations in the core, on the console's own clients (queues.console):
an audited call writes its record in its own script (with the operation, or with the
error it met: never one without the other, and never a body); a rated one counts the
token's call in that script too and is refused, with nothing changed or recorded, past
its limit or when the tokens changed. The public clients have none of them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

import queues
from queues import AsyncRedisSMQ, RedisSMQ
from queues.console import AsyncConsoleRSMQ, ConsoleRSMQ
from queues.errors import ApiRefused, QueueNotFound
from queues.ops import ApiRate

CONSOLE_ONLY = (
    "audited", "audit_records", "audit_ack", "audit_pending",
    "api_rate", "api_generation", "api_generation_bump",
)  # fmt: skip


@pytest.fixture
def rsmq(redis_url: str, ns: str) -> Iterator[ConsoleRSMQ]:
    """The console's client (and so the ``queue`` fixture's) on the test's namespace."""
    client = ConsoleRSMQ(url=redis_url, ns=ns)
    yield client
    client.close()


@pytest.mark.parametrize("client", [RedisSMQ, AsyncRedisSMQ])
def test_the_public_clients_have_none_of_the_consoles_operations(client: type) -> None:
    assert [name for name in CONSOLE_ONLY if hasattr(client, name)] == []


@pytest.mark.parametrize("client", [ConsoleRSMQ, AsyncConsoleRSMQ])
def test_the_consoles_clients_have_them_all(client: type) -> None:
    assert [name for name in CONSOLE_ONLY if not hasattr(client, name)] == []


def test_the_consoles_clients_are_not_exported_by_the_library() -> None:
    assert {"ConsoleRSMQ", "AsyncConsoleRSMQ"} & {*queues.__all__, *vars(queues)} == set()


def records(rsmq: ConsoleRSMQ) -> list[dict[str, str]]:
    return [fields for _, fields in rsmq.audit_records()]


def test_each_audited_operation_records_what_came_of_it(rsmq: ConsoleRSMQ, queue: str) -> None:
    mid = rsmq.audited('{"who":1}', None, "send_message", queue, "secret body")
    ids = rsmq.audited("{}", None, "send_messages", queue, ["a", "b"])
    got = rsmq.audited("{}", None, "receive_messages", queue, 10, 30)
    assert rsmq.audited("{}", None, "delete_message", queue, mid) is True
    assert rsmq.audited("{}", None, "change_message_visibility", queue, ids[0], 0) is True
    assert [m.id for m in got] == [mid, *ids]
    assert records(rsmq) == [
        {"h": '{"who":1}', "o": "ok", "r": mid},
        {"h": "{}", "o": "ok", "r": " ".join(ids)},
        {"h": "{}", "o": "ok", "r": " ".join([mid, *ids])},
        {"h": "{}", "o": "ok", "r": "1"},
        {"h": "{}", "o": "ok", "r": "1"},
    ]
    assert "secret body" not in json.dumps(records(rsmq))


def test_an_error_the_script_met_is_recorded_and_marked(rsmq: ConsoleRSMQ) -> None:
    with pytest.raises(QueueNotFound) as e:
        rsmq.audited("{}", None, "send_message", "nope", "x")
    assert getattr(e.value, "audited", False) is True
    assert records(rsmq) == [{"h": "{}", "o": "error", "r": "queueNotFound"}]


def test_the_ack_removes_records_and_the_empty_stream(rsmq: ConsoleRSMQ, queue: str) -> None:
    for _ in range(3):
        rsmq.audited("{}", None, "send_message", queue, "x")
    first = [rid for rid, _ in rsmq.audit_records(2)]
    assert rsmq.audit_ack(first) == 2 and rsmq.audit_pending() == 1
    assert rsmq.redis.exists(rsmq.audit_key)
    rsmq.audit_ack([rid for rid, _ in rsmq.audit_records()])
    assert rsmq.audit_pending() == 0 and not rsmq.redis.exists(rsmq.audit_key)


def test_a_rated_call_is_counted_and_refused_past_its_limit(rsmq: ConsoleRSMQ, queue: str) -> None:
    gen = rsmq.api_generation()
    rate = ApiRate("t-limit", 2, 60, gen)
    rsmq.audited("{}", rate, "send_message", queue, "a")
    assert rsmq.api_rate("t-limit", 3, 60)[:2] == (True, 2)  # one counter for both paths
    with pytest.raises(ApiRefused) as e:
        rsmq.audited("{}", rate, "send_message", queue, "b")
    assert e.value.why == "rateLimited"
    assert rsmq.get_queue_attributes(queue).msgs == 1 and len(records(rsmq)) == 1


def test_a_rated_call_with_a_stale_generation_changes_nothing(
    rsmq: ConsoleRSMQ, queue: str
) -> None:
    old = rsmq.api_generation()
    new = rsmq.api_generation_bump()
    with pytest.raises(ApiRefused) as e:
        rsmq.audited("{}", ApiRate("t-gen", 10, 60, old), "send_message", queue, "a")
    assert (e.value.why, e.value.generation) == ("tokensChanged", new)
    assert rsmq.get_queue_attributes(queue).msgs == 0 and records(rsmq) == []
    rsmq.audited("{}", ApiRate("t-gen", 10, 60, new), "send_message", queue, "a")
    assert rsmq.get_queue_attributes(queue).msgs == 1


def test_the_async_client_runs_audited_calls_too(redis_url: str, ns: str, queue: str) -> None:
    async def main() -> str:
        a = AsyncConsoleRSMQ(url=redis_url, ns=ns)
        try:
            mid: str = await a.audited("{}", None, "send_message", queue, "x")
            return mid
        finally:
            await a.close()

    mid = asyncio.run(main())
    with ConsoleRSMQ(url=redis_url, ns=ns) as rsmq:
        assert records(rsmq) == [{"h": "{}", "o": "ok", "r": mid}]
