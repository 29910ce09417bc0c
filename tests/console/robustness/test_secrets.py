"""No surface shows a Redis password or a token: the 503 page and its htmx fragment, the
JSON API's error, /metrics' log line, Django's error report (DEBUG on: settings, request
and frame variables), with DEBUG on and off."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from dashboard.web.security import ConsoleExceptionReporterFilter
from queues.server import free_port

pytestmark = pytest.mark.django_db

PORT = free_port()  # nothing listens there: every read is a Redis failure
URLS = {
    "userinfo": f"redis://user:hunter2@127.0.0.1:{PORT}/0",
    "raw @": f"redis://:se@cret2@127.0.0.1:{PORT}/0",
    "query": f"redis://127.0.0.1:{PORT}/0?password=hunter3",
    "lone userinfo": f"rediss://hunter4@127.0.0.1:{PORT}/0",
    "unix": "unix:///nonexistent/redis.sock?password=hunter5",
}
SECRETS = ("hunter", "se@cret", "cret2")


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


@pytest.fixture(params=[False, True], ids=["debug-off", "debug-on"])
def debug(request: pytest.FixtureRequest, settings) -> bool:
    settings.DEBUG = request.param
    return bool(request.param)


@pytest.fixture(params=list(URLS), ids=list(URLS))
def secret_console(request: pytest.FixtureRequest, settings, console, debug: bool) -> str:
    url = URLS[request.param]
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": url, "namespaces": [console.ns]}]
    settings.RSMQ_REDIS_URL = settings.CELERY_BROKER_URL = url
    settings.RSMQ_METRICS_TOKEN = "tok-hunter9"
    settings.RSMQ_SOCKET_TIMEOUT = 0.5
    return url


def test_the_503_page_hides_the_password(secret_console, console, viewer: Client, caplog) -> None:
    caplog.set_level(logging.INFO)
    response = viewer.get(console.overview())
    assert response.status_code == 503
    assert_no_secret(response.content.decode())
    assert "***" in response.content.decode()
    assert_no_secret(caplog.text)


def test_the_htmx_fragment_hides_the_password(secret_console, console, viewer: Client) -> None:
    response = viewer.get(console.overview(), **console.htmx(current=console.overview()))
    assert response.status_code == 503
    assert_no_secret(response.content.decode())


def test_the_api_error_hides_the_password(secret_console, console, viewer: Client, caplog) -> None:
    caplog.set_level(logging.INFO)
    response = viewer.get(f"/api/c/default/{console.ns}/queues/")
    assert response.status_code == 503
    assert "***" in response.json()["error"]
    assert_no_secret(response.content.decode())
    assert_no_secret(caplog.text)


def test_the_metrics_log_hides_the_password(secret_console, viewer: Client, caplog) -> None:
    caplog.set_level(logging.INFO)
    response = viewer.get("/metrics")
    assert response.status_code == 200
    assert_no_secret(response.getvalue().decode() + caplog.text)


# -- Django's own error report --------------------------------------------------------------


@pytest.fixture
def broken(settings, console) -> str:
    """A connection whose URL redis-py refuses: a 500 (an unexpected error) on every page."""
    url = "bogus://admin:hunter2@127.0.0.1:6379/0?password=hunter3"
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": url, "namespaces": [console.ns]}]
    settings.RSMQ_REDIS_URL = settings.CELERY_BROKER_URL = url
    settings.RSMQ_METRICS_TOKEN = "tok-hunter9"
    settings.DATABASE_URL = "postgres://app:hunter7@db/rsmq"
    return url


def test_the_debug_500_page_hides_every_secret(broken, console, viewer, settings) -> None:
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(viewer.user)
    response = client.get(console.overview(), HTTP_ACCEPT="text/html")
    assert response.status_code == 500
    page = response.content.decode()
    assert "RSMQ_CONNECTIONS" in page  # the report is there, its secrets are not
    assert_no_secret(page)


def test_the_500_page_without_debug_says_nothing(broken, console, viewer, settings) -> None:
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    client.force_login(viewer.user)
    response = client.get(console.overview())
    assert response.status_code == 500
    assert_no_secret(response.content.decode())
    assert "RSMQ_CONNECTIONS" not in response.content.decode()


@pytest.mark.parametrize(
    "name",
    ["RSMQ_REDIS_URL", "CELERY_BROKER_URL", "RSMQ_CONNECTIONS", "DATABASE_URL",
     "RSMQ_METRICS_TOKEN", "SECRET_KEY", "DATABASES"],
)  # fmt: skip
def test_the_report_filter_hides_each_secret_setting(broken, settings, name: str) -> None:
    safe = ConsoleExceptionReporterFilter().get_safe_settings()
    assert_no_secret(repr(safe[name]))


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_a_404_lists_no_url_pattern(settings, viewer: Client, debug: bool) -> None:
    settings.DEBUG = debug
    response = viewer.get("/no/such/page/")
    assert response.status_code == 404
    assert "rsmq-overview" not in response.content.decode()
    assert "api/" not in response.content.decode()
    assert "There is nothing at this address." in response.content.decode()


def test_a_missing_slash_is_still_added_with_debug(settings, viewer: Client) -> None:
    settings.DEBUG = True
    assert viewer.get("/audit")["Location"] == "/audit/"


@pytest.mark.parametrize("page", ["/", "overview", "queue", "/audit/", "/login/", "/metrics"])
def test_head_is_answered_wherever_get_is(console, rsmq, viewer: Client, page: str) -> None:
    rsmq.create_queue("q1")
    path = {"overview": console.overview(), "queue": console.queue("q1")}.get(page, page)
    assert viewer.head(path).status_code in (200, 302)


def test_a_403_is_logged_as_one_line(console, viewer: Client, rsmq, caplog) -> None:
    rsmq.create_queue("q1")
    caplog.set_level(logging.INFO)
    response = viewer.post(console.act("q1"), {"action": "purge", "purge-confirm": "q1"})
    assert response.status_code == 403
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.exc_info is None and record.getMessage().startswith("Forbidden")


@pytest.mark.parametrize("url", list(URLS.values()), ids=list(URLS))
def test_the_cli_hides_the_password(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from queues.cli import main

    assert main(["--url", url, "queue", "list"]) != 0
    err = capsys.readouterr().err
    assert_no_secret(err)
    assert err.count("\n") == 1
