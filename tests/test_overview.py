"""The first console page: every queue with its counters, login required, 503 on Redis down."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(settings, redis_url: str, ns: str) -> None:
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": redis_url, "namespaces": [ns], "environment": "test"}
    ]


@pytest.fixture
def user_client(client: Client, django_user_model) -> Client:
    user = django_user_model.objects.create_user("viewer", password="pw")
    client.force_login(user)
    return client


def test_it_requires_login(console, client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_lists_every_queue_with_its_counters(
    console, user_client: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("alpha")
    rsmq.create_queue("beta")
    rsmq.send_messages("alpha", ["1", "2", "3"])
    rsmq.receive_message("alpha", vt=60)
    response = user_client.get("/")
    assert response.status_code == 200
    stats = {s.qname: s for s in response.context["stats"]}
    assert set(stats) == {"alpha", "beta"}
    a = stats["alpha"]
    assert (a.msgs, a.visible, a.hidden, a.totalsent, a.totalrecv) == (3, 2, 1, 3, 1)
    assert b"alpha" in response.content and b"beta" in response.content


def test_it_says_when_there_are_no_queues(console, user_client: Client) -> None:
    response = user_client.get("/")
    assert b"No queues in namespace" in response.content


def test_it_answers_503_with_a_banner_when_redis_is_down(settings, user_client: Client) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": url, "namespaces": ["rsmq"]}]
    response = user_client.get("/")
    assert response.status_code == 503
    assert b"Redis is unavailable" in response.content
    assert b"Traceback" not in response.content
