"""The overview page: every queue with its counters, login required, 503 on Redis down."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(settings, redis_url: str, ns: str) -> str:
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": redis_url, "namespaces": [ns], "environment": "test"}
    ]
    return f"/c/default/{ns}/"


@pytest.fixture
def viewer(client: Client, django_user_model) -> Client:
    user = django_user_model.objects.create_user("viewer", password="pw")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    return client


def test_it_requires_login(console: str, client: Client) -> None:
    response = client.get(console)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_home_redirects_to_the_first_connection_and_namespace(console: str, viewer: Client):
    assert viewer.get("/")["Location"] == console


def test_it_lists_every_queue_with_its_counters(
    console: str, viewer: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("alpha")
    rsmq.create_queue("beta")
    rsmq.send_messages("alpha", ["1", "2", "3"])
    rsmq.receive_message("alpha", vt=60)
    response = viewer.get(console)
    assert response.status_code == 200
    stats = {s.qname: s for s in response.context["stats"]}
    assert set(stats) == {"alpha", "beta"}
    a = stats["alpha"]
    assert (a.msgs, a.visible, a.inflight, a.delayed, a.totalsent, a.totalrecv) == (
        3,
        2,
        1,
        0,
        3,
        1,
    )


def test_it_says_when_there_are_no_queues(console: str, viewer: Client) -> None:
    assert b"No queues in namespace" in viewer.get(console).content


def test_it_answers_503_with_a_banner_when_redis_is_down(settings, viewer: Client) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": url, "namespaces": ["rsmq"]}]
    response = viewer.get("/c/default/rsmq/")
    assert response.status_code == 503
    assert b"Redis is unavailable" in response.content
    assert b"Traceback" not in response.content
