"""/tokens/: admins make API tokens (shown once, kept hashed) and revoke them, audited;
nobody else sees the page or its link."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from dashboard.models import ApiToken, AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

TOKEN_RE = re.compile(r'<code id="new-token">(rsmq_[A-Za-z0-9_-]+)</code>')


def make(admin: Client, name: str = "billing", role: str = "operator", per_minute: int = 600):
    return admin.post("/tokens/", {"name": name, "role": role, "per_minute": per_minute})


def test_an_admin_makes_a_token_shown_once_that_works(console, admin: Client, rsmq) -> None:
    response = make(admin)
    assert response.status_code == 200
    (token,) = TOKEN_RE.findall(response.content.decode())
    assert token not in admin.get("/tokens/").content.decode()
    row = ApiToken.objects.get()
    assert (row.name, row.role, row.per_minute, row.created_by) == (
        "billing",
        "operator",
        600,
        "ada",
    )
    assert token.startswith(row.prefix) and row.digest != token
    rsmq.create_queue("q1")
    sent = Client().post(
        "/api/queues/q1/messages/", data='{"message": "hi"}', content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    assert sent.status_code == 201
    audit = list(AuditEntry.objects.order_by("id").values_list("username", "action", "outcome"))
    assert audit == [("ada", "create_token", "ok"), ("token:billing", "send", "ok")]


def test_a_revoked_token_no_longer_works(console, admin: Client, rsmq: RedisSMQ) -> None:
    (token,) = TOKEN_RE.findall(make(admin).content.decode())
    row = ApiToken.objects.get()
    admin.post("/tokens/", {"revoke": str(row.pk)})
    row.refresh_from_db()
    assert row.revoked_at is not None
    response = Client().get("/api/rest-rsmq/queues", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 401
    assert response.json() == {"error": "API token billing was revoked."}
    assert AuditEntry.objects.filter(action="revoke_token", username="ada").exists()


def test_it_refuses_bad_input_naming_the_field(console, admin: Client) -> None:
    make(admin)
    response = make(admin, per_minute=0)
    assert response.status_code == 422
    page = response.content.decode()
    assert "A token named billing exists already." in page
    assert "greater than or equal to 1" in page
    response = make(admin, name="two", role="root")
    assert response.status_code == 422 and ApiToken.objects.count() == 1


@pytest.mark.parametrize("role", ["viewer", "operator", "outsider"])
def test_only_admins_see_the_page_and_its_link(console, as_role, role: str) -> None:
    client = as_role(role)
    assert client.get("/tokens/").status_code == 403
    assert make(client).status_code == 403 and not ApiToken.objects.exists()
    assert 'href="/tokens/"' not in client.get(console.overview()).content.decode()


def test_the_admin_sees_the_link(console, admin: Client) -> None:
    assert 'href="/tokens/"' in admin.get(console.overview()).content.decode()


def test_the_anonymous_are_sent_to_log_in(console, anon: Client) -> None:
    response = anon.get("/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
