"""Why it failed, in the console: a message's failure history on its page, the Failing view
(failing messages by error type, retrying and dead), and the same from the JSON API."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db


def failing(console, qname: str = "jobs") -> str:
    return console.queue(qname, "failing/")


def api(console, qname: str = "jobs", query: str = "") -> str:
    return f"/api/c/{console.conn}/{console.ns}/queues/{qname}/failures/{query}"


def text(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


def groups_in(html_part: str) -> list[tuple[str, str]]:
    """The (error type, count) of each failure group listed in a part of the page."""
    return re.findall(r'data-type="([^"]+)".*?data-group-count>(\d+)<', html_part, re.S)


def declined() -> ValueError:
    try:
        raise ValueError("card <b>declined</b>")
    except ValueError as e:
        return e


@pytest.fixture
def jobs(console, rsmq: RedisSMQ) -> dict[str, str]:
    """jobs -> dlq after 1 receive: one dead message, two retrying (two error types)."""
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("jobs", "dlq", 1)
    dead = rsmq.send_message("jobs", "d")
    rsmq.receive_message("jobs", vt=0)
    rsmq.record_failure("jobs", dead, declined())
    assert rsmq.receive_message("jobs") is None  # dead-lettered, with its history
    value, key = rsmq.send_messages("jobs", ["v", "k"])
    rsmq.record_failure("jobs", value, declined())
    rsmq.record_failure("jobs", key, KeyError("sku"))
    return {"dead": dead, "value": value, "key": key}


def test_the_message_page_shows_the_history(console, jobs, viewer: Client, rsmq) -> None:
    rsmq.record_failure("jobs", jobs["value"], error_type="TimeoutError", message="slow")

    page = viewer.get(console.message(jobs["value"], "jobs"))

    assert page.status_code == 200
    body = page.content.decode()
    assert body.count("data-failure>") == 2
    assert body.index("TimeoutError") < body.index("ValueError")  # newest first
    assert "card &lt;b&gt;declined&lt;/b&gt;" in body  # escaped
    assert "Traceback (most recent call last):" in text(page)
    assert "in declined" in text(page)


def test_a_message_without_failures_says_so(console, jobs, viewer: Client, rsmq) -> None:
    mid = rsmq.send_message("jobs", "fine")
    assert "data-no-failures" in viewer.get(console.message(mid, "jobs")).content.decode()


def test_a_corrupt_record_is_shown_as_such(console, jobs, viewer: Client, r) -> None:
    r.hset(f"{console.ns}:jobs:x:failures", jobs["value"], "[1, {")

    page = viewer.get(console.message(jobs["value"], "jobs"))

    assert page.status_code == 200
    assert "not a failure history" in text(page)
    assert viewer.get(failing(console)).status_code == 200


def test_the_failing_view_groups_retrying_and_dead_by_type(console, jobs, viewer: Client) -> None:
    page = viewer.get(failing(console))

    assert page.status_code == 200
    body = page.content.decode()
    retry = body[body.index('data-section="retry"') : body.index('data-section="dead"')]
    dead = body[body.index('data-section="dead"') :]
    assert groups_in(retry) == [("KeyError", "1"), ("ValueError", "1")]
    assert groups_in(dead) == [("ValueError", "1")]
    assert f'href="{console.message(jobs["key"], "jobs")}#failures"' in retry
    assert f'href="{console.message(jobs["dead"], "dlq")}#failures"' in dead


def test_the_queue_page_links_to_it(console, jobs, viewer: Client) -> None:
    assert f'href="{failing(console)}"' in viewer.get(console.queue("jobs")).content.decode()


def test_it_needs_the_viewer_role(console, jobs, outsider: Client) -> None:
    assert outsider.get(failing(console)).status_code == 403


def test_it_handles_a_missing_queue(console, viewer: Client) -> None:
    assert viewer.get(failing(console, "nope")).status_code == 404


def test_the_api_answers_groups_and_a_history(console, jobs, viewer: Client) -> None:
    body = viewer.get(api(console)).json()
    assert (body["name"], body["dlq"], body["complete"]) == ("jobs", "dlq", True)
    assert [(g["type"], g["state"], g["queue"], g["count"]) for g in body["groups"]] == [
        ("KeyError", "retry", "jobs", 1),
        ("ValueError", "retry", "jobs", 1),
        ("ValueError", "dead", "dlq", 1),
    ]

    history = viewer.get(api(console, "jobs", f"?id={jobs['key']}")).json()["failures"]
    assert [(f["type"], f["message"], f["attempt"]) for f in history] == [("KeyError", "'sku'", 0)]


def test_the_api_names_a_bad_id_and_a_missing_queue(console, jobs, viewer: Client) -> None:
    bad = viewer.get(api(console, "jobs", "?id=short"))
    assert bad.status_code == 400 and "id" in bad.json()["error"]
    assert viewer.get(api(console, "nope")).status_code == 404
