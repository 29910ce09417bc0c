"""The browser tests' fixtures: one chromium per module driven by Playwright, the console
pointed at the test's namespace, users by role and pages logged in as them. Without
/usr/bin/chromium every test here is skipped, saying so."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.test import Client
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright
from support.browser import CHROMIUM, PASSWORD, role_group

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(
        reason=f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"
    )
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Playwright's sync API keeps an event loop in this thread; the test's own ORM calls
    # (users, preferences) are still plain synchronous code.
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(
                executable_path=str(CHROMIUM),
                args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"],
            )
            yield b
            b.close()
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture
def console(settings, redis_url: str, ns: str) -> str:
    """The console (and so the live server thread) reads this test's namespace."""
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": redis_url, "namespaces": [ns], "environment": "test"}
    ]
    return f"/c/default/{ns}"


@pytest.fixture
def make_user(settings, django_user_model) -> Callable[..., object]:
    """A user in the viewer / operator / admin group, with a password."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast

    def make(role: str, username: str | None = None):
        user = django_user_model.objects.create_user(username or role, password=PASSWORD)
        user.groups.add(role_group(role))
        return user

    return make


@pytest.fixture
def new_context(browser: Browser, live_server) -> Iterator[Callable[..., BrowserContext]]:
    """Fresh browser contexts for this test, logged in as ``user`` when one is given."""
    contexts: list[BrowserContext] = []

    def new(user=None, **options) -> BrowserContext:
        options.setdefault("viewport", {"width": 1440, "height": 900})
        ctx = browser.new_context(base_url=live_server.url, **options)
        ctx.set_default_timeout(10_000)
        contexts.append(ctx)
        if user is not None:
            client = Client()
            client.force_login(user)
            session = client.cookies["sessionid"].value
            ctx.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
        return ctx

    yield new
    for ctx in contexts:
        ctx.close()


@pytest.fixture
def page_as(new_context) -> Callable[..., Page]:
    """A new page logged in as the given user; collects JavaScript errors in ``page.errors``."""

    def open_(user, **options) -> Page:
        page = new_context(user, **options).new_page()
        page.errors = []  # type: ignore[attr-defined]
        page.on("pageerror", lambda e: page.errors.append(str(e)))  # type: ignore[attr-defined]
        return page

    return open_
