"""A card number and an e-mail address planted in masked fields of a queue's bodies (and
in free text, in a failure's error line and trace, in an edit-and-resend's audit row)
appear in no response to a role without a reveal — on every surface: each URL pattern of
the console (enumerated, so a new route can't escape), its htmx fragments, the JSON API's
every route (the route table, enumerated) through Django and through the served fast
path, exports, /metrics, the audit page and its JSON, and the bodies of the webhook and
Slack notifications a real local HTTP receiver takes. Each response's bytes are searched
for the planted values as they are, JSON-escaped and HTML-escaped. An observer sees no
body at all: not even the harmless marker a viewer sees."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from support.asgi import console as served_console
from support.receiver import Receiver

from dashboard.access import tokens
from dashboard.alerting import delivery
from dashboard.alerting.evaluate import evaluate
from dashboard.api.routes import TABLE
from dashboard.models import AlertRule, AuditEntry
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

CARD = "4111111111111111"
SPACED = "4242 4242 4242 4242"
EMAIL = "planted.alice@example.com"
MARKER = "harmless-marker-7f3a"  # in every body, masked by no rule: a viewer sees it
PLANTED = (CARD, SPACED, SPACED.replace(" ", ""), EMAIL)
RULES = [
    {"queues": "orders*", "paths": ["card.number", "*.email"], "patterns": ["card", "email"],
     "reveal_role": "operator"},
]  # fmt: skip
BODY = json.dumps(
    {"card": {"number": CARD, "exp": "12/30"}, "customer": {"email": EMAIL, "name": "Alice"},
     "note": f"{MARKER} call {SPACED} or write to {EMAIL}"}
)  # fmt: skip
TEXT = f"{MARKER} plain text: card {CARD}, mail {EMAIL}"


def forms(value: str) -> set[bytes]:
    """A planted value as any response could spell it."""
    spelled = {
        value, json.dumps(value)[1:-1], html.escape(value), value.replace("@", "\\u0040"),
        value.replace("@", "&#64;"), value.replace("@", "&#x40;"),
    }  # fmt: skip
    return {s.encode() for s in spelled}


LEAKS = {form: value for value in PLANTED for form in forms(value)}


def leaked(data: bytes) -> list[str]:
    return sorted({value for form, value in LEAKS.items() if form in data})


@pytest.fixture
def planted(settings, console, lake, rsmq: RedisSMQ, ns: str, login) -> dict[str, Any]:
    """orders (a JSON body, a text body, a failure quoting both) with a dead-letter queue
    holding a dead letter of them; an edit-and-resend's audit row keeping the bodies; an
    export's row."""
    settings.RSMQ_MASKING = json.dumps(RULES)
    rsmq.create_queue("orders", maxsize=-1)
    rsmq.create_queue("orders-dlq", maxsize=-1)
    rsmq.set_dead_letter_policy("orders", "orders-dlq", 1)
    first, second = rsmq.send_messages("orders", [BODY, TEXT])
    rsmq.receive_message("orders", vt=0)
    rsmq.record_failure(
        "orders", first, error_type="CardDeclined", message=f"card {CARD} of {EMAIL} declined",
        trace=[f'File "pay.py", line 3, in pay: charge("{CARD}", "{EMAIL}")'],
    )  # fmt: skip
    dead = rsmq.send_message("orders-dlq", BODY)
    rsmq.receive_message("orders-dlq", vt=0)
    rsmq.record_failure("orders-dlq", dead, error_type="Dead", message=f"gave up on {EMAIL}")
    # an operator re-sends it, the masked parts left in place: kept clear in the audit row
    otto = login("otto", "operator")
    page = otto.get(f"/c/default/{ns}/q/orders/m/{first}/").content.decode()
    assert "[masked:1]" in page and CARD not in page
    form = page.split('name="body"', 1)[1].split(">", 1)[1].split("</textarea>", 1)[0]
    edited = html.unescape(form).replace('"Alice"', '"Alice B."')
    sent = otto.post(f"/c/default/{ns}/q/orders/m/{first}/act/",
                     {"action": "resend", "body": edited, "to": ""})  # fmt: skip
    assert sent.status_code == 302, sent.content
    resent = AuditEntry.objects.get(action="resend")
    after = resent.params["bodies"]["after"]["text"]
    assert CARD in after and EMAIL in after and "Alice B." in after  # kept as they were
    return {"ids": [first, second], "dead": dead, "otto": otto}


def url_patterns() -> list[tuple[str, str]]:
    """Every console URL pattern as (route, name), the API's included once (its routes
    are checked from the route table)."""
    out: list[tuple[str, str]] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                if str(p.pattern) in ("admin/", "api/"):
                    out.append((prefix + str(p.pattern), str(p.pattern)))
                    continue
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                out.append((prefix + str(p.pattern), p.name or ""))

    walk(get_resolver().url_patterns, "")
    return out


def filled(route: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        for kind in ("str", "slug", "int"):
            route = route.replace(f"<{kind}:{key}>", value)
    assert "<" not in route, f"no value for a parameter of {route}"
    return "/" + route.lstrip("^").rstrip("$")


def requests_of(ns: str, ids: list[str], dead: str, pk: str) -> list[tuple[str, dict[str, str]]]:
    """(path, headers) of every page and fragment: each pattern with its parameters, the
    queue page with each way into its browser, htmx's live parts. No planted value is in
    a request (a page shows the search it was asked: the asker's own text)."""
    values = {"conn": "default", "ns": ns, "qname": "orders", "msg_id": ids[0], "pk": pk,
              "token": "x", "verb": "pause"}  # fmt: skip
    paths = [filled(route, values) for route, _ in url_patterns()]
    queue = f"/c/default/{ns}/q/orders/"
    paths += [
        queue + "?state=visible", queue + "?state=inflight", queue + f"?id={ids[0]}",
        queue + f"?search={MARKER}", queue + "?search=card", queue + "?search=example.com",
        queue + "?where=card.number+%3D+1", queue + "?rc=1", queue + "?leftovers=1",
        queue + "?error=CardDeclined", queue + "?where=customer.name+%3D+Alice",
        queue + "?error_text=declined",
        f"/c/default/{ns}/q/orders/m/{ids[1]}/", f"/c/default/{ns}/q/orders-dlq/",
        f"/c/default/{ns}/q/orders-dlq/m/{dead}/", f"/c/default/{ns}/q/orders-dlq/failing/",
        queue + "export/?state=all", queue + "export/?search=card",
        "/audit/", "/audit/export/", "/audit/export/?action=resend",
    ]  # fmt: skip
    plain = [(p, {}) for p in paths]
    htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "live", "HTTP_HX_CURRENT_URL": queue}
    fragments = [
        (queue, htmx), (queue + "?search=card&part=scan", htmx), (queue + "charts/", htmx),
        (f"/c/default/{ns}/q/orders/m/{ids[0]}/", htmx),
    ]  # fmt: skip
    return plain + fragments


def body(response: Any) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def api_calls(ns: str, ids: list[str]) -> list[tuple[str, str]]:
    """(method, path) of every route of the API's table, at both its prefixes."""
    values = {"qname": "orders", "msg_id": ids[0], "token": "x", "pk": "1", "verb": "pause"}
    out = []
    for route in TABLE:
        for path in route.paths():
            full = "/api" + path.replace("{conn}", "default").replace("{ns}", ns)
            for key, value in values.items():
                full = full.replace("{" + key + "}", value)
            assert "{" not in full, full
            out += [(m, full) for m in route.methods if m != "HEAD"]
    return out


def test_no_surface_shows_a_masked_value_to_a_role_without_a_reveal(
    planted, ns: str, login, receiver: Receiver, settings, add_snapshot, redis_now
) -> None:
    ids, dead = planted["ids"], planted["dead"]
    settings.RSMQ_OUTBOUND_ALLOW = ["127.0.0.1"]
    settings.RSMQ_METRICS_TOKEN = "metrics-token"
    rule = AlertRule.objects.create(
        name="orders backlog", connection="default", namespace=ns, queue="orders",
        metric=AlertRule.Metric.VISIBLE, threshold=0, for_seconds=0,
        webhook_url=receiver.at("/hook"), webhook_secret="k", slack_url=receiver.at("/slack"),
    )  # fmt: skip
    add_snapshot("orders", redis_now(), msgs=2)
    evaluate()
    delivery.send_due()
    assert sorted(receiver.paths) == ["/hook", "/slack"]
    for _, data in receiver.got:
        assert b"orders" in data and not leaked(data), data

    clients: dict[str, Client] = {
        "observer": login("odile", "observer"), "viewer": login("vera", "viewer"),
        "operator": planted["otto"],  # may reveal, has not
    }  # fmt: skip
    seen_marker: dict[str, str] = {}  # role → where it read a body
    checked = 0
    for role, client in clients.items():
        for path, headers in requests_of(ns, ids, dead, str(rule.pk)):
            response = client.get(path, **headers)  # type: ignore[arg-type]
            data = body(response) + str(response.headers).encode()
            assert not leaked(data), (role, path, response.status_code, leaked(data))
            if MARKER.encode() in data and MARKER not in path:
                seen_marker.setdefault(role, path)
            checked += 1
        answer = client.get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-token")
        assert answer.status_code == 200 and not leaked(body(answer))
    assert checked > 3 * 60
    # the search hits only what a viewer reads; a masked value is never a hit
    viewer = clients["viewer"]
    found = viewer.get(f"/c/default/{ns}/q/orders/?search={MARKER}").content
    assert found.count(b"<mark>") >= 2
    assert b"<mark>" not in viewer.get(f"/c/default/{ns}/q/orders/?search=4111").content
    assert "observer" not in seen_marker, seen_marker
    assert {"viewer", "operator"} <= set(seen_marker)

    # the API: every route of its table, by a viewer's token and an observer's, through
    # Django (test client) and served (the fast path answers its plain calls)
    served = served_console()
    try:
        for role in ("viewer", "observer"):
            token = tokens.mint(f"bot-{role}", role, "test", 100_000)[1]
            api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
            for method, path in api_calls(ns, ids):
                answer = api.generic(method, path, b"{}", content_type="application/json")
                data = body(answer)
                assert not leaked(data), (role, method, path, leaked(data))
                again = served(method, path, b"{}", token=token,
                               headers=[("content-type", "application/json")])  # fmt: skip
                assert not leaked(again.body), (role, "served", method, path)
            listed = api.get("/api/queues/orders/messages/")
            assert listed.status_code == 200
            assert (MARKER.encode() in listed.content) == (role == "viewer")
            failures = api.get(f"/api/queues/orders/failures/?id={ids[0]}").json()
            assert failures["failures"] and not leaked(json.dumps(failures).encode())
    finally:
        served.close()


def test_an_observer_sees_no_body_and_may_not_search_or_export(planted, ns: str, login) -> None:
    observer = login("odile", "observer")
    first = planted["ids"][0]
    page = observer.get(f"/c/default/{ns}/q/orders/m/{first}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "data-bodies-hidden" in text and MARKER not in text and "Alice" not in text
    assert "CardDeclined" in text  # the failure's type and times, not its lines
    assert "declined" not in text
    queue = observer.get(f"/c/default/{ns}/q/orders/").content.decode()
    assert "data-messages" in queue and MARKER not in queue  # the rows, no body
    refused = observer.get(f"/c/default/{ns}/q/orders/?search=Alice")
    assert refused.status_code == 403 and b"observer role sees no body" in refused.content
    assert observer.get(f"/c/default/{ns}/q/orders/export/").status_code == 403
    failing = observer.get(f"/c/default/{ns}/q/orders-dlq/failing/").content.decode()
    assert "Dead" in failing and "gave up" not in failing


def test_a_reveal_shows_the_bodies_is_audited_and_ends_by_itself(
    planted, ns: str, login, settings
) -> None:
    first = planted["ids"][0]
    message = f"/c/default/{ns}/q/orders/m/{first}/"
    reveal = f"/c/default/{ns}/q/orders/reveal/"
    viewer = login("vera", "viewer")
    assert viewer.post(reveal, {"reason": "curious"}).status_code == 403  # not its role
    otto: Client = planted["otto"]
    assert otto.post(reveal, {"reason": ""}).status_code == 302  # no reason: nothing
    assert CARD not in otto.get(message).content.decode()
    settings.RSMQ_REVEAL_MINUTES = 10
    otto.post(reveal, {"reason": "ticket 42: refund"})
    shown = otto.get(message).content.decode()
    assert CARD in shown and EMAIL in shown and "data-revealed-until" in shown
    row = AuditEntry.objects.get(action="reveal", outcome="ok")
    assert (row.username, row.queue, row.detail, row.params["reason"]) == (
        "otto", "orders", "ticket 42: refund", "ticket 42: refund"
    )  # fmt: skip
    assert row.params["until"] and row.params["message"] == ""
    exported = b"".join(otto.get("/audit/export/").streaming_content).splitlines()
    assert "reveal" in {json.loads(line)["action"] for line in exported}
    # another operator's, short: clear now, masked again once its minutes are past
    settings.RSMQ_REVEAL_MINUTES = 0.05  # 3 s
    ada = login("oscar", "operator")
    ada.post(reveal, {"reason": "short look", "message": first})
    revealed = AuditEntry.objects.filter(action="reveal", username="oscar").get()
    assert revealed.params["message"] == first
    wait_until(lambda: CARD not in ada.get(message).content.decode(), 30)
    assert CARD in otto.get(message).content.decode()  # the other reveal still runs


def wait_until(check: Callable[[], bool], timeout: float) -> None:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s")
