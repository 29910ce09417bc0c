"""manage.py demo and manage.py rsmq use the first configured connection and namespace: with
RSMQ_NAMESPACE="a,b" that is "a", never a namespace literally named "a,b"."""

from __future__ import annotations

import pytest
import redis
from django.core.management import call_command

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_namespaces(settings, redis_url: str, ns: str) -> tuple[str, str]:
    first, second = f"{ns}a", f"{ns}b"
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": redis_url, "namespaces": [first, second]}
    ]
    return first, second


def test_demo_seeds_the_first_namespace(two_namespaces, r: redis.Redis) -> None:
    first, second = two_namespaces
    call_command("demo")
    assert r.scard(f"{first}:QUEUES") > 0
    assert r.scard(f"{second}:QUEUES") == 0
    assert not r.keys(f"{first},{second}*")


def test_rsmq_lists_the_queues_of_the_first_namespace(
    two_namespaces, r: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    first, _ = two_namespaces
    r.sadd(f"{first}:QUEUES", "jobs")
    r.hset(f"{first}:jobs:Q", mapping={"vt": 30, "delay": 0, "maxsize": 65536})
    call_command("rsmq", "queue", "list")
    assert '"jobs"' in capsys.readouterr().out
