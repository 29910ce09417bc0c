"""Who owns it: an owner, an on-call contact and a runbook per queue or name pattern,
kept in the database, edited by admins only (audited, http(s) runbooks only), shown on
the queue page, the overview row's hover and in every alert's message (webhook payload,
Slack text, e-mail)."""

from __future__ import annotations

import json
import re
import time

import pytest
from django.core import mail
from django.test import Client
from support.receiver import Receiver

from dashboard.alerting import delivery
from dashboard.alerting.evaluate import evaluate
from dashboard.models import AlertRule, AuditEntry, Notification, Ownership
from dashboard.triage.owners import Owners
from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def form(ns: str, **fields: str) -> dict[str, str]:
    values = {"place": f"default/{ns}", "queue": "payments", "pattern": "",
              "owner": "Payments team", "oncall": "@payments-oncall",
              "runbook_url": "https://wiki.example/runbooks/payments"}  # fmt: skip
    values.update(fields)
    return values


def own(ns: str, target: str, owner: str, pattern: bool = False, **more: str) -> Ownership:
    return Ownership.objects.create(
        connection="default", namespace=ns, owner=owner,
        **({"pattern": target} if pattern else {"queue": target}), **more,
    )  # fmt: skip


# -- editing -----------------------------------------------------------------------------


def test_an_admin_adds_an_owner_and_it_is_audited(console, admin: Client, ns: str) -> None:
    response = admin.post("/owners/", form(ns))
    assert response.status_code == 302
    o = Ownership.objects.get()
    assert (o.connection, o.namespace, o.queue, o.owner, o.oncall, o.runbook_url) == (
        "default", ns, "payments", "Payments team", "@payments-oncall",
        "https://wiki.example/runbooks/payments",
    )  # fmt: skip
    assert o.updated_by == "ada"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome, entry.queue, entry.username) == (
        "owner_create", "ok", "payments", "ada",
    )  # fmt: skip
    assert entry.params["owner"] == "Payments team"
    page = admin.get("/owners/").content.decode()
    assert 'data-owner-row="payments"' in page and "@payments-oncall" in page


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "ftp://files.example/runbook", "file:///etc/passwd", "nope"]
)
def test_a_runbook_must_be_http_or_https(console, admin: Client, ns: str, url: str) -> None:
    response = admin.post("/owners/", form(ns, runbook_url=url))
    assert response.status_code == 422
    assert "runbook_url must be an http(s) URL of at most 500 characters" in (
        response.content.decode()
    )
    assert not Ownership.objects.exists()
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome) == ("owner_create", "invalid")


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"queue": "", "pattern": ""}, "Give either a queue or a pattern"),
        ({"queue": "a", "pattern": "a-*"}, "Give either a queue or a pattern"),
        ({"owner": ""}, "owner is required: 1 to 100 characters"),
        ({"owner": "x" * 101}, "owner must be 1 to 100 characters"),
        ({"queue": "bad name!"}, "queue"),
        ({"place": "default/elsewhere"}, "place must be a configured connection and namespace"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    console, admin: Client, ns: str, fields: dict[str, str], error: str
) -> None:
    response = admin.post("/owners/", form(ns, **fields))
    assert response.status_code == 422
    assert error in response.content.decode()
    assert not Ownership.objects.exists()


def test_a_queue_has_one_owner_row(console, admin: Client, ns: str) -> None:
    own(ns, "payments", "First")
    response = admin.post("/owners/", form(ns))
    assert response.status_code == 422
    assert "payments already has an owner here: edit it." in response.content.decode()
    assert Ownership.objects.get().owner == "First"


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_only_admins_edit_owners(console, as_role, ns: str, role: str) -> None:
    client = as_role(role)
    assert client.post("/owners/", form(ns)).status_code == 403
    assert not Ownership.objects.exists()
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome) == ("owner_create", "denied")
    row = own(ns, "payments", "Team")
    assert client.post(f"/owners/{row.pk}/", form(ns, owner="Other")).status_code == 403
    assert client.post(f"/owners/{row.pk}/delete/", {"confirm": "payments"}).status_code == 403
    assert Ownership.objects.get().owner == "Team"
    page = client.get("/owners/").content.decode()
    assert 'data-owner-row="payments"' in page  # everyone with a role sees them
    assert "Add an owner" not in page


def test_an_admin_edits_and_deletes_with_confirmation(console, admin: Client, ns: str) -> None:
    row = own(ns, "payments", "Team")
    response = admin.post(f"/owners/{row.pk}/", form(ns, owner="New team", oncall=""))
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.owner, row.oncall) == ("New team", "")
    response = admin.post(f"/owners/{row.pk}/delete/", {"confirm": "wrong"})
    assert response.status_code == 422
    assert "type payments exactly" in response.content.decode()
    assert Ownership.objects.exists()
    assert admin.post(f"/owners/{row.pk}/delete/", {"confirm": "payments"}).status_code == 302
    assert not Ownership.objects.exists()
    actions = list(AuditEntry.objects.order_by("id").values_list("action", "outcome"))
    assert actions == [("owner_edit", "ok"), ("owner_delete", "invalid"), ("owner_delete", "ok")]


# -- matching and showing ----------------------------------------------------------------


def test_a_queues_own_row_beats_the_longest_matching_pattern(console, ns: str) -> None:
    own(ns, "pay*", "Broad", pattern=True)
    own(ns, "payments-*", "Narrow", pattern=True)
    own(ns, "payments-eu", "Exact")
    owners = Owners("default", ns)
    assert owners.of("payments-eu").owner == "Exact"  # type: ignore[union-attr]
    assert owners.of("payments-us").owner == "Narrow"  # type: ignore[union-attr]
    assert owners.of("payroll").owner == "Broad"  # type: ignore[union-attr]
    assert owners.of("orders") is None
    assert Owners("default", ns + "x").of("payments-eu") is None  # another namespace


def test_the_queue_page_shows_who_owns_it(console, viewer: Client, rsmq: RedisSMQ, ns) -> None:
    rsmq.create_queue("payments")
    rsmq.create_queue("orders")
    own(ns, "pay*", "Payments team", pattern=True, oncall="@pay",
        runbook_url="https://wiki.example/pay")  # fmt: skip
    page = viewer.get(console.queue("payments")).content.decode()
    assert '<dd data-field="owner">Payments team</dd>' in page
    assert '<dd data-field="oncall">@pay</dd>' in page
    assert '<a href="https://wiki.example/pay" rel="noopener noreferrer">' in page
    page = viewer.get(console.queue("orders")).content.decode()
    assert "No owner recorded" in page


def test_the_overview_row_hover_names_the_owner(console, viewer: Client, rsmq: RedisSMQ, ns):
    rsmq.create_queue("payments")
    rsmq.create_queue("orders")
    own(ns, "payments", "Payments team", oncall="@pay", runbook_url="https://wiki.example/pay")
    page = viewer.get(console.overview()).content.decode()
    link = re.search(r'<a href="[^"]*/q/payments/"([^>]*)>payments</a>', page)
    assert link is not None
    assert (
        'title="owner Payments team · on call @pay · runbook https://wiki.example/pay"' in (link[1])
    )
    other = re.search(r'<a href="[^"]*/q/orders/"([^>]*)>orders</a>', page)
    assert other is not None and "title=" not in other[1]


# -- in every alert's message ------------------------------------------------------------


def test_every_alert_message_names_the_owner(
    console, lake, add_snapshot, redis_now, ns: str, receiver: Receiver, settings
) -> None:
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]  # the test's own receiver, on loopback
    own(ns, "pay*", "Payments team", pattern=True, oncall="@pay",
        runbook_url="https://wiki.example/pay")  # fmt: skip
    AlertRule.objects.create(
        name="backlog", connection="default", namespace=ns, pattern="*",
        metric=AlertRule.Metric.VISIBLE, threshold=5, webhook_url=receiver.at("/hook"),
        webhook_secret="k", slack_url=receiver.at("/slack"), emails="oncall@example.com",
    )  # fmt: skip
    now = redis_now()
    add_snapshot("payments", now, msgs=10)
    add_snapshot("orders", now, msgs=10)
    evaluate()
    assert Notification.objects.count() == 3
    for n in Notification.objects.all():
        assert delivery.send_one(n.pk) is True
    webhook, slack = sorted((b for _, b in receiver.got), key=lambda b: b"alerts" not in b)
    alerts = {a["queue"]: a for a in json.loads(webhook)["alerts"]}
    assert alerts["payments"]["owner"] == {
        "owner": "Payments team", "oncall": "@pay", "runbook_url": "https://wiki.example/pay",
        "matched": "pay*",
    }  # fmt: skip
    assert alerts["orders"]["owner"] is None
    line = (
        "FIRING: backlog on default/{ns}/payments (value 10) — owner Payments team,"
        " on call @pay, runbook https://wiki.example/pay"
    )
    text = json.loads(slack)["text"]
    assert line.format(ns=ns) in text
    assert f"FIRING: backlog on default/{ns}/orders (value 10)\n" in text + "\n"
    (email,) = mail.outbox
    assert line.format(ns=ns) in email.body


def test_an_owner_with_a_line_break_stays_on_its_alerts_line() -> None:
    payload = {
        "rule": {"name": "backlog", "connection": "c", "namespace": "n"},
        "alerts": [{"queue": "q", "state": "firing", "value": 1.0,
                    "owner": {"owner": "Team\nFIRING: forged", "oncall": "@a\r\nb",
                              "runbook_url": ""}}],
    }  # fmt: skip
    (line,) = delivery.lines(payload)
    assert line == "FIRING: backlog on c/n/q (value 1) — owner Team FIRING: forged, on call @a b"


# -- as of a past time -------------------------------------------------------------------


def test_owners_as_of_a_past_time_undo_the_changes_audited_since(
    console, admin: Client, ns: str
) -> None:
    """Created, edited (its pattern too), deleted through the pages: at each moment in
    between, Owners(at=) tells who owned what then, from the audit rows."""

    def moment() -> int:
        time.sleep(0.01)
        at = round(time.time() * 1000)
        time.sleep(0.01)
        return at

    before_all = moment()
    assert admin.post("/owners/", form(ns)).status_code == 302
    orders_form = form(ns, queue="", pattern="orders-*", owner="Orders")
    assert admin.post("/owners/", orders_form).status_code == 302
    created = moment()
    payments = Ownership.objects.get(queue="payments")
    orders = Ownership.objects.get(pattern="orders-*")
    edit = form(ns, queue="", pattern="orders-eu-*", owner="Orders EU")
    assert admin.post(f"/owners/{orders.pk}/", edit).status_code == 302
    assert admin.post(f"/owners/{payments.pk}/", form(ns, owner="Billing")).status_code == 302
    edited = moment()
    assert admin.post(f"/owners/{payments.pk}/delete/", {"confirm": "payments"}).status_code == 302

    def owners(at: int | None) -> dict[str, str]:
        o = Owners("default", ns, at)
        return {q: x.owner for q in ("payments", "orders-us-1", "orders-eu-1") if (x := o.of(q))}

    assert owners(None) == {"orders-eu-1": "Orders EU"}
    assert owners(edited) == {"payments": "Billing", "orders-eu-1": "Orders EU"}
    assert owners(created) == {
        "payments": "Payments team", "orders-us-1": "Orders", "orders-eu-1": "Orders",
    }  # fmt: skip
    assert owners(before_all) == {}
