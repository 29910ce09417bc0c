"""No write path can break a queue's RSMQ layout: an import that keeps ids takes only the
ids RSMQ clients make (32 letters and digits, go-rsmq's 22), checked by its script too,
so an id naming a field of the queue's hash (``totalrecv``, which a dead-letter queue
never received from doesn't have yet) or another message's ``:rc`` / ``:fr`` is refused
with nothing written, and Node rsmq goes on sending and receiving on the queue. A member
another client wrote under such a name is never moved nor put back by an Undo."""

from __future__ import annotations

import json

import pytest
import redis
from django.test import Client
from support.node_rsmq import NodeRsmq

from dashboard.access import tokens
from queues import RedisSMQ
from queues.errors import InvalidArgument
from queues.models import ImportRecord

pytestmark = pytest.mark.django_db

GOOD = "0123456789abcdefghijABCDEFGHIJ0123"[:32]
#: each an id an import must never write: the queue hash's own fields (go-rsmq's
#: createdby, the console's x: extensions), another message's rc and fr, and a 32-char id
#: of the original's validation (a-z A-Z 0-9 :) that names a 29-char id's rc
FORBIDDEN = [
    "totalrecv", "totalsent", "vt", "delay", "maxsize", "created", "modified", "createdby",
    "x:dlq", f"{GOOD}:rc", f"{GOOD}:fr", "abcdefghijklmnopqrstuvwxyz012:rc",
]  # fmt: skip


def operator_client() -> Client:
    _, token = tokens.mint("importer", "operator", "test", 100_000)
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


@pytest.fixture
def dead(console, rsmq: RedisSMQ) -> str:
    """A dead-letter queue never received from: its hash has no totalrecv yet."""
    rsmq.create_queue("work")
    rsmq.create_queue("dead")
    rsmq.set_dead_letter_policy("work", "dead", 1)
    return "dead"


def line(mid: str, body: str = "poison") -> str:
    return json.dumps({"id": mid, "body": body, "rc": 3, "fr": 1}) + "\n"


def test_twelve_forbidden_ids_are_refused_on_import_and_nothing_is_written(
    dead: str, ns_state, node: NodeRsmq, r: redis.Redis, ns: str
) -> None:
    assert len(FORBIDDEN) == 12
    assert not r.hexists(f"{ns}:{dead}:Q", "totalrecv")
    before = ns_state()
    api = operator_client()
    for mid in FORBIDDEN:
        data = (line(GOOD) + line(mid)).encode()
        answer = api.post(
            f"/api/queues/{dead}/import/?keep_ids=true", data=data,
            content_type="application/x-ndjson",
        )  # fmt: skip
        assert answer.status_code == 400, (mid, answer.content)
        text = answer.json()["error"]
        assert "line 2: id must be an RSMQ message id" in text, (mid, text)
        assert ns_state() == before, mid

    # the queue still works for every client: Node rsmq sends and receives
    sent = node.call("sendMessage", qname=dead, message="after")
    got = node.call("receiveMessage", qname=dead, vt=30)
    assert got["id"] == sent and got["message"] == "after" and got["rc"] == 1
    assert node.call("getQueueAttributes", qname=dead)["totalrecv"] == 1


def test_the_import_script_refuses_them_whatever_called_it(
    dead: str, rsmq: RedisSMQ, ns_state
) -> None:
    """No surface can bypass the check: the core's own call, past the file's reader."""
    before = ns_state()
    for mid in FORBIDDEN:
        with pytest.raises(InvalidArgument, match=r"id \(record 1\) must be an RSMQ message id"):
            rsmq.import_messages(
                dead, [ImportRecord("fine", id=GOOD), ImportRecord("poison", id=mid)],
                keep_ids=True,
            )  # fmt: skip
    assert ns_state() == before


def test_the_ids_rsmq_clients_make_are_kept(dead: str, rsmq: RedisSMQ, node: NodeRsmq) -> None:
    go_id = "AbCdEfGhIjKlMnOpQrStUv"  # go-rsmq's: 22 random letters and digits
    node_id = node.call("sendMessage", qname="work", message="from node")
    node.call("deleteMessage", qname="work", id=node_id)
    got = rsmq.import_messages(
        dead, [ImportRecord("a", id=node_id), ImportRecord("b", id=go_id)], keep_ids=True
    )
    assert got == [node_id, go_id]
    assert node.call("receiveMessage", qname=dead, vt=30)["id"] in (node_id, go_id)


def test_a_member_named_like_a_field_is_never_moved_nor_put_back(
    console, rsmq: RedisSMQ, r: redis.Redis, ns: str, node: NodeRsmq
) -> None:
    """Another client wrote members named ``totalrecv`` and like a message's rc into q1:
    a move leaves them (they would break q2), a purge takes them and its Undo does not
    bring them back."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    ok = rsmq.send_message("q1", "fine")
    rc_like = FORBIDDEN[-1]  # passes the original's id format, names a field
    r.zadd(f"{ns}:q1", {"totalrecv": 1, rc_like: 2})
    r.hset(f"{ns}:q1:Q", mapping={"totalrecv": "spoiled", rc_like: "spoiled"})
    assert rsmq.move_messages("q1", "q2", [ok, rc_like]) == 1
    assert r.zrange(f"{ns}:q2", 0, -1) == [ok]
    assert not r.hexists(f"{ns}:q2:Q", rc_like)

    token = rsmq.open_undo("purge", "q1")
    rsmq.purge_queue("q1", keep=token)
    restored = rsmq.undo(token)
    assert (restored.restored, restored.foreign) == (0, 2)
    assert set(restored.foreign_ids) == {"totalrecv", rc_like}
    assert r.zcard(f"{ns}:q1") == 0
    sent = node.call("sendMessage", qname="q1", message="after")
    assert node.call("receiveMessage", qname="q1", vt=30)["id"] == sent
