"""The JSON API: /api/queues/ and /api/queues/<name>/ (and their /api/c/<conn>/<ns>/
forms): counts, attributes, rates and the snapshot series; the token or a viewer."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db

TOKEN = "api-token"


@pytest.fixture
def token(settings) -> dict[str, str]:
    """The headers of a request carrying the configured token."""
    settings.RSMQ_METRICS_TOKEN = TOKEN
    return {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}


@pytest.fixture
def orders(console, rsmq: RedisSMQ) -> RedisSMQ:
    rsmq.create_queue("orders", vt=45, delay=0, maxsize=4096)
    rsmq.send_messages("orders", ["a", "b", "c", "d"])
    rsmq.receive_messages("orders", 1, vt=600)
    rsmq.send_message("orders", "later", delay=600)
    rsmq.create_queue("emails")
    return rsmq


def api(console, path: str = "") -> str:
    return f"/api/c/{console.conn}/{console.ns}/queues/{path}"


def iso(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).isoformat().replace("+00:00", ".000Z")


def test_it_lists_every_queue_with_counts_and_attributes(
    console, orders: RedisSMQ, viewer: Client
) -> None:
    body = viewer.get(api(console)).json()
    assert (body["connection"], body["namespace"]) == ("default", console.ns)
    assert [q["name"] for q in body["queues"]] == ["emails", "orders"]
    q = body["queues"][1]
    attrs = orders.get_queue_attributes("orders")
    assert q == {
        "name": "orders", "msgs": 5, "visible": 3, "hidden": 2, "inflight": 1, "delayed": 1,
        "unreadable": None, "exact": True, "totalsent": 5, "totalrecv": 1,
        "oldest_age": q["oldest_age"],
        "vt": 45, "delay": 0, "maxsize": 4096, "created": iso(attrs.created),
        "modified": iso(attrs.modified), "send_rate": None, "receive_rate": None,
        "condition": None,
    }  # fmt: skip
    assert 0 <= q["oldest_age"] < 5
    assert body["now"].endswith("Z")


def test_it_filters_the_list_by_name(console, orders, viewer: Client) -> None:
    body = viewer.get(api(console) + "?q=MAIL").json()
    assert [q["name"] for q in body["queues"]] == ["emails"]


def test_it_gives_each_queues_current_rates_from_the_snapshots(
    console, orders, add_snapshot, redis_now, viewer: Client
) -> None:
    now = redis_now()
    add_snapshot("orders", now - 70_000, totalsent=0, totalrecv=0)
    add_snapshot("orders", now - 10_000, totalsent=120, totalrecv=30)
    queues = {q["name"]: q for q in viewer.get(api(console)).json()["queues"]}
    assert (queues["orders"]["send_rate"], queues["orders"]["receive_rate"]) == (2.0, 0.5)
    assert queues["emails"]["send_rate"] is None


def test_it_describes_one_queue_with_its_snapshot_series(
    console, orders, add_snapshot, redis_now, viewer: Client
) -> None:
    now = redis_now()
    add_snapshot("orders", now - 7200_000, msgs=99)  # before the hour: left out
    add_snapshot("orders", now - 20_000, msgs=2, hiddenmsgs=1, inflight=1, totalsent=2)
    add_snapshot("orders", now - 10_000, msgs=5, hiddenmsgs=2, inflight=1, delayed=1,
                 totalsent=5, totalrecv=1, oldest_age=3.5)  # fmt: skip
    body = viewer.get(api(console, "orders/")).json()
    assert body["name"] == "orders"
    assert body["counts"]["msgs"] == 5 and body["counts"]["inflight"] == 1
    assert body["attributes"]["vt"] == 45
    series = body["series"]
    assert (series["range"], series["bucket_seconds"]) == ("hour", 0)
    assert series["backlog"][1] == {
        "at": series["backlog"][1]["at"], "msgs": 5, "visible": 3, "inflight": 1,
        "delayed": 1, "oldest_age": 3.5,
    }  # fmt: skip
    assert [p["msgs"] for p in series["backlog"]] == [2, 5]
    [rate] = series["rates"]
    assert (rate["sent"], rate["received"], rate["send_rate"], rate["receive_rate"]) == (
        3, 1, 0.3, 0.1,
    )  # fmt: skip
    assert rate["end"] == series["backlog"][1]["at"]


def test_it_takes_the_series_range_from_the_query(
    console, orders, add_snapshot, redis_now, viewer: Client
) -> None:
    add_snapshot("orders", redis_now() - 7200_000, msgs=99)
    day = viewer.get(api(console, "orders/?range=day")).json()["series"]
    assert [p["msgs"] for p in day["backlog"]] == [99]
    bad = viewer.get(api(console, "orders/?range=year"))
    assert bad.status_code == 400
    assert bad.json() == {"error": "range must be one of hour, day, week"}


def test_the_short_form_reads_the_first_connection(
    settings, console, orders, redis_url: str, viewer: Client
) -> None:
    settings.RSMQ_CONNECTIONS = [
        {"name": "first", "url": redis_url, "namespaces": [console.ns, "other"]},
        {"name": "second", "url": redis_url, "namespaces": ["rsmq"]},
    ]
    body = viewer.get("/api/queues/").json()
    assert (body["connection"], body["namespace"]) == ("first", console.ns)
    assert [q["name"] for q in body["queues"]] == ["emails", "orders"]
    assert viewer.get("/api/queues/orders/").json()["counts"]["msgs"] == 5


# -- failures ---------------------------------------------------------------------------------


def test_it_answers_404_for_a_missing_queue(console, orders, viewer: Client) -> None:
    response = viewer.get(api(console, "gone/"))
    assert response.status_code == 404
    # The same words as the page's 404 (one table: dashboard/web/errors.py).
    assert response.json() == {"error": "Queue gone does not exist (any more)."}


def test_it_answers_404_for_an_invalid_name(console, viewer: Client) -> None:
    response = viewer.get(api(console, "no%20spaces/"))
    assert response.status_code == 404
    assert "not a valid queue name" in response.json()["error"]


def test_it_answers_404_for_an_unknown_place(console, viewer: Client) -> None:
    response = viewer.get(f"/api/c/nowhere/{console.ns}/queues/")
    assert response.status_code == 404
    assert response.json()["error"].startswith("No connection 'nowhere'")


def test_it_answers_503_when_redis_is_down(settings, console, viewer: Client) -> None:
    down = f"redis://:pw@127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": down, "namespaces": [console.ns]}]
    response = viewer.get(api(console))
    assert response.status_code == 503
    error = response.json()["error"]
    assert error.startswith(f"Redis is unavailable at {down.replace(':pw@', ':***@')}: ")
    assert "pw@" not in error


# -- access -----------------------------------------------------------------------------------


def test_it_takes_the_token(console, orders, token) -> None:
    assert Client().get(api(console), **token).status_code == 200
    assert Client().get(api(console, "orders/"), **token).status_code == 200


def test_it_refuses_anonymous_requests_with_401_not_a_login_page(console, token) -> None:
    response = Client().get(api(console))
    assert response.status_code == 401
    assert response.json() == {"error": "Authentication required."}


def test_it_refuses_a_wrong_token(console, token) -> None:
    response = Client().get(api(console), HTTP_AUTHORIZATION="Bearer nope")
    assert response.status_code == 401


def test_it_refuses_a_login_without_a_role(console, outsider: Client) -> None:
    response = outsider.get(api(console))
    assert response.status_code == 403
    assert response.json() == {"error": "This needs the observer role."}


def test_it_answers_get_only(console, admin: Client) -> None:
    assert admin.post(api(console)).status_code == 405


def test_it_gives_each_queues_consumer_state_from_its_last_snapshot(
    console, orders: RedisSMQ, viewer: Client, settings
) -> None:
    """The state the overview leads with, and why, for machines: nobody has received
    from `stuck` for longer than RSMQ_NO_CONSUMER_AFTER while its oldest waits."""
    from dashboard.triage import conditions

    settings.RSMQ_NO_CONSUMER_AFTER = 0
    orders.create_queue("stuck")
    orders.send_messages("stuck", ["x"] * 3)
    stats = orders.queue_stats()
    conditions.update(console.conn, console.ns, stats, orders)

    listed = {q["name"]: q["condition"] for q in viewer.get(api(console)).json()["queues"]}
    one = viewer.get(api(console, "stuck/")).json()["condition"]

    assert listed["stuck"] == one
    assert one["state"] == "no_consumers"
    assert any(r.startswith("no consumer for") for r in one["reasons"])
    assert one["score"] > listed["emails"]["score"] == 0
    assert listed["emails"]["state"] == "idle"
    assert one["judged_at"].endswith("Z")
