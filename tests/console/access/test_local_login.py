"""Password logins switched off (RSMQ_LOCAL_LOGIN=false, issue 30): the login page shows
the single sign-on button alone; only the break-glass users (RSMQ_BREAK_GLASS_USERS) may
still log in with a password (at /login/?break-glass), still throttled by django-axes;
anyone else's password session ends. Failed logins are audited, folded."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db
PASSWORD = "right"


@pytest.fixture(autouse=True)
def users(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast
    for name in ("otto", "glass"):
        User.objects.create_user(name, password=PASSWORD).groups.add(
            Group.objects.get(name="admin")
        )


@pytest.fixture
def passwords_off(settings) -> None:
    settings.RSMQ_LOCAL_LOGIN = False
    settings.RSMQ_BREAK_GLASS_USERS = ["glass"]
    settings.RSMQ_OIDC_ISSUER = "https://login.example.com"  # the button; never called here
    settings.RSMQ_OIDC_CLIENT_ID = "rsmq-console"


def log_in(client: Client, name: str, password: str = PASSWORD) -> int:
    return client.post("/login/", {"username": name, "password": password}).status_code


def test_the_login_page_shows_only_the_button_when_passwords_are_off(passwords_off) -> None:
    page = Client().get("/login/").content.decode()
    assert 'id="sso"' in page
    assert 'name="password"' not in page


def test_the_break_glass_form_is_at_its_own_address(passwords_off) -> None:
    page = Client().get("/login/?break-glass").content.decode()
    assert 'name="password"' in page
    assert "for the break-glass accounts only" in page


def test_a_password_is_refused_when_passwords_are_off(passwords_off) -> None:
    client = Client()
    assert log_in(client, "otto") == 200
    assert "_auth_user_id" not in client.session
    row = AuditEntry.objects.get(action="login_failed")
    assert (row.username, row.outcome, row.params["repeats"]) == ("otto", "denied", 1)


def test_a_break_glass_user_logs_in_when_passwords_are_off(passwords_off, console) -> None:
    client = Client()
    assert log_in(client, "glass") == 302
    assert client.get(console.overview()).status_code == 200
    login = AuditEntry.objects.get(action="login")
    assert (login.username, login.params) == ("glass", {"via": "password"})


def test_a_break_glass_user_is_still_throttled(passwords_off, settings) -> None:
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        log_in(client, "glass", "wrong")
    assert log_in(client, "glass") == 429
    assert "_auth_user_id" not in client.session


def test_a_password_session_ends_once_passwords_are_off(console, settings) -> None:
    otto, glass = Client(), Client()
    assert log_in(otto, "otto") == 302 and log_in(glass, "glass") == 302
    settings.RSMQ_LOCAL_LOGIN = False
    settings.RSMQ_BREAK_GLASS_USERS = ["glass"]
    assert otto.get(console.overview()).status_code == 302
    assert glass.get(console.overview()).status_code == 200
    ended = AuditEntry.objects.get(action="session_end")
    assert ended.username == "otto" and "RSMQ_LOCAL_LOGIN" in ended.detail


def test_failed_logins_fold_into_one_row_a_minute(settings) -> None:
    settings.AXES_FAILURE_LIMIT = 100
    client = Client()
    for _ in range(30):
        log_in(client, "otto", "wrong")
    row = AuditEntry.objects.get(action="login_failed")
    assert row.params["repeats"] == 30
    assert row.detail == "Wrong user name or password (from 127.0.0.1)."


def test_a_login_and_a_logout_are_audited() -> None:
    client = Client()
    log_in(client, "otto")
    client.post("/logout/")
    actions = list(AuditEntry.objects.order_by("id").values_list("action", "username"))
    assert actions == [("login", "otto"), ("logout", "otto")]


def test_the_audit_page_shows_the_sign_in_rows(admin) -> None:
    log_in(Client(), "otto", "wrong")
    log_in(Client(), "otto")
    page = admin.get("/audit/").content.decode()
    assert "login_failed" in page and "Wrong user name or password" in page
    assert '"via": "password"' in page.replace("&quot;", '"')
