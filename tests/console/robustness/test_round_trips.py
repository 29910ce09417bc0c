"""What a page costs in Redis round trips, counted on the wire: every write of a packed
command (one command, or a whole pipeline) to a Redis socket is one round trip."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def _trips(wire, client: Client, url: str) -> int:
    assert client.get(url).status_code == 200  # warm: connected, scripts loaded
    wire.sends = 0
    assert client.get(url).status_code == 200
    return wire.sends


@pytest.fixture(scope="module")
def ns() -> str:
    """One namespace for the module: its 1,000 queues are created once, and only read."""
    return "t" + uuid.uuid4().hex[:10]


@pytest.fixture(scope="module")
def thousand(redis_url: str, ns: str) -> Iterator[list[str]]:
    names = [f"q{i:04d}" for i in range(1000)]
    with RedisSMQ(url=redis_url, ns=ns) as rsmq:
        for name in names:
            rsmq.create_queue(name)
        rsmq.send_messages("q0500", ["x"] * 3)
        yield names
        for name in names:
            rsmq.delete_queue(name)


def test_it_counts_a_pipeline_as_one_round_trip(console, thousand, wire, rsmq: RedisSMQ) -> None:
    rsmq.queue_stats(thousand)  # warm: the script loaded
    wire.sends = 0
    rsmq.queue_stats(thousand)  # five stats scripts, one pipeline
    assert wire.sends == 1


def test_it_reads_the_overview_of_1000_queues_in_2_round_trips(
    console, thousand, wire, viewer: Client
) -> None:
    assert _trips(wire, viewer, console.overview()) <= 2


def test_it_sorts_1000_queues_by_a_counter_in_2_round_trips(
    console, thousand, wire, viewer: Client
) -> None:
    assert _trips(wire, viewer, console.overview("?sort=-msgs")) <= 2


def test_it_searches_1000_queues_in_2_round_trips(console, thousand, wire, viewer: Client) -> None:
    assert _trips(wire, viewer, console.overview("?q=q05&sort=visible")) <= 2


def test_it_polls_the_overview_table_in_2_round_trips(
    console, thousand, wire, viewer: Client
) -> None:
    headers = console.htmx(target="queue-table")
    viewer.get(console.overview(), **headers)
    wire.sends = 0
    viewer.get(console.overview(), **headers)
    assert wire.sends <= 2


def test_it_reads_the_queue_page_in_4_round_trips(
    console, thousand, wire, operator: Client
) -> None:
    # the 4th: the live workers of the queue (ids and records in one script)
    assert _trips(wire, operator, console.queue("q0500")) <= 4


@pytest.mark.parametrize("query", ["?state=inflight", "?rc=1", "?search=x"])
def test_it_reads_a_filtered_queue_page_in_4_round_trips(
    console, thousand, wire, operator: Client, query: str
) -> None:
    assert _trips(wire, operator, console.queue("q0500", query)) <= 4


def test_it_goes_to_a_message_found_by_id_in_1_round_trip(
    console, thousand, wire, operator: Client, rsmq: RedisSMQ
) -> None:
    mid = rsmq.list_messages("q0500").items[0].id
    url = console.queue("q0500", f"?id={mid}")
    operator.get(url)
    wire.sends = 0
    assert operator.get(url).status_code == 302
    assert wire.sends == 1


def test_it_looks_up_a_missing_id_in_4_round_trips(
    console, thousand, wire, operator: Client
) -> None:
    assert _trips(wire, operator, console.queue("q0500", "?id=" + "z" * 32)) <= 4


def test_it_reads_the_message_page_in_2_round_trips(
    console, thousand, wire, operator: Client, rsmq: RedisSMQ
) -> None:
    mid = rsmq.list_messages("q0500").items[0].id
    assert _trips(wire, operator, console.message(mid, "q0500")) <= 2


# -- an htmx action on the message page: the action, then one read of what it shows --


@pytest.fixture
def in_flight(console, rsmq: RedisSMQ) -> Iterator[tuple[str, str]]:
    """A queue with a message in flight and a "q2" to move it to; every script loaded.
    (The module's namespace outlives a test: the queue has a name of its own.)"""
    qname = "m" + uuid.uuid4().hex[:8]
    rsmq.create_queue(qname)
    if "q2" not in rsmq.list_queues():
        rsmq.create_queue("q2")
    warm = rsmq.send_message(qname, "warm")
    rsmq.requeue(qname, [warm])
    rsmq.change_message_visibility(qname, warm, 60)
    rsmq.move_messages(qname, "q2", [warm])
    rsmq.get_message("q2", warm)
    mid = rsmq.send_message(qname, "payload")
    rsmq.receive_message(qname, vt=60)
    yield qname, mid
    rsmq.delete_queue(qname)


@pytest.mark.parametrize(
    ("data", "status"),
    [
        ({"action": "requeue"}, 200),
        ({"action": "visibility", "vt": "30"}, 200),
        ({"action": "move", "to": "q2"}, 204),  # moved: htmx follows it to q2's page
    ],
)
def test_it_answers_an_htmx_action_on_the_message_page_in_2_round_trips(
    console, in_flight: tuple[str, str], wire, operator: Client, data: dict[str, str], status: int
) -> None:
    qname, mid = in_flight
    url, page = console.message_act(mid, qname), console.message(mid, qname)
    operator.get(page)  # warm: connected, the session's user loaded
    wire.sends = 0
    response = operator.post(url, data, **console.htmx(page))
    assert response.status_code == status
    assert wire.sends <= 2
