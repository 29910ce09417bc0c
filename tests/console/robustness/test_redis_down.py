"""Redis down or too slow: a clear banner and a 503, never a traceback, and actions that got
as far as Redis still audited (as errors)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from django.urls import get_resolver

from dashboard.models import AuditEntry
from dashboard.web.middleware import RedisUnavailableMiddleware
from queues.server import free_port

pytestmark = pytest.mark.django_db

MID = "a" * 32  # a well-formed message id


@pytest.fixture
def down(console, settings) -> str:
    """The console pointed at a port where no Redis listens (with a password to hide)."""
    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"
    settings.RSMQ_CONNECTIONS = [
        {"name": "default", "url": url, "namespaces": [console.ns], "environment": "test"}
    ]
    return url


def _assert_banner(response) -> None:
    page = response.content.decode()
    assert response.status_code == 503
    assert "<strong>Redis is unavailable.</strong>" in page
    assert "Connection refused" in page
    assert "Traceback" not in page


@pytest.mark.parametrize("page", ["overview", "queue", "message"])
def test_it_answers_503_with_a_banner_when_redis_is_down(
    console, down, viewer: Client, page: str
) -> None:
    url = {
        "overview": console.overview(),
        "queue": console.queue(),
        "message": console.message(MID),
    }[page]
    _assert_banner(viewer.get(url))


def test_it_answers_the_live_poll_with_503(console, down, viewer: Client) -> None:
    response = viewer.get(console.queue(), **console.htmx(target="live"))
    assert response.status_code == 503


def test_it_hides_the_password_in_the_banner(console, down, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert "s3cret" not in page
    assert f"<code>{down.replace('s3cret', '***')}</code>" in page


def test_it_still_shows_the_audit_log(console, down, viewer: Client) -> None:
    assert viewer.get("/audit/").status_code == 200


QUEUE_POSTS = {
    "send": {"action": "send", "body": "hi"},
    "requeue": {"action": "requeue", "ids": [MID]},
    "purge": {"action": "purge", "purge-confirm": "q1"},
    "delete_all": {"action": "delete_all", "state": "all", "all-confirm": "q1"},
}


@pytest.mark.parametrize("name", list(QUEUE_POSTS))
def test_it_answers_503_to_an_action_when_redis_is_down(
    console, down, admin: Client, name: str
) -> None:
    _assert_banner(admin.post(console.act(), QUEUE_POSTS[name]))


@pytest.mark.parametrize("name", list(QUEUE_POSTS))
def test_it_audits_an_action_that_found_redis_down(console, down, admin: Client, name: str) -> None:
    admin.post(console.act(), QUEUE_POSTS[name])
    row = AuditEntry.objects.get()
    assert (row.username, row.queue, row.action, row.count, row.outcome) == (
        "ada",
        "q1",
        name,
        None,
        "error",
    )
    assert "Connection refused" in row.detail


def test_it_audits_the_selection_of_an_action_that_found_redis_down(
    console, down, admin: Client
) -> None:
    admin.post(console.act(), {"action": "delete", "ids": [MID]})
    assert AuditEntry.objects.get().ids == [MID]


def test_it_answers_503_to_a_message_action_when_redis_is_down(
    console, down, operator: Client
) -> None:
    _assert_banner(operator.post(console.message_act(MID), {"action": "requeue"}))


def test_it_audits_a_message_action_that_found_redis_down(console, down, operator: Client) -> None:
    operator.post(console.message_act(MID), {"action": "visibility", "vt": "5"})
    row = AuditEntry.objects.get()
    assert (row.action, row.ids, row.params, row.outcome) == (
        "visibility",
        [MID],
        {"vt": 5},
        "error",
    )


def test_it_answers_503_to_creating_a_queue_when_redis_is_down(
    console, down, admin: Client
) -> None:
    data = {"name": "q1", "vt": "30", "delay": "0", "maxsize": "65536"}
    _assert_banner(admin.post(console.create(), data))
    assert AuditEntry.objects.get().outcome == "error"


def test_it_answers_503_to_deleting_a_queue_when_redis_is_down(
    console, down, admin: Client
) -> None:
    response = admin.post(console.act(), {"action": "delete_queue", "delete-confirm": "q1"})
    _assert_banner(response)


def test_it_audits_deleting_a_queue_when_redis_is_down(console, down, admin: Client) -> None:
    admin.post(console.act(), {"action": "delete_queue", "delete-confirm": "q1"})
    row = AuditEntry.objects.get()
    assert (row.action, row.outcome) == ("delete_queue", "error")


def test_it_needs_no_redis_to_deny_an_action(console, down, viewer: Client) -> None:
    response = viewer.post(console.act(), {"action": "purge", "purge-confirm": "q1"})
    assert response.status_code == 403
    assert AuditEntry.objects.get().outcome == "denied"


def test_it_answers_503_to_a_bad_form_when_redis_is_down(console, down, admin: Client) -> None:
    # Form errors re-render the page, which reads Redis: a 503; the refusal is recorded.
    response = admin.post(console.act(), {"action": "purge", "purge-confirm": "nope"})
    assert response.status_code == 503
    assert AuditEntry.objects.get().outcome == "invalid"


# -- too slow ----------------------------------------------------------------------------


@pytest.fixture
def paused(console, settings, r: redis.Redis) -> Iterator[None]:
    """The real Redis stops answering for half a second; the console waits 0.2 s at most."""
    settings.RSMQ_SOCKET_TIMEOUT = 0.2
    console.rsmq.create_queue("q1")
    get_resolver().url_patterns  # noqa: B018 (the URLconf loaded first: the API's takes ~0.5 s)
    r.execute_command("CLIENT", "PAUSE", "500", "ALL")
    yield
    r.execute_command("CLIENT", "UNPAUSE")


def test_it_answers_503_when_redis_is_too_slow(console, paused, viewer: Client) -> None:
    response = viewer.get(console.queue())
    page = response.content.decode()
    assert response.status_code == 503
    assert "<strong>Redis is unavailable.</strong>" in page
    assert "Timeout reading from socket" in page
    assert "Traceback" not in page


# -- the header on error pages -----------------------------------------------------------


ROLE_IN_HEADER = '<small class="muted">viewer</small>'


def test_it_keeps_the_header_on_the_403_page(console, viewer: Client) -> None:
    response = viewer.post(console.act(), {"action": "purge"})
    assert response.status_code == 403
    assert ROLE_IN_HEADER in response.content.decode()


def test_it_keeps_the_header_on_the_404_page(console, viewer: Client) -> None:
    response = viewer.get(console.queue("nope"))
    assert response.status_code == 404
    assert ROLE_IN_HEADER in response.content.decode()


def test_it_keeps_the_header_on_the_503_page(console, down, viewer: Client) -> None:
    response = viewer.get(console.overview())
    assert response.status_code == 503
    assert ROLE_IN_HEADER in response.content.decode()


def test_it_ends_the_error_with_one_full_stop(console, down, viewer: Client) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert "Connection refused. Nothing was changed." in page


def test_a_request_htmx_has_not_seen_gets_the_503_for_redis_down(console, down, rf) -> None:
    """A Redis failure that reaches the middleware from a request HtmxMiddleware has not
    marked is still the 503 page, never an AttributeError's 500."""
    request = rf.get("/api/queues/")
    request.user = AnonymousUser()
    assert not hasattr(request, "htmx")
    error = redis.ConnectionError("Error 111 connecting. Connection refused.")
    answer = RedisUnavailableMiddleware(lambda r: None).process_exception(request, error)
    assert answer is not None and answer.status_code == 503
