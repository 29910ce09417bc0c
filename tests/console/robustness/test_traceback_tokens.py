"""With DEBUG on, an error while a token is checked shows the traceback's variables on
Django's technical 500 page (issue 23): the raw token is in none of them — not where it
was checked (dashboard/access/tokens.py), not in a variable named otherwise that holds it,
not in the request's headers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.web.security import mask_secrets

pytestmark = pytest.mark.django_db


def broken_compare(a: bytes | str, b: bytes | str) -> bool:
    raise RuntimeError("the comparison broke")


@pytest.fixture
def token(console, monkeypatch) -> str:
    """An admin's API token, and token checking that fails once the row is found."""
    _, raw = tokens.mint("debug-bot", "admin", "test", 100)
    monkeypatch.setattr(tokens, "hmac", SimpleNamespace(compare_digest=broken_compare))
    return raw


@pytest.mark.parametrize(
    "path",
    ["/api/queues/", "/api/c/default/{ns}/queues/"],  # django-ninja's auth; reads.py's
    ids=["native", "reads"],
)
def test_the_debug_page_of_an_error_in_token_checking_shows_no_token(
    console, settings, token: str, path: str
) -> None:
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    response = client.get(
        path.format(ns=console.ns), HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT="text/html"
    )
    assert response.status_code == 500
    page = response.content.decode()
    assert "the comparison broke" in page and "admit" in page  # the frames are shown
    assert token not in page
    assert token[len(tokens.PREFIX) :] not in page  # nor its random part
    assert "********" in page


def test_a_token_in_any_variable_is_starred() -> None:
    raw = "rsmq_" + "A1b2-C3d4_" * 4
    text = repr({"headers": {"Authorization": f"Bearer {raw}"}, "note": f"got {raw}"})
    masked = mask_secrets(text)
    assert raw not in masked and "Bearer ****" in masked and "rsmq_****" in masked
    assert mask_secrets("Authorization: bearer abc.def-123") == "Authorization: Bearer ****"
