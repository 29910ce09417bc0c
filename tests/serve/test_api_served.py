"""The HTTP API as `./run` serves it (granian, from a fresh clone): an admin makes a token
on /tokens/, and a script with nothing but that token sends, receives and deletes over
HTTP, on the native routes and rest-rsmq's; no token: 401, and /api/schema/ is there."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.served import Served, call, make_token, request, serving

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    with serving(clone, "--no-celery", log_name="api.log") as console:
        yield console


def test_a_token_sends_receives_and_deletes_over_http(served: Served) -> None:
    token = make_token(served, "served-bot", "admin")
    assert call(served, "PUT", "/api/queues/api-served/", token, {"vt": 30}).status == 201
    sent = call(served, "POST", "/api/queues/api-served/messages/", token, {"message": "hello"})
    assert sent.status == 201, sent.text
    mid = json.loads(sent.body)["id"]
    got = call(served, "POST", "/api/queues/api-served/receive/", token, {"n": 1})
    [message] = json.loads(got.body)["messages"]
    assert (message["id"], message["message"], message["rc"]) == (mid, "hello", 1)
    gone = call(served, "DELETE", f"/api/queues/api-served/messages/{mid}/", token)
    assert json.loads(gone.body) == {"result": True}
    detail = json.loads(call(served, "GET", "/api/queues/api-served/", token).body)
    assert (detail["counts"]["msgs"], detail["counts"]["totalrecv"]) == (0, 1)


def test_rest_rsmq_clients_work_against_the_served_console(served: Served) -> None:
    token = make_token(served, "rest-bot", "operator")
    path = "/api/rest-rsmq/messages/emails"  # a demo queue
    sent = json.loads(call(served, "POST", path, token, {"message": "Hello World!"}).body)
    got = call(served, "GET", path + "?vt=30", token)
    assert got.status == 200
    assert set(json.loads(got.body)) == {"id", "message", "rc", "fr", "sent"}
    assert "queues" in json.loads(call(served, "GET", "/api/rest-rsmq/queues", token).body)
    deleted = call(served, "DELETE", f"/api/rest-rsmq/messages/emails/{sent['id']}", token)
    assert json.loads(deleted.body) == {"result": 1}
    # An operator's token may not delete a queue: 403 as JSON, never a traceback.
    refused = call(served, "DELETE", "/api/rest-rsmq/queues/emails", token)
    assert refused.status == 403 and "admin role" in json.loads(refused.body)["error"]


def test_without_a_token_it_answers_401_and_the_schema_is_served(served: Served) -> None:
    refused = call(served, "POST", "/api/queues/emails/purge/", "")
    assert refused.status == 401 and "Traceback" not in refused.text
    assert refused.headers["www-authenticate"].startswith("Bearer")
    schema = json.loads(request(served.port, "/api/schema/").body)
    assert "/api/rest-rsmq/messages/{qname}" in schema["paths"]


def test_the_rate_holds_across_every_web_process(served: Served) -> None:
    """Each call on a new connection, so the web server's 4 processes share them: the count is
    the token's row, not a process's memory."""
    token = make_token(served, "slow-bot", "viewer", per_minute=6)
    while time.time() % 60 > 50:  # all seven calls in one minute's window
        time.sleep(0.5)
    statuses = [call(served, "GET", "/api/rest-rsmq/queues", token).status for _ in range(6)]
    refused = call(served, "GET", "/api/rest-rsmq/queues", token)
    assert statuses == [200] * 6
    assert refused.status == 429 and 1 <= int(refused.headers["retry-after"]) <= 60
