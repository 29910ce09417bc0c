"""The snapshot's one call into alerting: it starts the evaluation as a task of its own,
and nothing there can fail a snapshot."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dashboard import tasks
from dashboard.celery import SWEEP_SECONDS, app
from dashboard.models import AlertRule, Snapshot
from queues import RedisSMQ
from queues.server import free_port

pytestmark = pytest.mark.django_db


def forget_connections() -> None:
    # The app keeps its producers' connections to the broker it first published to
    # (kombu pools): without this the tests after this one would publish to the dead one.
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def broker_down() -> Iterator[None]:
    before = (app.conf.broker_url, app.conf.broker_connection_timeout)
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    app.conf.broker_connection_timeout = 1
    forget_connections()
    try:
        yield
    finally:
        app.conf.broker_url, app.conf.broker_connection_timeout = before
        forget_connections()


def test_a_snapshot_is_stored_when_its_evaluation_cannot_be_started(
    console, lake, rsmq: RedisSMQ, ns: str, broker_down, caplog
) -> None:
    AlertRule.objects.create(
        name="b", connection="default", namespace=ns, queue="q1", metric="visible",
        threshold=0, webhook_url="http://127.0.0.1:9/", webhook_secret="k",
    )  # fmt: skip
    rsmq.create_queue("q1")
    result = tasks.snapshot()
    assert result["rows"] == 1
    assert Snapshot.objects.filter(queue="q1").count() == 1
    assert "alert evaluation not started" in caplog.text


def test_beat_sweeps_the_outbox() -> None:
    app.loader.import_default_modules()
    entry = app.conf.beat_schedule["alert-notifications"]
    assert entry["task"] == "dashboard.tasks.send_notifications"
    assert entry["schedule"] == SWEEP_SECONDS
