"""The alerts page and its rules: admins create, edit and delete them (audited,
validated); everyone with a role sees them; the queue page shows its queue's alerts."""

from __future__ import annotations

import html

import pytest

from dashboard.models import Alert, AlertEvent, AlertRule, AuditEntry


@pytest.fixture(autouse=True)
def hooks_allowed(settings) -> None:
    """The rules here aim at hooks.example: allowed by name, so it is never looked up."""
    settings.RSMQ_OUTBOUND_ALLOW = ["hooks.example"]


@pytest.fixture
def form(console) -> dict[str, str]:
    return {
        "name": "stalled orders", "place": f"default/{console.ns}", "queue": "",
        "pattern": "orders-*", "metric": "oldest_age", "op": "gt", "threshold": "300",
        "for_seconds": "60", "enabled": "on", "webhook_url": "http://hooks.example/rsmq",
        "slack_url": "", "emails": "ops@example.com, oncall@example.com",
    }  # fmt: skip


@pytest.fixture
def rule(db, console) -> AlertRule:
    return AlertRule.objects.create(
        name="deep", connection="default", namespace=console.ns, queue="q1",
        metric="visible", threshold=100, webhook_url="http://hooks.example/x", webhook_secret="s",
    )  # fmt: skip


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_an_admin_creates_a_rule_and_it_is_audited(admin, console, form) -> None:
    response = admin.post("/alerts/new/", form)
    assert response.status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.connection, rule.namespace, rule.pattern) == ("default", console.ns, "orders-*")
    assert (rule.metric, rule.threshold, rule.for_seconds) == ("oldest_age", 300.0, 60)
    assert rule.recipients == ["ops@example.com", "oncall@example.com"]
    assert len(rule.webhook_secret) == 64  # made for it, shown on its page
    assert rule.webhook_secret in text(admin.get(f"/alerts/{rule.pk}/"))
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.outcome, entry.queue) == ("alert_rule_create", "ok", "orders-*")
    assert entry.params["threshold"] == 300.0


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("for_seconds", "-1", "for_seconds must be whole seconds between 0 and 604800"),
        ("for_seconds", "9999999", "for_seconds must be whole seconds between 0 and 604800"),
        ("threshold", "abc", "threshold must be a number between -1e+12 and 1e+12"),
        ("threshold", "", "threshold is required: a number between -1e+12 and 1e+12"),
        ("emails", "ops@", "emails: 'ops@' is not an e-mail address"),
        ("pattern", "", "Give either a queue or a pattern of queue names (one)."),
        ("queue", "bad name!", "Invalid queue format: 'bad name!' (1 to 160 characters"),
        ("webhook_url", "", "Give at least one receiver"),
        (
            "webhook_url",
            "not a url",
            "webhook_url must be an http(s) URL of at most 500 characters",
        ),
        ("name", "n" * 101, "name must be 1 to 100 characters"),
        ("metric", "nothing", "metric must be one of the listed metrics or flags"),
        ("op", "eq", "op must be above (gt) or below (lt)"),
        ("place", "elsewhere/rsmq", "place must be a configured connection and namespace"),
    ],
)
def test_invalid_input_is_refused_naming_the_field_and_changes_nothing(
    admin, form, field: str, value: str, error: str
) -> None:
    form[field] = value
    if field == "webhook_url" and not value:
        form["emails"] = ""
    if field == "queue":
        form["pattern"] = ""
    response = admin.post("/alerts/new/", form)
    assert response.status_code == 422
    assert error in text(response)
    assert not AlertRule.objects.exists()
    assert AuditEntry.objects.get().outcome == "invalid"


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_it_requires_the_admin_role_to_change_rules(as_role, role: str, form, rule) -> None:
    client = as_role(role)
    assert client.get("/alerts/new/").status_code == 403
    assert client.post("/alerts/new/", form).status_code == 403
    assert client.post(f"/alerts/{rule.pk}/delete/", {"confirm": "deep"}).status_code == 403
    assert list(AlertRule.objects.values_list("name", flat=True)) == ["deep"]
    denied = AuditEntry.objects.values_list("action", "outcome")
    assert sorted(denied) == [("alert_rule_create", "denied"), ("alert_rule_delete", "denied")]


def test_an_admin_edits_a_rule(admin, rule, form) -> None:
    form.update(name="deeper", queue="q1", pattern="", metric="visible", threshold="500")
    assert admin.post(f"/alerts/{rule.pk}/", form).status_code == 302
    rule.refresh_from_db()
    assert (rule.name, rule.threshold, rule.webhook_secret) == ("deeper", 500.0, "s")
    assert AuditEntry.objects.get().action == "alert_rule_edit"


def test_deleting_a_rule_takes_its_name_typed(admin, rule) -> None:
    refused = admin.post(f"/alerts/{rule.pk}/delete/", {"confirm": "dee"})
    assert refused.status_code == 422
    assert "confirm: type deep exactly to delete the rule" in text(refused)
    assert AlertRule.objects.exists()
    assert admin.post(f"/alerts/{rule.pk}/delete/", {"confirm": "deep"}).status_code == 302
    assert not AlertRule.objects.exists()
    outcomes = list(AuditEntry.objects.order_by("id").values_list("action", "outcome"))
    assert outcomes == [("alert_rule_delete", "invalid"), ("alert_rule_delete", "ok")]


def test_the_alerts_page_shows_rules_firing_alerts_and_history(viewer, console, rule) -> None:
    alert = Alert.objects.create(
        rule=rule, connection="default", namespace=console.ns, queue="q1", state="firing",
        value=150, since=1_700_000_000_000, changed=1_700_000_000_000,
    )  # fmt: skip
    AlertEvent.objects.create(alert=alert, at=1_700_000_000_000, state="firing", value=150)
    page = text(viewer.get("/alerts/"))
    assert "visible messages above 100" in page
    assert f'href="/c/default/{console.ns}/q/q1/"' in page
    assert "2023-11-14 22:13:20" in page  # the history's row
    assert "New rule" not in page  # a viewer's page offers no changes
    assert 'href="/alerts/"' in page  # the nav's link


def test_the_queue_page_shows_its_queues_alerts(viewer, console, rule) -> None:
    console.rsmq.create_queue("q1")
    Alert.objects.create(
        rule=rule, connection="default", namespace=console.ns, queue="q1", state="pending",
        value=120, since=1_700_000_000_000, changed=1_700_000_000_000,
    )  # fmt: skip
    page = text(viewer.get(console.queue("q1")))
    assert 'id="queue-alerts"' in page
    assert '<span class="alert-state pending">pending</span>' in page
    assert "deep" in page


def test_it_requires_a_login(anon) -> None:
    assert anon.get("/alerts/").status_code == 302
