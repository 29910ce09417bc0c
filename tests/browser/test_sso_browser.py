"""Single sign-on in Debian's chromium (issue 30): a person signs in at a real OpenID
Connect provider (django-oauth-toolkit in a process of its own, tests/support/oidc.py),
lands on the console with the role their group grants, loses it within the re-check
interval once the group is taken away at the provider, and is sent to the login page by
the overview's own live refresh (an htmx request) once the provider revokes the session."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect
from support.oidc import PASSWORD, USER, Provider, provider

from dashboard.models import AuditEntry

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
RECHECK = 2  # s: the console's RSMQ_OIDC_RECHECK_SECONDS here
PATIENCE = 30  # s: how long a change may take to show, the interval included, on a busy machine


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory, live_server) -> Iterator[Provider]:
    redirect = f"{live_server.url}/login/sso/callback/"
    with provider(tmp_path_factory.mktemp("provider"), [redirect], groups=("rsmq-admins",)) as p:
        yield p


def test_a_person_signs_in_at_the_provider_and_loses_the_role_when_the_group_goes(
    idp: Provider, settings, console: str, new_context
) -> None:
    for name, value in idp.settings().items():
        setattr(settings, name, value)
    settings.RSMQ_SSO_GROUPS = {"rsmq-admins": ["admin"], "rsmq-viewers": ["viewer"]}
    settings.RSMQ_OIDC_RECHECK_SECONDS = RECHECK
    settings.RSMQ_REFRESH_SECONDS = 2
    idp.set_groups(USER, "rsmq-admins", "rsmq-viewers")
    page = new_context().new_page()

    page.goto(f"{console}/")  # not signed in: the login page, with the provider's button
    page.click("#sso")
    page.fill("#provider-username", USER)  # the provider's own form
    page.fill("#provider-password", PASSWORD)
    page.click("#provider-submit")
    page.wait_for_url(f"**{console}/")
    role = page.locator("span[title^='role:'] small")
    expect(role).to_have_text("admin")
    expect(page.locator("details.create summary")).to_have_text("Create queue")

    idp.set_groups(USER, "rsmq-viewers")  # the admins' group taken away at the provider
    taken = time.monotonic()
    while role.inner_text() != "viewer":
        assert time.monotonic() - taken < PATIENCE, "still an admin"
        page.wait_for_timeout(200)  # the next look, not a wait for the change
        page.reload()
    expect(page.locator("details.create")).to_have_count(0)
    change = AuditEntry.objects.filter(action="sso_groups").order_by("-id").first()
    assert change is not None and change.params["removed"] == ["admin"]

    idp.revoke(USER)  # the provider ends the session: the page's live refresh is told
    page.wait_for_url("**/login/?next=*", timeout=PATIENCE * 1000)
    expect(page.locator("#sso")).to_be_visible()
    ended = AuditEntry.objects.get(action="session_end")
    assert ended.username == USER and "refused to refresh" in ended.detail
