"""Issue 23's 500s and inward webhooks, as `./run` serves them (gunicorn, production
settings, a fresh clone): an API send of a lone surrogate and a 40 KB nested body are
400s naming the field (and audited), a message whose body is 40 KB of nested ``[[[…``
shows its page (raw) and its queue page, and an alert rule aimed at an inward address is
a form error naming the field. Nothing in the server's log is a traceback."""

from __future__ import annotations

import html
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from support.served import Response, Served, call, cookies, make_token, request, serving

pytestmark = pytest.mark.slow

NESTED = "[" * 20_000 + "]" * 20_000  # 40 KB


@pytest.fixture(scope="module")
def served(clone: Path) -> Iterator[Served]:
    with serving(clone, "--no-celery", log_name="hostile.log") as console:
        yield console


def post_form(served: Served, path: str, form: dict[str, str]) -> Response:
    page = served.get(path)
    served.cookies.update(cookies(page))
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert csrf, page.text[:500]
    return request(
        served.port, path, "POST",
        body=urlencode({"csrfmiddlewaretoken": html.unescape(csrf[1]), **form}).encode(),
        headers={"Cookie": "; ".join(f"{k}={v}" for k, v in served.cookies.items()),
                 "Content-Type": "application/x-www-form-urlencoded",
                 "Referer": f"http://127.0.0.1:{served.port}{path}"},
    )  # fmt: skip


def test_bad_unicode_and_deep_json_are_400s_and_a_nested_body_shows_its_pages(
    served: Served,
) -> None:
    token = make_token(served, "hostile-bot", "admin")
    assert call(served, "PUT", "/api/queues/hostile/", token, {"maxsize": -1}).status == 201
    messages = "/api/queues/hostile/messages/"

    lone = call(served, "POST", messages, token, {"message": "\ud800"})  # JSON: "\ud800"
    assert lone.status == 400, lone.text
    assert json.loads(lone.body)["error"].startswith("message must be valid Unicode text")
    deep = request(
        served.port, messages, "POST", body=NESTED.encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )  # fmt: skip
    assert deep.status == 400, deep.text
    assert json.loads(deep.body) == {"error": "body must be JSON: it is nested too deeply"}

    sent = call(served, "POST", messages, token, {"message": NESTED})
    assert sent.status == 201, sent.text
    mid = json.loads(sent.body)["id"]
    base = request(served.port, "/", headers={"Cookie": "; ".join(
        f"{k}={v}" for k, v in served.cookies.items())}).headers["location"]  # fmt: skip
    page = served.get(f"{base}q/hostile/m/{mid}/")
    assert page.status == 200, page.text[:500]
    shown = re.search(r'<pre class="body-full">(.*?)</pre>', page.text, re.S)
    assert shown and html.unescape(shown[1]) == NESTED
    queue = served.get(f"{base}q/hostile/")
    assert queue.status == 200 and mid in queue.text

    audit = served.get("/audit/?action=send&outcome=invalid")
    assert audit.status == 200
    assert audit.text.count('class="outcome invalid"') == 2  # the two refused sends
    assert "Traceback" not in served.output() and "Internal Server Error" not in served.output()


@pytest.mark.parametrize(
    ("field", "url", "said"),
    [
        (
            "webhook_url",
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is link-local",
        ),
        (
            "slack_url",
            "http://[::ffff:169.254.169.254]/",
            "::ffff:169.254.169.254 is 169.254.169.254, which is link-local",
        ),  # noqa: E501
        ("webhook_url", f"http://localhost:{6379}/", "localhost is loopback"),
        ("webhook_url", "http://0.0.0.0:8000/", "0.0.0.0 is unspecified"),
        ("webhook_url", "ftp://127.0.0.1/", "ftp:// is not http or https"),
    ],
)
def test_a_rule_aimed_inward_is_a_form_error_naming_the_field(
    served: Served, field: str, url: str, said: str
) -> None:
    base = request(served.port, "/", headers={"Cookie": "; ".join(
        f"{k}={v}" for k, v in served.cookies.items())}).headers["location"]  # fmt: skip
    _, conn, ns = base.strip("/").split("/")  # /c/<conn>/<ns>/
    form = {
        "name": "inward", "place": f"{conn}/{ns}", "queue": "hostile", "pattern": "",
        "metric": "visible", "op": "gt", "threshold": "1", "for_seconds": "0", "enabled": "on",
        "webhook_url": "", "slack_url": "", "emails": "", field: url,
    }  # fmt: skip
    answer = post_form(served, "/alerts/new/", form)
    assert answer.status == 422, answer.text[:500]
    assert f"{field}: refused: {said}" in html.unescape(answer.text)


def test_a_malformed_chunked_body_is_a_logged_400(served: Served) -> None:
    """A chunk longer than its stated size: granian tells the application the body
    ended; the console answers 400 and logs it (not granian's bare 500)."""
    token = make_token(served, "chunked-bot", "operator")
    assert call(served, "PUT", "/api/queues/chunked/", make_token(served, "c-admin", "admin"),
                {}).status == 201  # fmt: skip
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as s:
        s.sendall(
            b"POST /api/queues/chunked/messages/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Authorization: Bearer " + token.encode() + b"\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'5\r\n{"message": "x"}\r\n0\r\n\r\n'
        )
        head = s.recv(65536).decode("latin1")
    assert head.startswith("HTTP/1.1 400"), head[:300]
    assert "malformed or was cut short" in head
    assert "the request's body ended after" in served.output()
