"""Sign-in through an authenticating proxy (issue 30): the user header and the groups
header count only from RSMQ_TRUSTED_PROXIES; from any other address they are ignored,
whatever they say. The groups follow the header; a session ends when the proxy stops
naming its user. Each audited."""

from __future__ import annotations

import ipaddress

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.access.grants import role_of
from dashboard.access.roles import Role
from dashboard.models import AuditEntry

pytestmark = pytest.mark.django_db
PROXY, CLIENT = "127.0.0.1", "203.0.113.9"


@pytest.fixture(autouse=True)
def behind_proxy(settings, console) -> None:
    settings.RSMQ_TRUSTED_PROXIES = [ipaddress.ip_network(PROXY)]
    settings.RSMQ_PROXY_USER_HEADER = "X-Forwarded-User"
    settings.RSMQ_PROXY_GROUPS_HEADER = "X-Forwarded-Groups"
    settings.RSMQ_SSO_GROUPS = {"rsmq-operators": ["operator"], "rsmq-admins": ["admin"]}


def via(peer: str, user: str | None, groups: str | None = None) -> dict[str, str]:
    extra = {"REMOTE_ADDR": peer}
    if user is not None:
        extra["HTTP_X_FORWARDED_USER"] = user
    if groups is not None:
        extra["HTTP_X_FORWARDED_GROUPS"] = groups
    return extra


def test_a_trusted_proxy_signs_its_user_in_with_their_groups(console) -> None:
    client = Client()
    answer = client.get(console.overview(), **via(PROXY, "pat", "rsmq-operators,other"))
    assert answer.status_code == 200
    pat = User.objects.get(username="pat")
    assert role_of(pat) == Role.OPERATOR and not pat.has_usable_password()
    login = AuditEntry.objects.get(action="login")
    assert (login.username, login.params) == ("pat", {"via": "proxy"})
    change = AuditEntry.objects.get(action="sso_groups")
    assert change.params == {"added": ["operator"], "removed": [],
                             "claimed": ["other", "rsmq-operators"], "via": "proxy"}  # fmt: skip
    # The next request of the session: no second login.
    assert client.get(console.overview(), **via(PROXY, "pat", "rsmq-operators")).status_code == 200
    assert AuditEntry.objects.filter(action="login").count() == 1


def test_a_forged_header_from_an_untrusted_address_is_ignored(console) -> None:
    client = Client()
    answer = client.get(console.overview(), **via(CLIENT, "root", "rsmq-admins"))
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    assert not User.objects.filter(username="root").exists()
    assert not AuditEntry.objects.filter(action="login").exists()


def test_a_forged_header_does_not_take_over_an_existing_user(console) -> None:
    User.objects.create_user("root")
    answer = Client().get("/api/queues/", **via(CLIENT, "root", "rsmq-admins"))
    assert answer.status_code == 401


def test_the_groups_header_changes_the_roles_at_the_next_request(console) -> None:
    client = Client()
    client.get(console.overview(), **via(PROXY, "pat", "rsmq-admins"))
    assert role_of(User.objects.get(username="pat")) == Role.ADMIN
    assert client.get(console.overview(), **via(PROXY, "pat", "")).status_code == 403
    assert role_of(User.objects.get(username="pat")) == Role.NONE
    last = AuditEntry.objects.filter(action="sso_groups").order_by("-id").first()
    assert last is not None and last.params["removed"] == ["admin"]


def test_the_session_ends_when_the_proxy_stops_naming_the_user(console) -> None:
    client = Client()
    client.get(console.overview(), **via(PROXY, "pat", "rsmq-operators"))
    answer = client.get(console.overview(), **via(PROXY, None))
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    ended = AuditEntry.objects.get(action="session_end")
    assert ended.username == "pat" and "no longer names" in ended.detail


def test_the_same_header_from_an_untrusted_address_ends_the_proxys_session(console) -> None:
    client = Client()
    client.get(console.overview(), **via(PROXY, "pat", "rsmq-operators"))
    answer = client.get(console.overview(), **via(CLIENT, "pat", "rsmq-operators"))
    assert answer.status_code == 302
    assert "_auth_user_id" not in client.session


def test_without_the_setting_the_header_is_nobody(console, settings) -> None:
    settings.RSMQ_PROXY_USER_HEADER = ""
    answer = Client().get(console.overview(), **via(PROXY, "pat"))
    assert answer.status_code == 302
    assert not User.objects.filter(username="pat").exists()
