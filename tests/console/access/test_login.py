"""Logging in and out, and the Django admin's audit log, which nobody can edit."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def otto(settings) -> User:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast
    user = User.objects.create_user("otto", password="right")
    user.groups.add(Group.objects.get(name="operator"))
    return user


def test_it_shows_the_login_form(anon: Client) -> None:
    response = anon.get("/login/")
    assert response.status_code == 200
    assert 'name="password"' in response.content.decode()


def test_it_logs_in(otto: User, anon: Client) -> None:
    response = anon.post("/login/", {"username": "otto", "password": "right"})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_it_logs_in_to_the_page_asked_for(console, otto: User, anon: Client) -> None:
    data = {"username": "otto", "password": "right", "next": console.queue()}
    response = anon.post("/login/", data)
    assert response["Location"] == console.queue()


def test_it_refuses_a_wrong_password(otto: User, anon: Client) -> None:
    response = anon.post("/login/", {"username": "otto", "password": "wrong"})
    assert response.status_code == 200
    assert "Your username and password didn't match." in response.content.decode()


def test_it_logs_out(console, viewer: Client) -> None:
    response = viewer.post("/logout/")
    assert response.status_code == 302
    assert response["Location"] == "/login/"
    assert viewer.get(console.overview()).status_code == 302


# -- the admin's audit log ---------------------------------------------------------------


@pytest.fixture
def root(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root"))
    return client


@pytest.fixture
def entry(db) -> AuditEntry:
    return AuditEntry.objects.create(
        username="otto", connection="default", namespace="rsmq", action="purge", outcome="ok"
    )


def test_it_lists_the_audit_log_in_the_admin(entry: AuditEntry, root: Client) -> None:
    response = root.get("/admin/dashboard/auditentry/")
    assert response.status_code == 200
    assert "purge" in response.content.decode()


def test_it_lets_nobody_add_to_the_audit_log_in_the_admin(root: Client) -> None:
    assert root.get("/admin/dashboard/auditentry/add/").status_code == 403


def test_it_lets_nobody_change_the_audit_log_in_the_admin(entry: AuditEntry, root: Client) -> None:
    url = f"/admin/dashboard/auditentry/{entry.pk}/change/"
    response = root.post(url, {"username": "mallory", "outcome": "ok"})
    assert response.status_code == 403
    entry.refresh_from_db()
    assert entry.username == "otto"


def test_it_lets_nobody_delete_from_the_audit_log_in_the_admin(
    entry: AuditEntry, root: Client
) -> None:
    response = root.post(f"/admin/dashboard/auditentry/{entry.pk}/delete/", {"post": "yes"})
    assert response.status_code == 403
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


# -- throttling (django-axes) -------------------------------------------------------------


def test_it_locks_a_user_name_out_after_too_many_failures(otto: User, anon: Client, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        anon.post("/login/", {"username": "otto", "password": "wrong"})
    response = anon.post("/login/", {"username": "otto", "password": "right"})
    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert "_auth_user_id" not in anon.session


def test_it_audits_throttled_logins_folded_into_a_row_a_minute(otto: User, anon: Client, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT + 50):
        anon.post("/login/", {"username": "otto", "password": "wrong"})
    rows = AuditEntry.objects.filter(action="login")
    row = rows.get()  # the lockout and each of the 50 tries while locked out: one row
    assert (row.username, row.outcome, row.params["repeats"]) == ("otto", "throttled", 51)
    assert "127.0.0.1" in row.detail
    AuditEntry.objects.filter(pk=row.pk).update(at=row.at - dt.timedelta(minutes=2))
    anon.post("/login/", {"username": "otto", "password": "wrong"})
    assert rows.count() == 2  # a minute later: a row of its own


def test_a_locked_out_name_does_not_lock_out_another(otto: User, anon: Client, settings):
    User.objects.create_user("ada", password="right")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        anon.post("/login/", {"username": "otto", "password": "wrong"})
    response = anon.post("/login/", {"username": "ada", "password": "right"})
    assert response.status_code == 302


def test_the_lock_lifts_after_the_cool_off(otto: User, anon: Client, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        anon.post("/login/", {"username": "otto", "password": "wrong"})
    settings.AXES_COOLOFF_TIME = dt.timedelta(seconds=0)
    response = anon.post("/login/", {"username": "otto", "password": "right"})
    assert response.status_code == 302
