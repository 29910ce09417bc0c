"""Delivery of alert notifications: a real Celery worker snapshots a real queue, the
evaluation task fires and resolves its alert, and the outbox's webhook notifications
reach a local HTTP receiver that is down at first: each exactly once, signed."""

from __future__ import annotations

import hmac
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest
from celery.contrib.testing.worker import start_worker
from django.core import mail
from django.db import OperationalError
from support.receiver import Receiver

from dashboard import tasks
from dashboard.alerting import delivery
from dashboard.alerting.evaluate import evaluate
from dashboard.celery import app
from dashboard.models import Alert, AlertRule, Notification
from queues import RedisSMQ
from queues.server import free_port

T = TypeVar("T")


@pytest.fixture(autouse=True)
def loopback_allowed(settings) -> None:
    """The receivers here listen on 127.0.0.1, which the console refuses unless told."""
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.stop()


@pytest.fixture
def worker(settings, console, lake, broker_url: str) -> Iterator[None]:
    settings.RSMQ_ALERT_RETRY_SECONDS = 0.3
    before = app.conf.broker_url
    app.conf.broker_url = broker_url
    # This process publishes too (the snapshot task): to this broker, not to the one its
    # kombu pools may hold from an earlier test.
    app._pool = None
    app.amqp._producer_pool = None
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    finally:
        app.conf.broker_url = before


def retrying(read: Callable[[], T]) -> T:
    # The test database is SQLite in memory, shared with the worker's thread: a read that
    # meets the worker's write fails at once ("table is locked"): read again.
    for _ in range(200):
        try:
            return read()
        except OperationalError as e:
            if "locked" not in str(e):
                raise
            time.sleep(0.02)
    raise AssertionError("the database stayed locked for 4 s")


def wait_for(what: str, check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if retrying(check):
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


@pytest.mark.django_db(transaction=True)
def test_a_receiver_that_is_down_gets_every_notification_once_it_is_up_signed(
    worker, receiver: Receiver, rsmq: RedisSMQ, ns: str
) -> None:
    rule = AlertRule.objects.create(
        name="backlog", connection="default", namespace=ns, queue="jobs", metric="visible",
        threshold=0, webhook_url=receiver.url, webhook_secret="the-secret",
    )  # fmt: skip
    rsmq.create_queue("jobs")
    rsmq.send_messages("jobs", ["a", "b", "c"])

    def state() -> str | None:
        return Alert.objects.filter(rule=rule).values_list("state", flat=True).first()

    def tried(n: int) -> Callable[[], bool]:
        return lambda: Notification.objects.filter(attempts__gt=0, sent__isnull=True).count() == n

    tasks.snapshot.delay()  # the snapshot starts the evaluation, which fires
    wait_for("the alert fires", lambda: state() == "firing")
    wait_for("the first notification failed", tried(1))
    received = rsmq.receive_messages("jobs", 3, vt=60)
    rsmq.delete_messages("jobs", [m.id for m in received])
    tasks.snapshot.delay()
    wait_for("the alert resolves", lambda: state() == "resolved")
    wait_for("both notifications failed", tried(2))

    receiver.start()
    wait_for("both notifications arrive", lambda: len(receiver.got) >= 2)
    wait_for("the outbox is empty", lambda: not Notification.objects.filter(sent__isnull=True))
    time.sleep(1.5)  # several retry periods: nothing more comes

    assert len(receiver.got) == 2
    bodies = []
    for headers, body in receiver.got:
        expected = "sha256=" + hmac.new(b"the-secret", body, "sha256").hexdigest()
        assert hmac.compare_digest(headers["x-rsmq-signature"], expected)
        payload = json.loads(body)
        assert headers["x-rsmq-delivery"] == payload["id"]
        bodies.append(payload)
    told = sorted((a["queue"], a["state"]) for p in bodies for a in p["alerts"])
    assert told == [("jobs", "firing"), ("jobs", "resolved")]
    assert all(n.attempts >= 2 for n in retrying(lambda: list(Notification.objects.all())))


@pytest.mark.django_db
def test_slack_and_email_receivers_get_the_same_news(
    settings, console, lake, add_snapshot, redis_now, receiver: Receiver, ns: str
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    receiver.start()
    AlertRule.objects.create(
        name="backlog", connection="default", namespace=ns, queue="", pattern="q*",
        metric="visible", threshold=5, slack_url=receiver.url,
        emails="ops@example.com, oncall@example.com",
    )  # fmt: skip
    now = redis_now()
    add_snapshot("q1", now, msgs=10)
    add_snapshot("q2", now, msgs=7)
    evaluate()
    sent = delivery.send_due()
    assert (sent.sent, sent.failed) == (2, 0)

    [(headers, body)] = receiver.got
    text = json.loads(body)["text"]
    assert text.splitlines() == [
        "*[RSMQ] backlog: 2 firing, 0 resolved*",
        f"FIRING: backlog on default/{ns}/q1 (value 10)",
        f"FIRING: backlog on default/{ns}/q2 (value 7)",
    ]
    [email] = mail.outbox
    assert email.subject == "[RSMQ] backlog: 2 firing, 0 resolved"
    assert email.to == ["ops@example.com", "oncall@example.com"]
    assert f"FIRING: backlog on default/{ns}/q2 (value 7)" in email.body
    assert delivery.send_due().sent == 0  # sent once


@pytest.mark.django_db
def test_a_failed_send_waits_twice_as_long_each_time(
    settings, console, lake, add_snapshot, redis_now, ns: str
) -> None:
    settings.RSMQ_ALERT_RETRY_SECONDS = 10
    AlertRule.objects.create(
        name="b", connection="default", namespace=ns, queue="q1", metric="visible",
        threshold=0, webhook_url=f"http://127.0.0.1:{free_port()}/down", webhook_secret="k",
    )  # fmt: skip
    add_snapshot("q1", redis_now(), msgs=1)
    evaluate()
    n = Notification.objects.get()
    waits = []
    for _ in range(3):
        Notification.objects.filter(pk=n.pk).update(next_attempt=n.created)  # due now
        before = time.time()
        assert delivery.send_due().failed == 1
        n.refresh_from_db()
        waits.append(round(n.next_attempt.timestamp() - before))
    assert waits == [10, 20, 40]
    assert n.attempts == 3 and "Connection refused" in n.last_error and n.sent is None


@pytest.mark.django_db
def test_a_notification_claimed_by_one_worker_is_not_sent_by_another(
    console, lake, add_snapshot, redis_now, receiver: Receiver, ns: str
) -> None:
    receiver.start()
    AlertRule.objects.create(
        name="b", connection="default", namespace=ns, queue="q1", metric="visible",
        threshold=0, webhook_url=receiver.url, webhook_secret="k",
    )  # fmt: skip
    add_snapshot("q1", redis_now(), msgs=1)
    evaluate()
    n = Notification.objects.get()
    assert delivery.send_one(n.pk) is True
    assert delivery.send_one(n.pk) is None
    assert len(receiver.got) == 1


@pytest.mark.django_db
def test_a_receiver_that_hangs_costs_one_timeout_per_call_not_one_per_notification(
    console, lake, add_snapshot, redis_now, ns: str
) -> None:
    hanging = socket.socket()
    hanging.bind(("127.0.0.1", 0))
    hanging.listen(8)  # takes connections, never answers
    url = f"http://127.0.0.1:{hanging.getsockname()[1]}/hook"
    try:
        # Two rules on two queues: two notifications (one queue's alerts of two rules
        # to one receiver would be one: evaluate.enqueue_grouped)
        for name in ("a", "b"):
            AlertRule.objects.create(
                name=name, connection="default", namespace=ns, queue=f"q-{name}",
                metric="visible", threshold=0, webhook_url=url, webhook_secret="k",
            )  # fmt: skip
        now = redis_now()
        add_snapshot("q-a", now, msgs=1)
        add_snapshot("q-b", now, msgs=1)
        evaluate()
        assert Notification.objects.count() == 2
        started = time.monotonic()
        result = delivery.send_due()
        took = time.monotonic() - started
    finally:
        hanging.close()
    assert (result.sent, result.failed) == (0, 1)
    assert delivery.TIMEOUT <= took < 2 * delivery.TIMEOUT
    attempts = sorted(Notification.objects.values_list("attempts", flat=True))
    assert attempts == [0, 1]  # the second waits with the first, untried
    assert "timed out" in Notification.objects.get(attempts=1).last_error
