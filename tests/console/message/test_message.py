"""The message page: the full body (pretty JSON when it parses), escaped, with its id, rc and
state; reading it never counts as a receive."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from queues import RedisSMQ

pytestmark = pytest.mark.django_db

BODY_RE = re.compile(r'<pre class="body-full">(.*?)</pre>', re.S)


def _body(response) -> str:
    return html.unescape(BODY_RE.search(response.content.decode()).group(1))


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> str:
    rsmq.create_queue("q1")
    return "q1"


def test_it_shows_the_full_body(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    body = "".join(f"{i:05d}" for i in range(400))  # 2,000 characters: past any preview
    mid = rsmq.send_message("q1", body)
    assert _body(viewer.get(console.message(mid))) == body


def test_it_pretty_prints_json(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", '{"a":1,"b":[1,2]}')
    pretty = '{\n  "a": 1,\n  "b": [\n    1,\n    2\n  ]\n}'
    assert _body(viewer.get(console.message(mid))) == pretty


def test_it_shows_a_json_scalar_as_it_is(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "42")
    assert _body(viewer.get(console.message(mid))) == "42"


def test_it_shows_text_that_is_almost_json_as_it_is(
    console, q1, viewer: Client, rsmq: RedisSMQ
) -> None:
    mid = rsmq.send_message("q1", '{"a":1,}')
    assert _body(viewer.get(console.message(mid))) == '{"a":1,}'


def test_it_escapes_the_body(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "<script>alert(1)</script>")
    page = viewer.get(console.message(mid)).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page


def test_it_escapes_a_json_body(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", '{"x": "<img src=x onerror=alert(1)>"}')
    page = viewer.get(console.message(mid)).content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<img src=x" not in page


def test_it_shows_non_ascii_json_readably(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", '{"city":"Zürich"}')
    assert _body(viewer.get(console.message(mid))) == '{\n  "city": "Zürich"\n}'


def test_it_shows_the_id(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "x")
    page = viewer.get(console.message(mid)).content.decode()
    assert f'<span class="mono">{mid}</span>' in page


def test_it_shows_the_receive_count(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "x")
    rsmq.receive_message("q1", vt=0)
    rsmq.receive_message("q1", vt=0)
    page = viewer.get(console.message(mid)).content.decode()
    assert "<dt>Receive count (rc)</dt><dd>2</dd>" in page


def test_it_shows_the_size(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "é" * 10)
    page = viewer.get(console.message(mid)).content.decode()
    assert "20 bytes" in page


@pytest.mark.parametrize(
    ("setup", "label"),
    [
        ("visible", '<span class="state visible">visible</span>'),
        ("inflight", '<span class="state inflight">in flight</span>'),
        ("delayed", '<span class="state delayed">delayed</span>'),
    ],
)
def test_it_shows_the_state(
    console, q1, viewer: Client, rsmq: RedisSMQ, setup: str, label: str
) -> None:
    mid = rsmq.send_message("q1", "x", delay=60 if setup == "delayed" else 0)
    if setup == "inflight":
        rsmq.receive_message("q1", vt=60)
    assert label in viewer.get(console.message(mid)).content.decode()


def test_it_never_counts_as_a_receive(
    console, q1, viewer: Client, rsmq: RedisSMQ, ns_state
) -> None:
    mid = rsmq.send_message("q1", "x")
    rsmq.receive_message("q1", vt=0)
    before = ns_state()
    for _ in range(3):
        viewer.get(console.message(mid))
    assert ns_state() == before
    assert rsmq.get_message("q1", mid).rc == 1
    assert rsmq.get_queue_attributes("q1").totalrecv == 1


def test_it_answers_404_for_a_missing_message(console, q1, viewer: Client) -> None:
    missing = "a" * 32
    response = viewer.get(console.message(missing))
    assert response.status_code == 404
    assert f"Message {missing} is not in queue q1 (deleted, moved or never there)." in (
        response.content.decode()
    )


def test_it_answers_404_for_a_deleted_message(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "x")
    rsmq.delete_message("q1", mid)
    assert viewer.get(console.message(mid)).status_code == 404


@pytest.mark.parametrize("bad", ["short", "x" * 33, "a" * 31 + "!"])
def test_it_answers_404_for_an_invalid_message_id(console, q1, viewer: Client, bad: str) -> None:
    response = viewer.get(console.message(bad))
    assert response.status_code == 404
    assert "Not a message id." in response.content.decode()


def test_it_answers_404_in_a_deleted_queue(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "x")
    rsmq.delete_queue("q1")
    response = viewer.get(console.message(mid))
    assert response.status_code == 404
    assert "Queue q1 does not exist (any more)." in response.content.decode()


def test_it_answers_404_for_an_invalid_queue_name(console, q1, rsmq: RedisSMQ, login) -> None:
    client = login("vic", "viewer")
    client.raise_request_exception = False
    mid = rsmq.send_message("q1", "x")
    assert client.get(console.message(mid, "bad.name")).status_code == 404


def test_it_links_back_to_the_queue(console, q1, viewer: Client, rsmq: RedisSMQ) -> None:
    mid = rsmq.send_message("q1", "x")
    page = viewer.get(console.message(mid)).content.decode()
    assert f'<a class="crumb" href="{console.queue()}">q1</a>' in page


def test_it_suggests_only_other_queues_to_move_to(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q0")
    rsmq.create_queue("q2")
    mid = rsmq.send_message("q1", "x")
    page = operator.get(console.message(mid)).content.decode()
    datalist = re.search(r'<datalist id="move-targets"[^>]*>(.*?)</datalist>', page)[1]
    assert datalist == '<option value="q0"><option value="q2">'


def test_it_offers_a_move_with_no_other_queue(
    console, q1, operator: Client, rsmq: RedisSMQ
) -> None:
    # Any name can be typed: the core reports a destination that does not exist.
    mid = rsmq.send_message("q1", "x")
    assert 'value="move"' in operator.get(console.message(mid)).content.decode()
