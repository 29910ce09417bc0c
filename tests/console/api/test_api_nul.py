"""Every input a 400: on every route of the API (the route table, both prefixes), a NUL
(``\\u0000``: Postgres stores it in neither text nor JSON) or a lone surrogate in a path
part, a query parameter or a field of the body is refused with a 400 naming it, before
anything runs — nothing changes in Redis nor in the database, and the refusal's own
audit row is written (on SQLite and, as ``[postgres]``, on Postgres). Pages given such a
queue name in their URL answer 404, never a 500."""

from __future__ import annotations

import json
import re
import typing
from typing import Any

import pytest
from django.test import Client
from pydantic import BaseModel

from dashboard.access import tokens
from dashboard.api.routes import TABLE, Route
from dashboard.models import Annotation, AuditEntry, BulkJob, SavedFilter, UndoEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db

BAD = {"nul": "a\x00b", "surrogate": "a\ud800b"}
#: each route's path parameters, as a real call names them
GOOD = {"qname": "q1", "msg_id": "", "token": "0" * 32, "pk": "1", "verb": "pause"}


def calls() -> list[tuple[Route, str]]:
    seen = set()
    out = []
    for route in TABLE:
        for method in route.methods:
            if method != "HEAD" and (method, route.path) not in seen:
                seen.add((method, route.path))
                out.append((route, method))
    return out


def body_fields(route: Route) -> dict[str, bool]:
    """The string fields of the route's body model: name → whether it is a list of them."""
    for hint in typing.get_type_hints(route.view).values():
        for kind in (hint, *typing.get_args(hint)):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                fields = {}
                for name, f in kind.model_fields.items():
                    text = str(f.annotation)
                    if "str" in text:
                        fields[name] = "list" in text
                return fields
    return {}


def quoted(value: str) -> str:
    """A path part or query value as a URL carries it (the test client unquotes it)."""
    return "".join(c if c.isalnum() else "".join(f"%{b:02X}" for b in c.encode("utf-8",
                   "surrogatepass")) for c in value)  # fmt: skip


@pytest.fixture
def world(console, rsmq: RedisSMQ) -> dict[str, Any]:
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    GOOD["msg_id"] = rsmq.send_message("q1", "hello")
    _, token = tokens.mint("admin-bot", "admin", "test", 100_000)
    return {"api": Client(HTTP_AUTHORIZATION=f"Bearer {token}")}


def rows() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (Annotation, BulkJob, SavedFilter, UndoEntry))


def answer(api: Client, method: str, path: str, body: Any = None) -> tuple[int, str]:
    data = json.dumps(body) if body is not None else ""
    kind = "application/json" if body is not None else None
    response = (
        api.generic(method, path, data, content_type=kind) if kind else api.generic(method, path)
    )
    try:
        text = response.json().get("error", "")
    except ValueError:
        text = response.content.decode(errors="replace")
    return response.status_code, text


@pytest.mark.parametrize("what", sorted(BAD))
@pytest.mark.parametrize(("route", "method"), calls(), ids=lambda x: getattr(x, "name", x))
def test_a_nul_anywhere_in_any_call_is_a_400_naming_it(
    world: dict[str, Any], route: Route, method: str, what: str, ns_state
) -> None:
    api: Client = world["api"]
    bad = BAD[what]
    before, counts = ns_state(), rows()
    params = re.findall(r"\{(\w+)\}", route.path)
    prefix = "/api" + route.prefixes[0]
    base = route.path
    for p in params:
        base = base.replace("{" + p + "}", GOOD[p])
    # a URL can't carry a lone surrogate (its bytes are no UTF-8: Django reads U+FFFD)
    for p in params if what == "nul" else ():  # a path part
        path = route.path
        for q in params:
            path = path.replace("{" + q + "}", quoted(bad) if q == p else GOOD[q])
        status, text = answer(api, method, prefix + path)
        assert status == 400, (route.name, p, status, text)
        assert text.startswith(p), (route.name, p, text)
    if what == "nul":  # a query parameter
        status, text = answer(api, method, f"{prefix}{base}?search={quoted(bad)}")
        assert (status, text.split(" ")[0]) == (400, "search"), (route.name, status, text)
    for name, many in body_fields(route).items():  # a field of the body
        status, text = answer(api, method, prefix + base, {name: [bad] if many else bad})
        assert status == 400, (route.name, name, status, text)
        assert text.startswith(f"{name}[0]" if many else name), (route.name, name, text)
    assert ns_state() == before and rows() == counts
    # the refusals' own rows are written, whatever the database
    assert all(a.outcome == "invalid" for a in AuditEntry.objects.exclude(action="api_read"))


def test_the_words_say_which_it_is(world: dict[str, Any]) -> None:
    api = world["api"]
    status, text = answer(api, "POST", "/api/queues/q1/messages/", {"message": BAD["nul"]})
    assert (status, text) == (
        400, "message must not hold a NUL character (\\u0000): no database stores one; nothing "
        "changed",
    )  # fmt: skip
    status, text = answer(api, "POST", "/api/queues/q1/messages/", {"message": BAD["surrogate"]})
    assert status == 400 and text.startswith("message must be valid Unicode text")


def test_a_nul_in_a_form_encoded_body_or_the_place_is_refused_too(
    world: dict[str, Any], ns_state, ns: str
) -> None:
    api = world["api"]
    before = ns_state()
    response = api.generic("POST", "/api/rest-rsmq/messages/q1", "message=a%00b",
                           content_type="application/x-www-form-urlencoded")  # fmt: skip
    assert response.status_code == 400 and response.json()["error"].startswith("message")
    for part in ("conn", "ns"):
        where = {"conn": "default", "ns": ns}
        where[part] = quoted(BAD["nul"])
        status, text = answer(api, "GET", f"/api/c/{where['conn']}/{where['ns']}/queues/")
        assert status == 400 and text.startswith(part), (part, status, text)
    assert ns_state() == before


def test_a_page_given_a_nul_in_its_url_is_a_404(console, viewer: Client, admin: Client) -> None:
    for client in (viewer, admin):
        response = client.get(console.queue(quoted(BAD["nul"])))
        assert response.status_code == 404
