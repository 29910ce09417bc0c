"""Acknowledging a firing alert (dashboard/alerting/acks.py): from the alerts page, or
from the signed link its notification carries (a confirm page: the GET changes nothing,
the POST acknowledges, once). An acknowledged alert is not told again until it resolves
and fires anew. Audited as alert_ack."""

from __future__ import annotations

import pytest
from django.core import signing

from dashboard.alerting import acks
from dashboard.alerting.evaluate import evaluate
from dashboard.models import Alert, AuditEntry, Notification

pytestmark = pytest.mark.django_db


@pytest.fixture
def firing(rule_of, add_snapshot, redis_now) -> Alert:
    rule_of(renotify_seconds=1)
    add_snapshot("q1", redis_now() - 3000, msgs=10)
    evaluate()
    return Alert.objects.get()


def test_a_firing_notification_carries_its_acknowledge_link(firing, settings) -> None:
    link = Notification.objects.get().payload["alerts"][0]["ack_url"]
    assert link.startswith("/alerts/ack/link/") and link.endswith("/")
    assert acks.read(link.split("/")[-2]).alert == firing


def test_the_link_is_absolute_where_the_console_says_where_it_is(
    rule_of, add_snapshot, redis_now, settings
) -> None:
    settings.RSMQ_CONSOLE_URL = "https://console.example.com/"
    rule_of(slack_url="https://hooks.example.com/x")
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    n = Notification.objects.get(channel="slack")
    assert n.payload["alerts"][0]["ack_url"].startswith("https://console.example.com/alerts/ack/")
    from dashboard.alerting.delivery import lines

    assert "— acknowledge: https://console.example.com/alerts/ack/link/" in lines(n.payload)[0]


def test_an_operator_acknowledges_on_the_alerts_page(firing, operator) -> None:
    page = operator.get("/alerts/").content.decode()
    assert f'action="/alerts/ack/{firing.pk}/"' in page
    assert operator.post(f"/alerts/ack/{firing.pk}/").status_code == 302
    firing.refresh_from_db()
    assert firing.acked is not None and firing.acked_by == "otto"
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.queue) == ("alert_ack", "ok", "q1")
    assert row.params["from"] == "console"
    assert "by otto" in operator.get("/alerts/").content.decode()


def test_a_viewer_may_not_acknowledge(firing, viewer) -> None:
    assert viewer.post(f"/alerts/ack/{firing.pk}/").status_code == 403
    firing.refresh_from_db()
    assert firing.acked is None
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("alert_ack", "denied")


def test_the_links_get_is_a_confirm_page_that_changes_nothing(firing, operator) -> None:
    url = f"/alerts/ack/link/{acks.token(firing)}/"
    page = operator.get(url)
    assert page.status_code == 200
    assert "data-ack-confirm" in page.content.decode() and "backlog" in page.content.decode()
    firing.refresh_from_db()
    assert firing.acked is None
    assert not AuditEntry.objects.exists()


def test_the_links_post_acknowledges_once(firing, operator, admin) -> None:
    url = f"/alerts/ack/link/{acks.token(firing)}/"
    done = operator.post(url)
    assert done.status_code == 200 and "data-ack-done" in done.content.decode()
    firing.refresh_from_db()
    assert firing.acked_by == "otto"
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome, row.params["from"]) == ("alert_ack", "ok", "link")
    again = admin.post(url)
    assert again.status_code == 409
    assert "Used already" in again.content.decode()
    assert admin.get(url).status_code == 400  # the page says so too


def test_a_link_without_login_asks_for_one(firing, anon) -> None:
    response = anon.get(f"/alerts/ack/link/{acks.token(firing)}/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


@pytest.mark.parametrize(
    "token",
    [
        "nonsense",
        signing.dumps({"a": 1, "s": 1}, salt="another salt"),
    ],
    ids=["not signed", "signed for something else"],
)
def test_a_link_the_console_did_not_make_is_refused(firing, operator, token: str) -> None:
    response = operator.get(f"/alerts/ack/link/{token}/")
    assert response.status_code == 400
    assert "not an acknowledge link" in response.content.decode()


def test_a_link_of_an_earlier_firing_no_longer_acknowledges(
    firing, operator, add_snapshot, redis_now
) -> None:
    old = acks.token(firing)
    t = redis_now()
    add_snapshot("q1", t - 2000, msgs=0)
    evaluate()
    add_snapshot("q1", t - 1000, msgs=10)
    evaluate()  # fires anew: another ``since``
    response = operator.post(f"/alerts/ack/link/{old}/")
    assert response.status_code == 409
    assert "is over" in response.content.decode()


def test_an_acknowledged_alert_is_not_told_again_until_it_fires_anew(
    firing, operator, add_snapshot, redis_now
) -> None:
    operator.post(f"/alerts/ack/{firing.pk}/")
    t = redis_now()
    for at in (t - 2000, t - 1000):
        add_snapshot("q1", at, msgs=11)
        evaluate()
    assert Notification.objects.count() == 1  # its firing only, though it re-notifies each 1 s
    add_snapshot("q1", t, msgs=0)
    evaluate()
    firing.refresh_from_db()
    assert firing.state == Alert.State.RESOLVED and firing.acked is not None
    states = [n.payload["alerts"][0]["state"] for n in Notification.objects.order_by("id")]
    assert states == ["firing", "resolved"]  # its end is told all the same


def test_a_new_firing_clears_the_acknowledgement(firing, operator, add_snapshot, redis_now) -> None:
    operator.post(f"/alerts/ack/{firing.pk}/")
    t = redis_now()
    add_snapshot("q1", t - 1000, msgs=0)
    evaluate()
    add_snapshot("q1", t, msgs=10)
    evaluate()
    firing.refresh_from_db()
    assert firing.state == Alert.State.FIRING and firing.acked is None and firing.acked_by == ""


def test_the_queue_page_says_who_acknowledged_its_alert(firing, operator, console, rsmq) -> None:
    rsmq.create_queue("q1")
    operator.post(f"/alerts/ack/{firing.pk}/")
    page = operator.get(console.queue("q1")).content.decode()
    assert "acknowledged by otto" in page


def test_a_notification_of_many_alerts_carries_no_links(
    rule_of, add_snapshot, redis_now, monkeypatch
) -> None:
    from dashboard.alerting import evaluate as evaluation

    monkeypatch.setattr(evaluation, "ACK_LINKS_MAX", 1)
    rule_of(queue="", pattern="q*")
    now = redis_now()
    add_snapshot("q1", now, msgs=10)
    add_snapshot("q2", now, msgs=10)
    evaluate()
    alerts = Notification.objects.get().payload["alerts"]
    assert len(alerts) == 2 and not any("ack_url" in a for a in alerts)
