"""/metrics for Prometheus: every queue's gauges and counters, labelled by connection,
namespace and queue, behind a bearer token (or a viewer's login)."""

from __future__ import annotations

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from support.metrics_scrape import TOKEN, scrape

from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues(console, rsmq: RedisSMQ) -> RedisSMQ:
    rsmq.create_queue("orders")
    rsmq.send_messages("orders", ["a", "b", "c", "d", "e"])
    rsmq.receive_messages("orders", 2, vt=600)
    rsmq.send_message("orders", "later", delay=600)
    rsmq.create_queue("idle")
    return rsmq


def test_it_exposes_each_queues_gauges(console, token, queues: RedisSMQ) -> None:
    samples = scrape(Client())
    orders = ("default", console.ns, "orders")
    assert samples[("rsmq_queue_messages", orders)] == 6
    assert samples[("rsmq_queue_visible_messages", orders)] == 3
    assert samples[("rsmq_queue_hidden_messages", orders)] == 3
    assert samples[("rsmq_queue_inflight_messages", orders)] == 2
    assert samples[("rsmq_queue_delayed_messages", orders)] == 1
    assert 0 <= samples[("rsmq_queue_oldest_visible_age_seconds", orders)] < 5
    idle = ("default", console.ns, "idle")
    assert samples[("rsmq_queue_messages", idle)] == 0
    assert samples[("rsmq_queue_oldest_visible_age_seconds", idle)] == 0


def test_it_exposes_totalsent_and_totalrecv_as_counters(console, token, queues) -> None:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    families = {f.name: f for f in text_string_to_metric_families(response.getvalue().decode())}
    assert families["rsmq_queue_sent"].type == "counter"
    assert families["rsmq_queue_received"].type == "counter"
    assert families["rsmq_queue_messages"].type == "gauge"
    samples = scrape(Client())
    orders = ("default", console.ns, "orders")
    assert samples[("rsmq_queue_sent_total", orders)] == 6
    assert samples[("rsmq_queue_received_total", orders)] == 2
    # When the counter started: a recreated queue's counters reset, and Prometheus knows.
    created = queues.get_queue_attributes("orders").created
    assert samples[("rsmq_queue_sent_created", orders)] == created


def test_it_labels_every_configured_connection_and_namespace(
    settings, token, redis_url: str, ns: str, queues
) -> None:
    with RedisSMQ(url=redis_url, ns=ns + "x") as other:
        other.create_queue("mail")
        settings.RSMQ_CONNECTIONS = [
            {"name": "main", "url": redis_url, "namespaces": [ns, ns + "x"]},
        ]
        samples = scrape(Client())
        other.delete_queue("mail")
    queues_seen = {labels for name, labels in samples if name == "rsmq_queue_messages"}
    assert queues_seen == {("main", ns, "orders"), ("main", ns, "idle"), ("main", ns + "x", "mail")}
    assert samples[("rsmq_up", ("main", ns, ""))] == 1
    assert samples[("rsmq_up", ("main", ns + "x", ""))] == 1


def test_a_redis_that_is_down_reports_up_0_and_the_others_still_count(
    settings, token, redis_url: str, ns: str, queues
) -> None:
    down = f"redis://127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [
        {"name": "down", "url": down, "namespaces": [ns]},
        {"name": "up", "url": redis_url, "namespaces": [ns]},
    ]
    samples = scrape(Client())
    assert samples[("rsmq_up", ("down", ns, ""))] == 0
    assert samples[("rsmq_up", ("up", ns, ""))] == 1
    assert samples[("rsmq_queue_messages", ("up", ns, "orders"))] == 6
    assert samples[("rsmq_redis_up", ("down", "", ""))] == 0  # its Redis health: none
    assert not [
        k for k in samples if k[1][0] == "down" and k[0] not in ("rsmq_up", "rsmq_redis_up")
    ]


def test_a_scrape_reads_each_namespace_in_1_round_trip(
    settings, token, redis_url: str, ns: str, queues, wire
) -> None:
    for i in range(300):  # two stats scripts' worth, still one pipeline
        queues.create_queue(f"bulk{i:03d}")
    empty = ns + "e"
    settings.RSMQ_CONNECTIONS = [{"name": "main", "url": redis_url, "namespaces": [ns, empty]}]
    scrape(Client())  # warm: connected, scripts loaded
    wire.sends = 0
    samples = scrape(Client())
    assert len([k for k in samples if k[0] == "rsmq_queue_messages"]) == 302
    # Each namespace (the empty one too): its queue list and the counters of the queues it
    # held at the previous scrape, in one pipeline.
    assert wire.sends == 1 + 1


# -- access ----------------------------------------------------------------------------------


def test_it_refuses_a_scrape_without_credentials(console, token, queues) -> None:
    response = Client().get("/metrics")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="rsmq-console"'
    assert b"rsmq_queue" not in response.content


def test_it_refuses_a_wrong_token(console, token, queues, viewer: Client) -> None:
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION=TOKEN).status_code == 401  # no scheme
    # A wrong token is wrong even with a session.
    assert viewer.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401


def test_it_takes_a_viewers_login_instead_of_the_token(console, token, queues, viewer) -> None:
    assert ("rsmq_queue_messages", ("default", console.ns, "orders")) in scrape(viewer, None)


def test_it_refuses_a_login_without_a_role(console, token, queues, outsider: Client) -> None:
    assert outsider.get("/metrics").status_code == 403


def test_without_a_token_configured_only_a_login_works(settings, console, queues, viewer) -> None:
    settings.RSMQ_METRICS_TOKEN = ""
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 401
    assert viewer.get("/metrics").status_code == 200


def test_it_answers_get_only(console, token) -> None:
    response = Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 405
