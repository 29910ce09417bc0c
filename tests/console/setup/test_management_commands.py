"""The management commands: `rsmq` (the CLI on the console's Redis) and `demo`."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


@pytest.fixture
def console_redis(settings, redis_url: str, ns: str) -> None:
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": redis_url, "namespaces": [ns]}]


def test_manage_py_rsmq_uses_the_consoles_redis_and_namespace(
    console_redis, rsmq: RedisSMQ, capsys: pytest.CaptureFixture[str]
) -> None:
    rsmq.create_queue("jobs")
    call_command("rsmq", "queue", "list")
    assert json.loads(capsys.readouterr().out) == ["jobs"]


def test_manage_py_rsmq_reports_errors_with_the_rsmq_exit_code(console_redis) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError) as err:
        call_command("rsmq", "queue", "describe", "-n", "missing")
    assert err.value.returncode == 1


def test_demo_creates_queues_in_every_state_and_one_login_per_role(
    console_redis, rsmq: RedisSMQ
) -> None:
    call_command("demo")
    stats = {s.qname: s for s in rsmq.queue_stats()}
    assert {"emails", "orders", "webhooks", "reports", "thumbnails"} <= set(stats)
    assert sum(s.visible for s in stats.values()) > 0
    assert sum(s.inflight for s in stats.values()) > 0
    assert sum(s.delayed for s in stats.values()) > 0
    poison = rsmq.browse("webhooks", min_rc=3)
    assert poison.items, "some messages were received several times"
    for role in ("admin", "operator", "viewer"):
        user = authenticate(username=role, password=role)
        assert user is not None and user.groups.filter(name=role).exists()


def test_demo_is_idempotent(console_redis, rsmq: RedisSMQ) -> None:
    call_command("demo")
    before = rsmq.get_queue_attributes("emails").totalsent
    call_command("demo")
    assert rsmq.get_queue_attributes("emails").totalsent == before
