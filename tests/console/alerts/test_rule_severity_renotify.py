"""A rule's severity (high: at once; low: the daily digest) and re-notify interval, set on
its form, audited with it, and checked: a bad value is a form error naming the field and
its range."""

from __future__ import annotations

import html

import pytest

from dashboard.models import AlertRule, AuditEntry

pytestmark = pytest.mark.django_db
RENOTIFY = "renotify_seconds must be whole seconds between 0 and 604800"


@pytest.fixture
def form(console) -> dict[str, str]:
    return {
        "name": "backlog", "place": f"default/{console.ns}", "queue": "q1", "pattern": "",
        "metric": "visible", "op": "gt", "threshold": "100", "for_seconds": "0",
        "enabled": "on", "emails": "ops@example.com",
    }  # fmt: skip


def test_an_admin_sets_severity_and_renotify(admin, form) -> None:
    data = {**form, "severity": "low", "renotify_seconds": "600"}
    assert admin.post("/alerts/new/", data).status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.severity, rule.renotify_seconds) == ("low", 600)
    params = AuditEntry.objects.get().params
    assert (params["severity"], params["renotify_seconds"]) == ("low", 600)
    page = admin.get("/alerts/").content.decode()
    assert "low, again every 600 s" in page


def test_without_them_a_rule_is_high_and_told_once(admin, form) -> None:
    assert admin.post("/alerts/new/", form).status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.severity, rule.renotify_seconds) == ("high", 0)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"renotify_seconds": "-1"}, RENOTIFY),
        ({"renotify_seconds": "604801"}, RENOTIFY),
        ({"severity": "urgent"}, "severity must be high or low"),
    ],
)
def test_bad_values_are_form_errors_naming_the_field(admin, form, fields, says) -> None:
    response = admin.post("/alerts/new/", {**form, **fields})
    assert response.status_code == 422
    assert says in html.unescape(response.content.decode())
    assert not AlertRule.objects.exists()
