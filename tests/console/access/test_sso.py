"""Single sign-on with OpenID Connect (issue 30), against a real provider in a process of
its own (django-oauth-toolkit, tests/support/oidc.py): PKCE, the user made at the first
sign-in with the roles their groups map to, the groups checked again on any request once
RSMQ_OIDC_RECHECK_SECONDS passed (a group taken away, a session revoked, an access token
refreshed), each audited."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from support.oidc import USER, Provider, provider, sign_in_at

from dashboard.access.grants import role_of
from dashboard.access.oidc import CHECKED
from dashboard.access.roles import Role
from dashboard.models import AuditEntry, SsoIdentity, SsoSession

pytestmark = pytest.mark.django_db
CALLBACK = "http://testserver/login/sso/callback/"
GROUPS = {"rsmq-admins": ["admin"], "rsmq-viewers": ["viewer"], "billing-team": ["billing"]}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with provider(tmp_path_factory.mktemp("provider"), [CALLBACK]) as p:
        yield p


@pytest.fixture
def idp(served: Provider, settings, console) -> Provider:
    """The provider, alice in rsmq-admins and billing-team there; the console using it,
    asking again at every request (each test says when it wants otherwise)."""
    served.set_groups(USER, "rsmq-admins", "billing-team")
    for name, value in served.settings().items():
        setattr(settings, name, value)
    settings.RSMQ_SSO_GROUPS = GROUPS
    settings.RSMQ_OIDC_RECHECK_SECONDS = 0.001
    return served


def sign_in(client: Client, to: str = "/") -> tuple[str, object]:
    """A whole sign-in: the console's redirect to the provider (its URL), and the
    console's answer to the provider's redirect back."""
    start = client.get("/login/sso/?" + urlencode({"next": to}))
    assert start.status_code == 302, start.content[:500]
    back = sign_in_at(start["Location"])
    assert back.startswith(CALLBACK), back
    return start["Location"], client.get(back.removeprefix("http://testserver"))


def alice() -> User:
    return User.objects.get(username=USER)


def rows(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("at", "id"))


def test_it_signs_in_with_the_roles_the_providers_groups_map_to(idp: Provider, console) -> None:
    client = Client()
    _, answer = sign_in(client, console.overview())
    assert answer.status_code == 302 and answer["Location"] == console.overview()
    user = alice()
    assert not user.has_usable_password()
    assert sorted(user.groups.values_list("name", flat=True)) == ["admin", "billing"]
    assert role_of(user) == Role.ADMIN
    assert client.get(console.overview()).status_code == 200
    (login,) = rows("login")
    assert (login.username, login.outcome, login.params) == (USER, "ok", {"via": "oidc"})
    (change,) = rows("sso_groups")
    assert change.params == {"added": ["admin", "billing"], "removed": [],
                             "claimed": ["billing-team", "rsmq-admins"], "via": "oidc"}  # fmt: skip


def test_it_asks_the_provider_with_pkce_which_the_provider_requires(idp: Provider) -> None:
    url, answer = sign_in(Client())
    query = parse_qs(urlsplit(url).query)
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43  # base64url of a SHA-256
    assert answer.status_code == 302
    # The same request without its challenge: the provider refuses it, and the console says so.
    client = Client()
    start = client.get("/login/sso/")
    parts = urlsplit(start["Location"])
    bare = {k: v for k, v in parse_qs(parts.query).items() if not k.startswith("code_challenge")}
    back = sign_in_at(urlunsplit(parts._replace(query=urlencode(bare, doseq=True))))
    assert parse_qs(urlsplit(back).query)["error"] == ["invalid_request"]
    refused = client.get(back.removeprefix("http://testserver"))
    assert refused.status_code == 403
    assert "The provider refused the sign-in: invalid_request" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    (failed,) = rows("login_failed")
    assert failed.outcome == "denied" and "invalid_request" in failed.detail


def test_a_group_taken_away_at_the_provider_takes_its_role_at_the_next_check(
    idp: Provider, console
) -> None:
    client = Client()
    sign_in(client)
    idp.set_groups(USER, "rsmq-viewers")
    assert client.get(console.overview()).status_code == 200
    assert sorted(alice().groups.values_list("name", flat=True)) == ["viewer"]
    assert role_of(alice()) == Role.VIEWER
    change = rows("sso_groups")[-1]
    assert (change.params["added"], change.params["removed"]) == (["viewer"], ["admin", "billing"])


def test_the_groups_are_not_asked_again_before_the_interval(idp: Provider, console, settings):
    settings.RSMQ_OIDC_RECHECK_SECONDS = 3600
    client = Client()
    sign_in(client)
    idp.set_groups(USER)
    assert client.get(console.overview()).status_code == 200
    assert role_of(alice()) == Role.ADMIN
    # Once the interval passed (the session's last check made an hour old): gone.
    session = client.session
    session[CHECKED] -= 3600
    session.save()
    SsoSession.objects.update(checked_at=SsoSession.objects.get().checked_at.replace(year=2000))
    assert client.get(console.overview()).status_code == 403
    assert role_of(alice()) == Role.NONE


def test_an_htmx_request_and_the_json_api_see_the_groups_change(idp: Provider, console) -> None:
    client = Client()
    sign_in(client)
    assert client.get("/api/queues/").status_code == 200
    idp.set_groups(USER, "billing-team")  # a group that grants no role
    assert client.get("/api/queues/").status_code == 403
    assert client.get(console.overview(), **console.htmx(console.overview())).status_code == 403
    assert sorted(alice().groups.values_list("name", flat=True)) == ["billing"]


def test_a_session_revoked_at_the_provider_is_logged_out(idp: Provider, console) -> None:
    client = Client()
    sign_in(client)
    idp.revoke(USER)
    answer = client.get(console.overview(), **console.htmx(console.overview()))
    assert answer["HX-Redirect"].startswith("/login/?next=")
    assert "_auth_user_id" not in client.session
    assert client.get("/api/queues/").status_code == 401
    assert not SsoSession.objects.exists()
    (ended,) = rows("session_end")
    assert ended.username == USER
    assert ended.detail.startswith("The provider ended the session: the provider refused")


def test_each_check_refreshes_the_tokens_and_the_session_goes_on(idp: Provider, console):
    client = Client()
    sign_in(client)
    before = SsoSession.objects.get()
    for _ in range(3):
        assert client.get(console.overview()).status_code == 200
    after = SsoSession.objects.get()
    assert after.access_token != before.access_token
    assert after.refresh_token != before.refresh_token  # the provider rotates them
    assert not rows("session_end")
    assert role_of(alice()) == Role.ADMIN


def test_without_a_refresh_token_an_expired_access_token_ends_the_session(idp: Provider, console):
    client = Client()
    sign_in(client)
    SsoSession.objects.update(refresh_token="", expires_at=1.0)  # long expired
    assert client.get(console.overview()).status_code == 302
    (ended,) = rows("session_end")
    assert "no refresh token" in ended.detail


def test_without_a_refresh_token_userinfo_says_what_the_groups_are(idp: Provider, console):
    client = Client()
    sign_in(client)
    SsoSession.objects.update(refresh_token="")
    idp.set_groups(USER, "rsmq-viewers")
    assert client.get(console.overview()).status_code == 200
    assert role_of(alice()) == Role.VIEWER


def test_a_console_user_with_a_password_is_not_taken_over_by_a_provider_name(
    idp: Provider, settings
) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast
    User.objects.create_user(USER, password="the break-glass one")
    client = Client()
    _, answer = sign_in(client)
    assert answer.status_code == 403
    assert "is a console user with a password" in answer.content.decode()
    assert "_auth_user_id" not in client.session
    assert rows("login_failed")[0].username == USER


def test_an_account_renamed_at_the_provider_is_still_the_same_console_user(
    idp: Provider,
) -> None:
    sign_in(Client())
    first = alice()
    idp.run("rename", USER, "alicia")
    try:
        client = Client()
        start = client.get("/login/sso/")
        back = sign_in_at(start["Location"], user="alicia")
        assert client.get(back.removeprefix("http://testserver")).status_code == 302
        assert client.session["_auth_user_id"] == str(first.pk)
        assert not User.objects.filter(username="alicia").exists()
    finally:
        idp.run("rename", "alicia", USER)


def test_a_user_name_taken_by_another_account_of_the_provider_is_refused(idp: Provider) -> None:
    sign_in(Client())
    idp.run("rename", USER, "alice-old")
    idp.run("add", USER, "another password")  # a new account, a new sub, the same name
    try:
        client = Client()
        start = client.get("/login/sso/")
        back = sign_in_at(start["Location"], password="another password")
        answer = client.get(back.removeprefix("http://testserver"))
        assert answer.status_code == 403
        assert "the console user of another account at the provider" in answer.content.decode()
        assert "_auth_user_id" not in client.session
    finally:
        idp.run("rename", USER, "alice-new")
        idp.run("rename", "alice-old", USER)


def test_a_refreshed_id_token_of_another_account_ends_the_session(idp: Provider, console):
    client = Client()
    sign_in(client)
    SsoIdentity.objects.update(subject="someone else")
    assert client.get(console.overview()).status_code == 302
    (ended,) = rows("session_end")
    assert ended.detail == "The provider's new ID token names another account."


def test_logging_out_forgets_the_providers_tokens(idp: Provider) -> None:
    client = Client()
    sign_in(client)
    assert SsoSession.objects.count() == 1
    client.post("/logout/")
    assert not SsoSession.objects.exists()
    assert rows("logout")[0].username == USER


def test_the_login_page_shows_the_button(idp: Provider) -> None:
    page = Client().get("/login/?next=/audit/").content.decode()
    assert 'href="/login/sso/?next=/audit/"' in page
    assert 'name="password"' in page  # passwords still on (RSMQ_LOCAL_LOGIN)


def test_a_provider_that_does_not_answer_is_said_so(settings, db) -> None:
    settings.RSMQ_OIDC_ISSUER = "http://127.0.0.1:9"  # discard: nothing listens
    settings.RSMQ_OIDC_CLIENT_ID = "rsmq-console"
    answer = Client().get("/login/sso/")
    assert answer.status_code == 502
    assert "The sign-in provider could not be reached" in answer.content.decode()


def test_the_admin_lists_which_provider_account_each_user_is(idp: Provider, admin_client) -> None:
    sign_in(Client())
    page = admin_client.get("/admin/dashboard/ssoidentity/").content.decode()
    assert USER in page and idp.issuer in page
