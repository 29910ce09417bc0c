"""Nothing one user does grows the console without bound: audit rows, finished
notifications, alert history and ended silences older than RSMQ_AUDIT_RETENTION days are
pruned in short batches (a notification still to send never); all the Undos of one Redis keep at
most RSMQ_UNDO_TOTAL_MB (the oldest given up first, each giving up audited); a place
keeps at most RSMQ_ANNOTATIONS_MAX annotations; and a wrong bearer token is refused even
beside a session, as the docs say."""

from __future__ import annotations

import datetime as dt
import json

import pytest
import redis
from django.test import Client
from django.utils import timezone

from dashboard.access import tokens
from dashboard.audit import retention
from dashboard.models import (
    Alert,
    AlertEvent,
    AlertRule,
    Annotation,
    AuditEntry,
    Notification,
    Silence,
    UndoEntry,
)
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def test_audit_rows_past_the_retention_are_pruned_in_batches(settings) -> None:
    settings.RSMQ_AUDIT_RETENTION = 90
    now = timezone.now()
    AuditEntry.objects.bulk_create(
        [AuditEntry(at=now - dt.timedelta(days=91, seconds=i), username="u", connection="c",
                    namespace="n", action="purge", outcome="ok") for i in range(12_000)]
        + [AuditEntry(at=now - dt.timedelta(days=89), username="u", connection="c",
                      namespace="n", action="purge", outcome="ok") for _ in range(10)]
    )  # fmt: skip
    deleted, more = retention.prune(budget=0)  # one batch, then it says more are left
    assert (deleted, more) == (retention.BATCH, True)
    deleted, more = retention.prune()
    assert (deleted, more) == (12_000 - retention.BATCH, False)
    assert AuditEntry.objects.count() == 10
    settings.RSMQ_AUDIT_RETENTION = 0  # every row kept
    assert retention.prune(now=now + dt.timedelta(days=1000)) == (0, False)


def test_finished_notifications_alert_history_and_ended_silences_go_with_the_audit(
    settings,
) -> None:
    settings.RSMQ_AUDIT_RETENTION = 30
    now = timezone.now()
    old, recent = now - dt.timedelta(days=31), now - dt.timedelta(days=29)
    rule = AlertRule.objects.create(name="r", connection="c", namespace="n", queue="q",
                                    metric=AlertRule.Metric.VISIBLE, threshold=1)  # fmt: skip
    ms = int(old.timestamp() * 1000)
    alert = Alert.objects.create(rule=rule, connection="c", namespace="n", queue="q",
                                 state="firing", since=ms, changed=ms)  # fmt: skip
    for at in (old, recent):
        AlertEvent.objects.create(alert=alert, at=int(at.timestamp() * 1000), state="firing")
    kinds = {"sent": {"sent": old}, "gave_up": {"gave_up": old}, "held": {"held": "deploy"},
             "to_send": {}}  # fmt: skip
    for key, fields in kinds.items():
        Notification.objects.create(key=key, rule=rule, channel="webhook", target="x",
                                    payload={}, next_attempt=old, **fields)  # fmt: skip
    Notification.objects.update(created=old)  # auto_now_add: set after
    Notification.objects.create(key="new", rule=rule, channel="webhook", target="x",
                                payload={}, next_attempt=now, sent=now)  # fmt: skip
    made = dict(connection="c", namespace="n", pattern="q", reason="r", created_by="u")
    Silence.objects.create(**made, starts=old, ends=old + dt.timedelta(hours=1))
    kept = [Silence.objects.create(**made, starts=old, ends=None).pk,
            Silence.objects.create(**made, starts=old, ends=recent).pk]  # fmt: skip
    assert retention.prune() == (5, False)
    assert sorted(Notification.objects.values_list("key", flat=True)) == ["new", "to_send"]
    assert [e.at for e in AlertEvent.objects.all()] == [int(recent.timestamp() * 1000)]
    assert sorted(Silence.objects.values_list("pk", flat=True)) == kept
    assert Alert.objects.count() == 1


@pytest.fixture
def admin_api(console) -> Client:
    _, token = tokens.mint("bot", "admin", "test", 10_000)
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def test_the_oldest_undos_are_given_up_past_the_total_budget(
    console, settings, admin_api: Client, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    settings.RSMQ_UNDO_TOTAL_MB = 0.05  # 52 KB: two purges of ~20 KB fit, not three
    for q in ("a", "b", "c"):
        rsmq.create_queue(q, maxsize=-1)
        rsmq.send_messages(q, ["x" * 1000] * 20)
    tokens_of = {}
    for q in ("a", "b", "c"):
        answer = admin_api.post(f"/api/queues/{q}/purge/")
        assert answer.status_code == 200 and answer.json()["count"] == 20
        tokens_of[q] = answer.json()["undo"]
    given = UndoEntry.objects.get(queue="a")
    assert given.result == {"given_up": True, "why": "RSMQ_UNDO_TOTAL_MB (0.05 MB) spent"}
    assert given.expired and not r.exists(f"{ns}:@undo:{tokens_of['a']}")
    assert r.exists(f"{ns}:@undo:{tokens_of['c']}")
    row = AuditEntry.objects.get(action="undo_given_up")
    assert (row.queue, row.count, row.params["token"]) == ("a", 20, tokens_of["a"])
    assert "before its time: RSMQ_UNDO_TOTAL_MB" in row.detail
    late = admin_api.post(f"/api/undo/{tokens_of['a']}/")
    assert (
        late.status_code == 200
        and late.json()["expired"]
        and rsmq.get_queue_attributes("a").msgs == 0
    )
    kept = admin_api.post(f"/api/undo/{tokens_of['c']}/")
    assert kept.json()["restored"] == 20


def test_a_place_keeps_at_most_so_many_annotations(console, settings) -> None:
    settings.RSMQ_ANNOTATIONS_MAX = 3
    _, token = tokens.mint("ci", "operator", "test", 10_000)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")

    def post() -> tuple[int, dict[str, str]]:
        answer = api.post("/api/annotations/", json.dumps({"text": "deploy"}),
                          content_type="application/json")  # fmt: skip
        return answer.status_code, answer.json()

    assert [post()[0] for _ in range(3)] == [201, 201, 201]
    status, body = post()
    assert status == 409 and "(RSMQ_ANNOTATIONS_MAX, 3): nothing added" in body["error"]
    assert Annotation.objects.count() == 3
    refused = AuditEntry.objects.get(action="annotation_create", outcome="invalid")
    assert "RSMQ_ANNOTATIONS_MAX" in refused.detail
    Annotation.objects.update(at=0)  # dated past what a chart can show: no longer counted
    assert post()[0] == 201


@pytest.mark.parametrize("path", ["/metrics", "/api/queues/"])
@pytest.mark.parametrize("metrics_token", ["", "the-scrapers-token"])
def test_a_wrong_bearer_token_is_refused_even_with_a_session(
    console, viewer: Client, settings, path: str, metrics_token: str
) -> None:
    settings.RSMQ_METRICS_TOKEN = metrics_token
    assert viewer.get(path).status_code == 200  # the session alone reads
    for given in ("Bearer garbage", "Bearer rsmq_garbage", "Basic dXNlcjpwdw=="):
        refused = viewer.get(path, HTTP_AUTHORIZATION=given)
        assert refused.status_code == 401, (given, refused.content[:200])
        assert refused["WWW-Authenticate"] == 'Bearer realm="rsmq-console"'
