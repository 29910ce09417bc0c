"""/api/…/queues/<name>/messages/: the messages a filter matches, read with the queue
page's filter (dashboard/acting/message_filter.py); a bad field is a 400 naming it."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def api(console, path: str) -> str:
    return f"/api/c/{console.conn}/{console.ns}/queues/{path}"


@pytest.fixture
def orders(console, rsmq: RedisSMQ) -> list[str]:
    rsmq.create_queue("orders")
    return rsmq.send_messages(
        "orders",
        ['{"amount": 150, "customer": "cust-42"}', '{"amount": 50}', "not json",
         '{"amount": 101, "customer": "cust-7"}'],
    )  # fmt: skip


def test_it_reads_the_messages_a_field_filter_matches(console, orders, viewer: Client) -> None:
    got = viewer.get(api(console, "orders/messages/"), {"where": "amount > 100"})
    assert got.status_code == 200
    body = got.json()
    assert [m["id"] for m in body["items"]] == [orders[0], orders[3]]
    assert body["filter"] == {"where": "amount > 100"} and body["at_end"] is True
    assert "`amount > 100`" in body["described"] and body["next"] is None
    both = viewer.get(api(console, "orders/messages/"),
                      {"where": "amount > 100 and customer = cust-7"}).json()  # fmt: skip
    assert [m["id"] for m in both["items"]] == [orders[3]]


def test_it_pages_with_next(console, orders, viewer: Client) -> None:
    first = viewer.get(api(console, "orders/messages/"), {"where": "exists amount", "limit": 2})
    page = first.json()
    assert [m["id"] for m in page["items"]] == orders[:2] and page["next"]
    rest = viewer.get(
        api(console, "orders/messages/"), {"where": "exists amount", "after": page["next"]}
    ).json()
    assert [m["id"] for m in rest["items"]] == [orders[3]]


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"where": "amount >"}, "position 9"),
        ({"older": "x"}, "older must be"),
        ({"rc": "-1"}, "rc must be"),
        ({"state": "gone"}, "state must be"),
        ({"limit": "0"}, "limit must be"),
        ({"after": "nonsense"}, "after must be"),
    ],
)
def test_a_bad_field_is_a_400_naming_it(console, orders, viewer: Client, query, says) -> None:
    got = viewer.get(api(console, "orders/messages/"), query)
    assert got.status_code == 400
    assert says in got.json()["error"]


def test_a_token_reads_the_first_places_messages(console, orders, settings) -> None:
    settings.RSMQ_METRICS_TOKEN = "api-token"
    got = Client().get("/api/queues/orders/messages/?where=customer+%3D+cust-7",
                       HTTP_AUTHORIZATION="Bearer api-token")  # fmt: skip
    assert got.status_code == 200
    assert [m["id"] for m in got.json()["items"]] == [orders[3]]
    assert Client().get("/api/queues/orders/messages/").status_code == 401
