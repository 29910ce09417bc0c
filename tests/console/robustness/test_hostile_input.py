"""Bad Unicode and pathological JSON never make a 500: an API send with a lone surrogate
is a 400 naming the field (and audited as refused); a body the API can't parse says why;
every refused API call is audited, a flood of them folded into one row a minute; a
message whose body is deeply nested, huge-numbered or not valid JSON shows its page (the
body raw) and the queue page that lists it, for every role."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.test import Client

from dashboard.access import tokens
from dashboard.models import AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

SURROGATE = "must be valid Unicode text: it holds a lone surrogate (\\ud800 to \\udfff)"
BODY_RE = re.compile(r'<pre class="body-full">(.*?)</pre>', re.S)


class Api:
    def __init__(self, role: str = "operator", per_minute: int = 10_000, name: str = "") -> None:
        self.row, token = tokens.mint(name or f"bot-{role}", role, "test", per_minute)
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {token}", raise_request_exception=False)

    def post(self, path: str, raw: str | bytes) -> tuple[int, Any]:
        r = self.client.post(path, data=raw, content_type="application/json")
        return r.status_code, r.json()


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> RedisSMQ:
    rsmq.create_queue("q1", maxsize=-1)
    return rsmq


def rows() -> list[tuple[str, str, str, str]]:
    return list(
        AuditEntry.objects.order_by("id").values_list("username", "action", "outcome", "detail")
    )


# -- the API ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"message": "\\ud800"}', "message"),
        ('{"message": "ok \\udfff then"}', "message"),
        ('{"messages": ["a", "b\\udc00"]}', "messages[1]"),
        ('{"message": "x", "\\ud800": 1}', "\\ud800"),
    ],
)
def test_a_lone_surrogate_is_a_400_naming_the_field_and_audited(
    q1: RedisSMQ, raw: str, field: str
) -> None:
    api = Api()
    for path in ("/api/queues/q1/messages/", "/api/rest-rsmq/messages/q1"):
        status, answer = api.post(path, raw)
        assert status == 400, answer
        assert answer["error"].startswith(f"{field} {SURROGATE}")
    assert q1.get_queue_attributes("q1").msgs == 0  # nothing sent
    [(who, action, outcome, detail), _] = rows()
    assert (who, action, outcome) == ("token:bot-operator", "send", "invalid")
    assert f"400: {field} {SURROGATE}" in detail


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("[" * 40_000 + "]" * 40_000, "body must be JSON: it is nested too deeply"),
        ('{"message": ' + '{"a": ' * 5000 + "1" + "}" * 5001, "body must be JSON: it is nested"),
        (
            '{"message": "x", "delay": 1' + "0" * 5000 + "}",
            "body must be JSON with numbers of at most 4300 digits",
        ),  # noqa: E501
        (b'{"message": "\xff\xfe"}', "body must be JSON: 'utf-8' codec can't decode byte 0xff"),
        ('{"message": ', "body must be JSON: Expecting value"),
        ('{"message": 1e999999}', "message must be a string"),
    ],
)
def test_a_body_the_api_cannot_take_is_a_400_saying_why_and_audited(
    q1: RedisSMQ, raw: str | bytes, said: str
) -> None:
    status, answer = Api().post("/api/queues/q1/messages/", raw)
    assert status == 400 and answer["error"].startswith(said), answer
    [(who, action, outcome, detail)] = rows()
    assert (who, action, outcome) == ("token:bot-operator", "send", "invalid")
    assert said in detail


def test_refused_calls_are_audited_and_a_flood_folds_into_one_row_a_minute(
    console, q1: RedisSMQ, outsider: Client
) -> None:
    send = "/api/queues/q1/messages/"
    body = {"data": '{"message": "x"}', "content_type": "application/json"}
    for _ in range(50):
        assert Client(HTTP_AUTHORIZATION="Bearer rsmq_nope").post(send, **body).status_code == 401
        assert Client().post(send, **body).status_code == 401
        assert Client(HTTP_AUTHORIZATION="Bearer rsmq_x").get("/api/queues/").status_code == 401
        assert Client().get("/api/queues/q1/").status_code == 401
    limited = Api(per_minute=2)
    for _ in range(30):
        limited.client.post(send, **body)
    viewer = Api("viewer")
    assert viewer.client.post(send, **body).status_code == 403
    for _ in range(5):  # a session without a role, on the read API
        assert outsider.get("/api/queues/").status_code == 403
    other = Api(name="other")
    assert other.client.post("/api/queues/bad!name/messages/", **body).status_code == 404

    got = list(
        AuditEntry.objects.order_by("id").values_list("username", "action", "outcome", "params")
    )
    assert got == [
        ("anonymous", "send", "denied", {"repeats": 100}),
        ("anonymous", "api_read", "denied", {"repeats": 100}),
        ("token:bot-operator", "send", "ok", {"delay": None, "bytes": 1}),
        ("token:bot-operator", "send", "ok", {"delay": None, "bytes": 1}),
        ("token:bot-operator", "send", "throttled", {"repeats": 28}),
        ("token:bot-viewer", "send", "denied", {}),
        ("olga", "api_read", "denied", {"repeats": 5}),  # the outsider
        ("token:other", "send", "invalid", {}),
    ]
    details = list(AuditEntry.objects.order_by("id").values_list("detail", flat=True))
    assert details[0] == "401: Unknown API token." and "rsmq_nope" not in "".join(details)
    assert details[4].startswith("429: Token bot-operator is limited to 2 requests a minute")
    assert details[5] == "This needs the operator role."
    assert details[6] == "403: This needs the observer role."
    assert details[7].startswith("404: Invalid qname format: 'bad!name'")


# -- the pages -------------------------------------------------------------------------

NESTED = "[" * 20_000 + "]" * 20_000  # 40 KB
PATHOLOGICAL = [
    NESTED,
    "[" * 20_000,  # never closed
    '{"a": ' * 3000 + "1" + "}" * 3000,
    "[1" + "0" * 5000 + "]",  # over Python's 4300 digits
    "[" * 900 + "1" + "]" * 900,  # parses; too deep to indent
    '{"x": 1e999999, "y": -1e999999}',
    '["\\ud800"]',  # JSON for a lone surrogate
]


@pytest.mark.parametrize("body", PATHOLOGICAL, ids=range(len(PATHOLOGICAL)))
@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_a_pathological_json_body_shows_its_page_and_its_queue_page(
    console, q1: RedisSMQ, as_role, body: str, role: str
) -> None:
    client: Client = as_role(role)
    mid = q1.send_message("q1", body)
    page = client.get(console.message(mid))
    assert page.status_code == 200
    shown = html.unescape(BODY_RE.search(page.content.decode()).group(1))
    try:
        json.loads(body)
        assert shown in (body, json.dumps(json.loads(body), indent=2, ensure_ascii=False))
    except (ValueError, RecursionError):
        assert shown == body  # as it is
    queue = client.get(console.queue("q1"))
    assert queue.status_code == 200 and mid in queue.content.decode()


@pytest.mark.parametrize(
    "path",
    [
        "{base}q/%ED%A0%80/",  # a surrogate's UTF-8 bytes: not a queue name
        "{base}q/q1/?q=%ED%A0%80",
        "{base}q/q1/?q=%FF%FE&body=%00",
        "{base}q/q1/m/%ED%A0%80/",
        "{base}?q=%ED%A0%80",
        "{base}q/q1/?state=%ED%A0%80&sort=%FF&after=%ED%A0%80",
        "{base}q/q1/failing/?id=%ED%A0%80",
        "/audit/?queue=%ED%A0%80&username=%00",
        "/c/%ED%A0%80/x/",
        "/api/queues/?q=%ED%A0%80",
        "/api/queues/%ED%A0%80/",
        "/api/queues/q1/failures/?id=%ED%A0%80",
    ],
)
def test_bad_unicode_in_a_page_address_is_a_page_or_a_4xx(
    console, q1: RedisSMQ, admin: Client, path: str
) -> None:
    response = admin.get(path.format(base=console.base))
    assert response.status_code in (200, 400, 404), response.status_code
    assert "Traceback" not in response.content.decode()


def test_a_form_post_of_bad_utf8_is_taken_as_text(console, q1: RedisSMQ, admin: Client) -> None:
    response = admin.generic(
        "POST", console.act("q1"), b"action=send&body=a%ED%A0%80%FFb",
        content_type="application/x-www-form-urlencoded",
    )  # fmt: skip
    assert response.status_code == 302
    [m] = q1.receive_messages("q1", 5)
    assert m.message.startswith("a") and m.message.endswith("b") and "\ufffd" in m.message
