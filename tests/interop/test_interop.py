"""Interop (§3): our ``queues`` client, the original Node rsmq 0.12.4 and PyRSMQ 0.6.1,
all on the one real Redis of the test session.

The Node side is the real rsmq 0.12.4 from npm (pinned by tests/node/package-lock.json),
driven by tests/node/driver.js: one node process per batch of operations.
"""

from __future__ import annotations

import math
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from rsmq import RedisSMQ as PyRSMQ
from rsmq.cmd import QueueAlreadyExists, QueueDoesNotExist
from support.node_rsmq import NodeRsmq, ref

from queues import (
    InvalidArgument,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    QueueExists,
    QueueNotFound,
    RedisSMQ,
)
from queues.server import EmbeddedRedis

ID_RE = re.compile(r"[0-9a-z]{10}[A-Za-z0-9]{22}")
COUNTERS = ("totalsent", "totalrecv", "msgs", "hiddenmsgs")
ATTRIBUTES = ("vt", "delay", "maxsize", "created", "modified", *COUNTERS)
#: the fields of a queue's hash once it has sent and received: no message fields
QUEUE_FIELDS = ("vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv")


@pytest.fixture
def py(redis_server: EmbeddedRedis, ns: str) -> Iterator[PyRSMQ]:
    client = PyRSMQ(host="127.0.0.1", port=redis_server.port, ns=ns, exceptions=True)
    yield client
    client.client.close()


# -- helpers ------------------------------------------------------------------------


def now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def wait_for_next_second(r: redis.Redis) -> None:
    """Let Redis' clock pass into the next second.

    The original's getQueueAttributes counts as hidden every message scored at or after the
    start of the current second (it truncates now to the second), so visible messages agree
    on ``hiddenmsgs`` only once they are from an earlier second.
    """
    _, usec = r.time()
    time.sleep((1_000_000 - usec) / 1e6 + 0.02)


def sent_of(message_id: str) -> float:
    """``sent`` as the original computes it from the id: epoch ms, with µs as fraction."""
    return int(message_id[:10], 36) / 1000


def queues_attributes(rsmq: RedisSMQ, qname: str) -> dict[str, int]:
    attrs = rsmq.get_queue_attributes(qname)
    return {k: getattr(attrs, k) for k in ATTRIBUTES}


def node_attributes(node: NodeRsmq, qname: str) -> dict[str, int]:
    attrs = node.call("getQueueAttributes", qname=qname)
    return {k: attrs[k] for k in ATTRIBUTES}


def py_attributes(py: PyRSMQ, qname: str) -> dict[str, int]:
    attrs = py.getQueueAttributes(qname=qname).execute()
    # PyRSMQ returns vt and delay as floats (30.0); the stored value is the same.
    return {k: int(attrs[k]) for k in ATTRIBUTES}


def fields_of(obj: object, like: dict[str, Any]) -> dict[str, Any]:
    """The fields of a result named in ``like`` (results may grow more fields)."""
    return {k: getattr(obj, k) for k in like}


def hash_fields(r: redis.Redis, ns: str, qname: str) -> set[str]:
    return set(r.hkeys(f"{ns}:{qname}:Q"))


# -- Node sends, queues receives / browses / requeues / deletes ---------------------


def test_node_sent_message_is_received_by_queues(node: NodeRsmq, rsmq: RedisSMQ) -> None:
    _, mid = node.run(
        ("createQueue", {"qname": "q"}), ("sendMessage", {"qname": "q", "message": "hi"})
    )

    msg = rsmq.receive_message("q")

    assert msg is not None
    assert (msg.id, msg.message, msg.rc, msg.sent) == (mid, "hi", 1, sent_of(mid))


def test_node_sent_message_is_browsed_by_queues_without_being_received(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    _, mid = node.run(
        ("createQueue", {"qname": "q"}), ("sendMessage", {"qname": "q", "message": "look"})
    )

    page = rsmq.list_messages("q")
    one = rsmq.get_message("q", mid)
    attrs = node.call("getQueueAttributes", qname="q")

    expected = dict(
        id=mid, message="look", size=4, rc=0, fr=None, sent=sent_of(mid),
        visible_at=math.floor(sent_of(mid)), state="visible",
    )  # fmt: skip
    assert [fields_of(m, expected) for m in page.items] == [expected]
    assert one is not None and fields_of(one, expected) == expected
    assert (attrs["totalrecv"], page.total) == (0, 1)


def test_node_delayed_message_is_browsed_as_delayed_by_queues(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    _, mid = node.run(
        ("createQueue", {"qname": "q"}),
        ("sendMessage", {"qname": "q", "message": "later", "delay": 100}),
    )

    page = rsmq.list_messages("q", state="delayed")

    assert [(m.id, m.state, m.visible_at) for m in page.items] == [
        (mid, "delayed", math.floor(sent_of(mid)) + 100_000)
    ]


def test_node_received_message_is_requeued_by_queues_and_received_again_by_node(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    _, _, first = node.run(
        ("createQueue", {"qname": "q", "vt": 60}),
        ("sendMessage", {"qname": "q", "message": "again"}),
        ("receiveMessage", {"qname": "q"}),
    )
    assert node.call("receiveMessage", qname="q") == {}  # in flight for 60 s

    assert rsmq.requeue("q", [first["id"]]) == 1
    second = node.call("receiveMessage", qname="q")

    assert (second["id"], second["rc"], second["fr"]) == (first["id"], 2, first["fr"])


def test_node_received_message_is_deleted_by_queues_leaving_no_fields(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    _, _, msg = node.run(
        ("createQueue", {"qname": "q"}),
        ("sendMessage", {"qname": "q", "message": "bye"}),
        ("receiveMessage", {"qname": "q"}),
    )

    assert rsmq.delete_message("q", msg["id"]) is True

    assert r.zcard(f"{ns}:q") == 0
    assert hash_fields(r, ns, "q") == set(QUEUE_FIELDS)
    assert node.call("deleteMessage", qname="q", id=msg["id"]) == 0


def test_node_sent_message_is_popped_by_queues(node: NodeRsmq, rsmq: RedisSMQ) -> None:
    _, mid = node.run(
        ("createQueue", {"qname": "q"}), ("sendMessage", {"qname": "q", "message": "p"})
    )

    msg = rsmq.pop_message("q")
    attrs = node.call("getQueueAttributes", qname="q")

    assert msg is not None and (msg.id, msg.rc) == (mid, 1)
    assert (attrs["msgs"], attrs["totalrecv"]) == (0, 1)


def test_queue_stats_of_queues_tell_node_sent_messages_apart_by_state(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    _, first, *_ = node.run(
        ("createQueue", {"qname": "q", "vt": 60}),
        ("sendMessage", {"qname": "q", "message": "received"}),
        ("sendMessage", {"qname": "q", "message": "waiting"}),
        ("sendMessage", {"qname": "q", "message": "delayed", "delay": 60}),
        ("receiveMessage", {"qname": "q"}),
    )
    waiting = rsmq.list_messages("q", state="visible").items[0].id

    (stats,) = rsmq.queue_stats(["q"])

    wanted = dict(
        totalsent=3, totalrecv=1, msgs=3, visible=1, hidden=2, inflight=1, delayed=1,
        oldest_sent=sent_of(waiting),
    )  # fmt: skip
    assert {k: getattr(stats, k) for k in wanted} == wanted
    assert rsmq.get_message("q", first).state == "inflight"  # type: ignore[union-attr]


# -- queues sends, Node receives / deletes / changes visibility ----------------------


def test_queues_sent_message_is_received_by_node(node: NodeRsmq, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q")
    mid = rsmq.send_message("q", "hello node")

    msg = node.call("receiveMessage", qname="q")

    assert {k: msg[k] for k in ("id", "message", "rc", "sent")} == {
        "id": mid,
        "message": "hello node",
        "rc": 1,
        "sent": sent_of(mid),
    }


def test_queues_batch_sent_messages_are_received_by_node_in_send_order(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q")
    ids = rsmq.send_messages("q", ["a", "b", "c", "d"])

    got = node.run(*[("receiveMessage", {"qname": "q"})] * 4)

    assert [(m["id"], m["message"]) for m in got] == list(zip(ids, "abcd", strict=True))


def test_queues_received_message_is_deleted_by_node_leaving_no_fields(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    mid = rsmq.send_message("q", "x")
    assert rsmq.receive_message("q") is not None

    assert node.call("deleteMessage", qname="q", id=mid) == 1

    assert rsmq.get_message("q", mid) is None
    assert not {mid, f"{mid}:rc", f"{mid}:fr"} & hash_fields(r, ns, "q")


def test_queues_received_message_is_made_visible_by_node_and_received_again(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q", vt=60)
    rsmq.send_message("q", "x")
    first = rsmq.receive_message("q")
    assert first is not None and rsmq.receive_message("q") is None

    assert node.call("changeMessageVisibility", qname="q", id=first.id, vt=0) == 1
    second = rsmq.receive_message("q")

    assert second is not None
    assert (second.id, second.rc, second.fr) == (first.id, 2, first.fr)


def test_node_visibility_change_is_read_by_queues_as_the_new_visible_at(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis
) -> None:
    rsmq.create_queue("q")
    mid = rsmq.send_message("q", "x")

    before = now_ms(r)
    assert node.call("changeMessageVisibility", qname="q", id=mid, vt=100) == 1
    after = now_ms(r)
    info = rsmq.get_message("q", mid)

    assert info is not None and info.state == "delayed"
    assert before + 100_000 <= info.visible_at <= after + 100_000


def test_queues_sent_message_is_popped_by_node(node: NodeRsmq, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q")
    mid = rsmq.send_message("q", "pop me")

    msg = node.call("popMessage", qname="q")
    attrs = rsmq.get_queue_attributes("q")

    assert (msg["id"], msg["message"], msg["rc"]) == (mid, "pop me", 1)
    assert (attrs.msgs, attrs.totalrecv) == (0, 1)


def test_non_ascii_messages_round_trip_between_node_and_queues(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    body = "héllo ✓ 日本語 🎉"
    rsmq.create_queue("q")
    rsmq.send_message("q", body)
    node_got, _ = node.run(
        ("receiveMessage", {"qname": "q"}), ("sendMessage", {"qname": "q", "message": body})
    )

    queues_got = rsmq.receive_message("q")

    assert (node_got["message"], queues_got and queues_got.message) == (body, body)


# -- PyRSMQ <-> queues ---------------------------------------------------------------


def test_pyrsmq_sent_message_is_received_by_queues(py: PyRSMQ, rsmq: RedisSMQ) -> None:
    py.createQueue(qname="q").execute()
    mid = py.sendMessage(qname="q", message="from pyrsmq").execute()

    msg = rsmq.receive_message("q")

    assert msg is not None
    assert (msg.id, msg.message, msg.rc, msg.sent) == (mid, "from pyrsmq", 1, sent_of(mid))


def test_pyrsmq_sent_message_is_browsed_by_queues(py: PyRSMQ, rsmq: RedisSMQ) -> None:
    py.createQueue(qname="q").execute()
    mid = py.sendMessage(qname="q", message="look").execute()

    info = rsmq.get_message("q", mid)
    page = rsmq.list_messages("q", state="visible")

    assert info is not None
    assert (info.message, info.rc, info.fr, info.state) == ("look", 0, None, "visible")
    assert info.visible_at == math.floor(sent_of(mid))
    assert [m.id for m in page.items] == [mid]


def test_pyrsmq_received_message_is_requeued_by_queues_and_received_again_by_pyrsmq(
    py: PyRSMQ, rsmq: RedisSMQ
) -> None:
    py.createQueue(qname="q", vt=60).execute()
    py.sendMessage(qname="q", message="again").execute()
    first = py.receiveMessage(qname="q").execute()

    assert rsmq.requeue("q", [first["id"]]) == 1
    second = py.receiveMessage(qname="q").execute()

    # PyRSMQ names the first-receive time "ts"
    assert (second["id"], second["rc"], second["ts"]) == (first["id"], 2, first["ts"])


def test_pyrsmq_received_message_is_deleted_by_queues(
    py: PyRSMQ, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    py.createQueue(qname="q").execute()
    py.sendMessage(qname="q", message="bye").execute()
    msg = py.receiveMessage(qname="q").execute()

    assert rsmq.delete_message("q", msg["id"]) is True

    assert r.zcard(f"{ns}:q") == 0
    assert not {msg["id"], f"{msg['id']}:rc", f"{msg['id']}:fr"} & hash_fields(r, ns, "q")


def test_queues_sent_message_is_received_by_pyrsmq(py: PyRSMQ, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("q")
    mid = rsmq.send_message("q", "hello pyrsmq")

    msg = py.receiveMessage(qname="q").execute()
    info = rsmq.get_message("q", mid)

    assert (msg["id"], msg["message"], msg["rc"]) == (mid, "hello pyrsmq", 1)
    assert info is not None and msg["ts"] == info.fr


def test_queues_received_message_is_deleted_by_pyrsmq(
    py: PyRSMQ, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    mid = rsmq.send_message("q", "x")
    assert rsmq.receive_message("q") is not None

    assert py.deleteMessage(qname="q", id=mid).execute() is True

    assert r.zcard(f"{ns}:q") == 0
    assert not {mid, f"{mid}:rc", f"{mid}:fr"} & hash_fields(r, ns, "q")


def test_queues_received_message_is_made_visible_by_pyrsmq_and_received_again(
    py: PyRSMQ, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("q", vt=60)
    rsmq.send_message("q", "x")
    first = rsmq.receive_message("q")
    assert first is not None

    assert py.changeMessageVisibility(qname="q", id=first.id, vt=0).execute() is True
    second = rsmq.receive_message("q")

    assert second is not None
    assert (second.id, second.rc, second.fr) == (first.id, 2, first.fr)


# -- Node <-> PyRSMQ -----------------------------------------------------------------


def test_node_sent_message_is_received_and_deleted_by_pyrsmq(
    node: NodeRsmq, py: PyRSMQ, r: redis.Redis, ns: str
) -> None:
    _, mid = node.run(
        ("createQueue", {"qname": "q"}), ("sendMessage", {"qname": "q", "message": "n2p"})
    )

    msg = py.receiveMessage(qname="q").execute()
    deleted = py.deleteMessage(qname="q", id=mid).execute()

    assert (msg["id"], msg["message"], msg["rc"], deleted) == (mid, "n2p", 1, True)
    assert r.exists(f"{ns}:q") == 0


def test_pyrsmq_sent_message_is_received_and_deleted_by_node(
    node: NodeRsmq, py: PyRSMQ, r: redis.Redis, ns: str
) -> None:
    py.createQueue(qname="q").execute()
    mid = py.sendMessage(qname="q", message="p2n").execute()

    msg, deleted = node.run(
        ("receiveMessage", {"qname": "q"}), ("deleteMessage", {"qname": "q", "id": ref(0, "id")})
    )

    assert (msg["id"], msg["message"], msg["rc"], deleted) == (mid, "p2n", 1, 1)
    assert r.exists(f"{ns}:q") == 0


# -- queues created by one client are usable by the others ---------------------------


@pytest.mark.parametrize("creator", ["node", "queues", "pyrsmq"])
def test_queue_created_by_any_client_reads_the_same_attributes_in_every_client(
    creator: str, node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ
) -> None:
    if creator == "node":
        node.call("createQueue", qname="q", vt=45, delay=3, maxsize=2048)
    elif creator == "queues":
        rsmq.create_queue("q", vt=45, delay=3, maxsize=2048)
    else:
        py.createQueue(qname="q", vt=45, delay=3, maxsize=2048).execute()

    seen = {
        "node": node_attributes(node, "q"),
        "queues": queues_attributes(rsmq, "q"),
        "pyrsmq": py_attributes(py, "q"),
    }

    first = seen["queues"]
    assert {k: first[k] for k in ("vt", "delay", "maxsize", *COUNTERS)} == dict(
        vt=45, delay=3, maxsize=2048, totalsent=0, totalrecv=0, msgs=0, hiddenmsgs=0
    )
    assert seen == {"node": first, "queues": first, "pyrsmq": first}


@pytest.mark.parametrize("creator", ["node", "queues", "pyrsmq"])
def test_queue_created_by_any_client_carries_messages_of_every_client(
    creator: str, node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ
) -> None:
    if creator == "node":
        node.call("createQueue", qname="q")
    elif creator == "queues":
        rsmq.create_queue("q")
    else:
        py.createQueue(qname="q").execute()
    ids = [
        node.call("sendMessage", qname="q", message="from node"),
        rsmq.send_message("q", "from queues"),
        py.sendMessage(qname="q", message="from pyrsmq").execute(),
    ]

    got = rsmq.receive_messages("q", 10)

    assert [(m.id, m.message) for m in got] == list(
        zip(ids, ["from node", "from queues", "from pyrsmq"], strict=True)
    )


def test_attributes_set_by_queues_are_read_by_node_and_pyrsmq(
    node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ
) -> None:
    node.call("createQueue", qname="q")

    mine = rsmq.set_queue_attributes("q", vt=7, delay=2, maxsize=-1)

    expected = {k: getattr(mine, k) for k in ATTRIBUTES}
    assert (mine.vt, mine.delay, mine.maxsize) == (7, 2, -1)
    assert {"node": node_attributes(node, "q"), "pyrsmq": py_attributes(py, "q")} == {
        "node": expected,
        "pyrsmq": expected,
    }


def test_attributes_set_by_node_are_read_by_queues(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis
) -> None:
    rsmq.create_queue("q")
    r.hset(f"{rsmq.ns}:q:Q", "modified", 1)  # so the change of modified shows

    theirs = node.call("setQueueAttributes", qname="q", vt=9, delay=4, maxsize=1024)
    mine = queues_attributes(rsmq, "q")

    assert theirs["modified"] > 1
    assert {k: theirs[k] for k in ATTRIBUTES} == mine


def test_every_client_lists_the_queues_created_by_all_of_them(
    node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ
) -> None:
    node.call("createQueue", qname="by-node")
    rsmq.create_queue("by_queues")
    py.createQueue(qname="byPyrsmq").execute()

    lists = {
        "node": sorted(node.call("listQueues")),
        "queues": rsmq.list_queues(),
        "pyrsmq": sorted(py.listQueues().execute()),
    }

    expected = sorted(["by-node", "by_queues", "byPyrsmq"])
    assert lists == {"node": expected, "queues": expected, "pyrsmq": expected}


# -- counters, rc / fr, ids ----------------------------------------------------------


def test_all_clients_agree_on_counters_after_a_mixed_sequence(
    node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ, r: redis.Redis
) -> None:
    rsmq.create_queue("q", vt=60)
    node.run(
        *[("sendMessage", {"qname": "q", "message": f"node {i}"}) for i in range(3)],
        ("sendMessage", {"qname": "q", "message": "node delayed", "delay": 60}),
    )
    rsmq.send_messages("q", [f"queues {i}" for i in range(2)])
    rsmq.send_message("q", "queues 2")
    for i in range(3):
        py.sendMessage(qname="q", message=f"pyrsmq {i}").execute()
    # 10 sent (1 delayed); 8 received, 1 of them requeued, 2 deleted: 8 left, 6 hidden
    received = node.run(*[("receiveMessage", {"qname": "q"})] * 2)
    received += [{"id": m.id} for m in rsmq.receive_messages("q", 2)]
    received.append({"id": rsmq.receive_message("q").id})  # type: ignore[union-attr]
    received += [py.receiveMessage(qname="q").execute() for _ in range(2)]
    assert rsmq.requeue("q", [received[0]["id"]]) == 1
    assert py.receiveMessage(qname="q").execute()["message"] == "pyrsmq 1"
    assert rsmq.delete_message("q", received[1]["id"])
    assert node.call("deleteMessage", qname="q", id=received[2]["id"]) == 1
    wait_for_next_second(r)

    counters = {
        "node": node_attributes(node, "q"),
        "queues": queues_attributes(rsmq, "q"),
        "pyrsmq": py_attributes(py, "q"),
    }

    expected = {"totalsent": 10, "totalrecv": 8, "msgs": 8, "hiddenmsgs": 6}
    assert {name: {k: a[k] for k in COUNTERS} for name, a in counters.items()} == {
        "node": expected,
        "queues": expected,
        "pyrsmq": expected,
    }


def test_all_clients_agree_on_rc_and_fr_of_a_message_each_of_them_received(
    node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    mid = rsmq.send_message("q", "shared")

    by_node = node.call("receiveMessage", qname="q", vt=0)
    by_py = py.receiveMessage(qname="q", vt=0).execute()
    by_queues = rsmq.receive_message("q", vt=0)
    info = rsmq.get_message("q", mid)
    raw_fr = int(r.hget(f"{ns}:q:Q", f"{mid}:fr"))  # type: ignore[arg-type]

    assert by_queues is not None and info is not None
    seen = [
        (by_node["rc"], by_node["fr"]),
        (by_py["rc"], by_py["ts"]),
        (by_queues.rc, by_queues.fr),
        (info.rc, info.fr),
    ]
    assert seen == [(1, raw_fr), (2, raw_fr), (3, raw_fr), (3, raw_fr)]


def test_message_ids_of_every_client_have_the_same_format_and_time_prefix(
    node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ, r: redis.Redis
) -> None:
    rsmq.create_queue("q")
    sec, usec = r.time()
    start_us = sec * 1_000_000 + usec
    ids = {
        "node": node.call("sendMessage", qname="q", message="x"),
        "queues": rsmq.send_message("q", "x"),
        "queues batch": rsmq.send_messages("q", ["x"])[0],
        "pyrsmq": py.sendMessage(qname="q", message="x").execute(),
    }
    sec, usec = r.time()
    end_us = sec * 1_000_000 + usec

    shapes = {
        name: (len(mid), bool(ID_RE.fullmatch(mid)), start_us <= int(mid[:10], 36) <= end_us)
        for name, mid in ids.items()
    }

    assert shapes == dict.fromkeys(ids, (32, True, True))


def test_sent_is_computed_from_the_id_the_same_way_and_matches_the_score(
    node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    ids = [
        node.call("sendMessage", qname="q", message="node"),
        rsmq.send_message("q", "queues"),
        py.sendMessage(qname="q", message="pyrsmq").execute(),
    ]
    scores = [r.zscore(f"{ns}:q", mid) for mid in ids]

    node_sent = [m["sent"] for m in node.run(*[("receiveMessage", {"qname": "q", "vt": 0})] * 3)]
    queues_sent = [m.sent for m in rsmq.receive_messages("q", 3)]

    # the score of a message sent without delay is its sent time, from the same TIME call
    assert [math.floor(s) for s in queues_sent] == scores
    assert node_sent == queues_sent == [sent_of(mid) for mid in ids]


# -- deleteQueue by the original removes everything ----------------------------------


def test_node_delete_queue_removes_everything_queues_wrote(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q", vt=60)
    rsmq.send_messages("q", [f"m{i}" for i in range(50)], delay=0)
    rsmq.send_message("q", "later", delay=100)
    rsmq.receive_messages("q", 10)
    rsmq.set_queue_attributes("q", maxsize=-1)
    rsmq.requeue("q", [m.id for m in rsmq.list_messages("q", state="inflight", limit=3).items])
    assert r.keys(f"{ns}:*")

    assert node.call("deleteQueue", qname="q") == 1

    assert r.keys(f"{ns}:*") == []


def test_node_delete_queue_removes_everything_after_queues_purge(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("q")
    rsmq.send_messages("q", [f"m{i}" for i in range(1000)])
    rsmq.send_messages("q", [f"n{i}" for i in range(1500)])
    rsmq.receive_messages("q", 100)
    assert rsmq.purge_queue("q") == 2500

    assert node.call("deleteQueue", qname="q") == 1

    assert r.keys(f"{ns}:*") == []


def test_node_delete_queue_removes_everything_after_queues_move(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    rsmq.create_queue("src")
    rsmq.create_queue("dst")
    ids = rsmq.send_messages("src", [f"m{i}" for i in range(20)])
    rsmq.receive_messages("src", 5)
    assert rsmq.move_messages("src", "dst", ids[:10]) == 10
    assert rsmq.move_messages("src", "dst") == 10

    results = node.run(("deleteQueue", {"qname": "src"}), ("deleteQueue", {"qname": "dst"}))

    assert results == [1, 1]
    assert r.keys(f"{ns}:*") == []


def test_queues_delete_queue_removes_everything_node_wrote(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    node.run(
        ("createQueue", {"qname": "q"}),
        *[("sendMessage", {"qname": "q", "message": f"m{i}"}) for i in range(5)],
        ("receiveMessage", {"qname": "q"}),
        ("setQueueAttributes", {"qname": "q", "vt": 5}),
    )

    rsmq.delete_queue("q")

    assert r.keys(f"{ns}:*") == []


# -- the raw Redis layout ------------------------------------------------------------

LAYOUT_BODIES = ("first", "second", "third")


def _layout_by_node(node: NodeRsmq, qname: str) -> None:
    node.run(
        ("createQueue", {"qname": qname, "vt": 60, "delay": 0, "maxsize": 2048}),
        ("sendMessage", {"qname": qname, "message": "first"}),
        ("sendMessage", {"qname": qname, "message": "second", "delay": 5}),
        ("sendMessage", {"qname": qname, "message": "third"}),
        ("receiveMessage", {"qname": qname}),
        ("setQueueAttributes", {"qname": qname, "maxsize": 4096}),
    )


def _layout_by_queues(rsmq: RedisSMQ, qname: str) -> None:
    rsmq.create_queue(qname, vt=60, delay=0, maxsize=2048)
    rsmq.send_message(qname, "first")
    rsmq.send_message(qname, "second", delay=5)
    rsmq.send_message(qname, "third")
    rsmq.receive_message(qname)
    rsmq.set_queue_attributes(qname, maxsize=4096)


def _layout_by_pyrsmq(py: PyRSMQ, qname: str) -> None:
    py.createQueue(qname=qname, vt=60, delay=0, maxsize=2048).execute()
    py.sendMessage(qname=qname, message="first").execute()
    py.sendMessage(qname=qname, message="second", delay=5).execute()
    py.sendMessage(qname=qname, message="third").execute()
    py.receiveMessage(qname=qname).execute()
    py.setQueueAttributes(qname=qname, maxsize=4096).execute()


class Window:
    """Redis time before and after some writes: tells epoch seconds from epoch ms."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r
        self.start_ms = now_ms(r)

    def close(self) -> None:
        self.end_ms = now_ms(self.r)

    def unit(self, value: str) -> str:
        v = int(value)
        if self.start_ms // 1000 <= v <= self.end_ms // 1000:
            return "<epoch s>"
        if self.start_ms <= v <= self.end_ms:
            return "<epoch ms>"
        return value


def _raw_hash(r: redis.Redis, ns: str, qname: str, window: Window) -> dict[str, str]:
    """HGETALL with each id replaced by its body's label and each time by its unit."""
    raw = r.hgetall(f"{ns}:{qname}:Q")
    labels = {k: f"<{v}>" for k, v in raw.items() if v in LAYOUT_BODIES}
    out = {}
    for field, value in raw.items():
        mid, _, suffix = field.partition(":")
        name = labels[mid] + (":" + suffix if suffix else "") if mid in labels else field
        timed = field in ("created", "modified") or suffix == "fr"
        out[name] = window.unit(value) if timed else value
    return out


def _raw_zset(r: redis.Redis, ns: str, qname: str) -> list[tuple[str, str]]:
    """ZRANGE WITHSCORES, each score relative to fr (received) or floor(sent) (never received)."""
    h = r.hgetall(f"{ns}:{qname}:Q")
    out = []
    for mid, score in r.zrange(f"{ns}:{qname}", 0, -1, withscores=True):
        fr = h.get(f"{mid}:fr")
        if fr is not None:
            out.append((f"<{h[mid]}>", f"fr + {int(score) - int(fr)}"))
        else:
            out.append((f"<{h[mid]}>", f"sent + {int(score) - math.floor(sent_of(mid))}"))
    return out


def _head_score(r: redis.Redis, ns: str, qname: str) -> float:
    return r.zrange(f"{ns}:{qname}", 0, 0, withscores=True)[0][1]


@pytest.fixture
def layouts(
    node: NodeRsmq, rsmq: RedisSMQ, py: PyRSMQ, r: redis.Redis, ns: str
) -> Iterator[tuple[Window, dict[str, str]]]:
    """The same operations written by each client to a queue of its own."""
    window = Window(r)
    _layout_by_node(node, "by-node")
    _layout_by_queues(rsmq, "by-queues")
    _layout_by_pyrsmq(py, "by-pyrsmq")
    window.close()
    yield window, {"node": "by-node", "queues": "by-queues", "pyrsmq": "by-pyrsmq"}


def test_raw_queue_hash_has_the_same_fields_and_units_for_node_queues_and_pyrsmq(
    layouts: tuple[Window, dict[str, str]], r: redis.Redis, ns: str
) -> None:
    window, queues_of = layouts

    hashes = {name: _raw_hash(r, ns, q, window) for name, q in queues_of.items()}

    expected = {
        "vt": "60", "delay": "0", "maxsize": "4096", "created": "<epoch s>",
        "modified": "<epoch s>", "totalsent": "3", "totalrecv": "1",
        "<first>": "first", "<first>:rc": "1", "<first>:fr": "<epoch ms>",
        "<second>": "second", "<third>": "third",
    }  # fmt: skip
    assert hashes == {"node": expected, "queues": expected, "pyrsmq": expected}


def test_raw_queue_zset_scores_are_epoch_ms_for_node_queues_and_pyrsmq(
    layouts: tuple[Window, dict[str, str]], r: redis.Redis, ns: str
) -> None:
    window, queues_of = layouts

    zsets = {name: _raw_zset(r, ns, q) for name, q in queues_of.items()}
    heads = {name: window.unit(str(int(_head_score(r, ns, q)))) for name, q in queues_of.items()}

    # in queue order: sent without delay, sent with delay=5, received with vt=60
    expected = [("<third>", "sent + 0"), ("<second>", "sent + 5000"), ("<first>", "fr + 60000")]
    assert zsets == {"node": expected, "queues": expected, "pyrsmq": expected}
    assert heads == dict.fromkeys(queues_of, "<epoch ms>")


def test_raw_keys_of_a_queue_are_the_same_for_node_queues_and_pyrsmq(
    layouts: tuple[Window, dict[str, str]], r: redis.Redis, ns: str
) -> None:
    _, queues_of = layouts

    keys = {name: sorted(r.keys(f"{ns}:{q}*")) for name, q in queues_of.items()}
    types = {name: [r.type(k) for k in ks] for name, ks in keys.items()}

    assert keys == {name: [f"{ns}:{q}", f"{ns}:{q}:Q"] for name, q in queues_of.items()}
    assert types == dict.fromkeys(queues_of, ["zset", "hash"])
    assert r.smembers(f"{ns}:QUEUES") == set(queues_of.values())


# -- realtime ------------------------------------------------------------------------


def test_realtime_send_publishes_the_queue_size_on_the_same_channel_as_node(
    node_driver: Path, redis_server: EmbeddedRedis, redis_url: str, r: redis.Redis, ns: str
) -> None:
    rt_node = NodeRsmq(node_driver, redis_server.port, ns, realtime=True)
    rt_queues = RedisSMQ(url=redis_url, ns=ns, realtime=True)
    pubsub = r.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(f"{ns}:rt:q")
    try:
        rt_queues.create_queue("q")
        rt_node.call("sendMessage", qname="q", message="a")
        rt_queues.send_message("q", "b")
        rt_queues.send_messages("q", ["c", "d"])
        got = []
        deadline = time.monotonic() + 5
        while len(got) < 3 and time.monotonic() < deadline:
            m = pubsub.get_message(timeout=0.5)
            if m:
                got.append((m["channel"], m["data"]))
    finally:
        pubsub.close()
        rt_queues.close()

    assert got == [(f"{ns}:rt:q", "1"), (f"{ns}:rt:q", "2"), (f"{ns}:rt:q", "4")]
    assert rt_queues.realtime_channel("q") == f"{ns}:rt:q"


# -- errors: the same situation, the corresponding error -----------------------------

# name: (Node op, its options, the Node error name, our call, our exception, field named)
ERROR_CASES: dict[str, tuple[str, dict[str, Any], str, Any, type[Exception], str | None]] = {
    "get attributes of a missing queue": (
        "getQueueAttributes", {"qname": "missing"}, "queueNotFound",
        lambda q: q.get_queue_attributes("missing"), QueueNotFound, None,
    ),
    "send to a missing queue": (
        "sendMessage", {"qname": "missing", "message": "x"}, "queueNotFound",
        lambda q: q.send_message("missing", "x"), QueueNotFound, None,
    ),
    "receive from a missing queue": (
        "receiveMessage", {"qname": "missing"}, "queueNotFound",
        lambda q: q.receive_message("missing"), QueueNotFound, None,
    ),
    "pop from a missing queue": (
        "popMessage", {"qname": "missing"}, "queueNotFound",
        lambda q: q.pop_message("missing"), QueueNotFound, None,
    ),
    "change visibility in a missing queue": (
        "changeMessageVisibility", {"qname": "missing", "id": "a" * 32, "vt": 1},
        "queueNotFound",
        lambda q: q.change_message_visibility("missing", "a" * 32, 1), QueueNotFound, None,
    ),
    "set attributes of a missing queue": (
        "setQueueAttributes", {"qname": "missing", "vt": 1}, "queueNotFound",
        lambda q: q.set_queue_attributes("missing", vt=1), QueueNotFound, None,
    ),
    "delete a missing queue": (
        "deleteQueue", {"qname": "missing"}, "queueNotFound",
        lambda q: q.delete_queue("missing"), QueueNotFound, None,
    ),
    "create an existing queue": (
        "createQueue", {"qname": "exists"}, "queueExists",
        lambda q: q.create_queue("exists"), QueueExists, None,
    ),
    "create with vt above the range": (
        "createQueue", {"qname": "new", "vt": 10_000_000}, "invalidValue",
        lambda q: q.create_queue("new", vt=10_000_000), InvalidArgument, "vt",
    ),
    "create with a negative delay": (
        "createQueue", {"qname": "new", "delay": -1}, "invalidValue",
        lambda q: q.create_queue("new", delay=-1), InvalidArgument, "delay",
    ),
    "create with maxsize below the range": (
        "createQueue", {"qname": "new", "maxsize": 1023}, "invalidValue",
        lambda q: q.create_queue("new", maxsize=1023), InvalidArgument, "maxsize",
    ),
    "receive with vt above the range": (
        "receiveMessage", {"qname": "exists", "vt": 10_000_000}, "invalidValue",
        lambda q: q.receive_message("exists", vt=10_000_000), InvalidArgument, "vt",
    ),
    "change visibility to a vt above the range": (
        "changeMessageVisibility", {"qname": "exists", "id": "a" * 32, "vt": 10_000_000},
        "invalidValue",
        lambda q: q.change_message_visibility("exists", "a" * 32, 10_000_000),
        InvalidArgument, "vt",
    ),
    "send with delay above the range": (
        "sendMessage", {"qname": "exists", "message": "x", "delay": 10_000_000},
        "invalidValue",
        lambda q: q.send_message("exists", "x", delay=10_000_000), InvalidArgument, "delay",
    ),
    "set maxsize above the range": (
        "setQueueAttributes", {"qname": "exists", "maxsize": 65_537}, "invalidValue",
        lambda q: q.set_queue_attributes("exists", maxsize=65_537), InvalidArgument, "maxsize",
    ),
    "set no attribute": (
        "setQueueAttributes", {"qname": "exists"}, "noAttributeSupplied",
        lambda q: q.set_queue_attributes("exists"), NoAttributeSupplied, None,
    ),
    "send a message longer than maxsize": (
        "sendMessage", {"qname": "small", "message": "x" * 1025}, "messageTooLong",
        lambda q: q.send_message("small", "x" * 1025), MessageTooLong, None,
    ),
    "send a message that is not a string": (
        "sendMessage", {"qname": "exists", "message": 123}, "messageNotString",
        lambda q: q.send_message("exists", 123), MessageNotString, None,
    ),
    "use a queue name of an invalid format": (
        "getQueueAttributes", {"qname": "bad name!"}, "invalidFormat",
        lambda q: q.get_queue_attributes("bad name!"), InvalidArgument, "qname",
    ),
    "delete a message id of an invalid format": (
        "deleteMessage", {"qname": "exists", "id": "short"}, "invalidFormat",
        lambda q: q.delete_message("exists", "short"), InvalidArgument, "id",
    ),
    "use an empty queue name": (
        "createQueue", {"qname": ""}, "missingParameter",
        lambda q: q.create_queue(""), InvalidArgument, "qname",
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def node_errors(node_driver: Path, redis_server: EmbeddedRedis) -> dict[str, tuple[str, str]]:
    """Every error case run by Node in one batch, on a namespace of this module's own."""
    node = NodeRsmq(node_driver, redis_server.port, "t" + uuid.uuid4().hex[:10])
    setup = [
        ("createQueue", {"qname": "exists"}),
        ("createQueue", {"qname": "small", "maxsize": 1024}),
    ]
    results = node.run(*setup, *[(c[0], c[1]) for c in ERROR_CASES.values()])
    assert results[: len(setup)] == [1, 1]
    out = {}
    for case, res in zip(ERROR_CASES, results[len(setup) :], strict=True):
        assert isinstance(res, dict) and "error" in res, f"{case}: Node gave no error: {res}"
        out[case] = (res["error"], res["message"])
    return out


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_same_situation_raises_the_corresponding_error_in_node_and_queues(
    case: str, node_errors: dict[str, tuple[str, str]], rsmq: RedisSMQ
) -> None:
    _, _, node_name, call, exc_type, field = ERROR_CASES[case]
    rsmq.create_queue("exists")
    rsmq.create_queue("small", maxsize=1024)

    with pytest.raises(exc_type) as err:
        call(rsmq)

    ours = err.value
    assert node_errors[case][0] == node_name
    if node_name in ("invalidValue", "invalidFormat", "missingParameter"):
        assert (ours.name, getattr(ours, "field", None)) == ("invalidArgument", field)
    else:
        assert ours.name == node_name  # type: ignore[attr-defined]


def test_message_of_exactly_maxsize_is_accepted_by_node_and_queues(
    node: NodeRsmq, rsmq: RedisSMQ
) -> None:
    rsmq.create_queue("small", maxsize=1024)

    theirs = node.call("sendMessage", qname="small", message="x" * 1024)
    mine = rsmq.send_message("small", "x" * 1024)

    assert [m.id for m in rsmq.receive_messages("small", 2)] == [theirs, mine]


def test_pyrsmq_raises_its_exists_and_not_found_errors_like_queues(
    rsmq: RedisSMQ, py: PyRSMQ
) -> None:
    rsmq.create_queue("exists")

    with pytest.raises(QueueAlreadyExists):
        py.createQueue(qname="exists").execute()
    with pytest.raises(QueueDoesNotExist):
        py.getQueueAttributes(qname="missing").execute()


def test_node_works_on_messages_a_paced_job_moved_and_acted_on(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    """Node rsmq's messages, moved by a paced job (queues/pacing.py: act_checked) with a
    fresh receive count, receive as new ones there; what a job deletes is gone for Node
    too, and deleteQueue leaves nothing behind."""
    from queues.pacing import Pace, Plan, run

    node.run(
        ("createQueue", {"qname": "src"}),
        ("createQueue", {"qname": "dst"}),
        *[("sendMessage", {"qname": "src", "message": f"m{i}"}) for i in range(6)],
    )
    assert len(rsmq.receive_messages("src", 6, vt=0)) == 6  # each received once: rc 1
    moved = run(rsmq, Plan("src", "move", {"state": "all", "contains": "m"}, to="dst",
                           pace=Pace(rate=100)), 3)  # fmt: skip
    assert moved.done == 3
    got = [node.call("receiveMessage", qname="dst") for _ in range(3)]
    assert sorted(m["message"] for m in got) == ["m0", "m1", "m2"]
    assert {m["rc"] for m in got} == {1}  # rc was 1 in src: fresh in dst, this is the first
    deleted = run(rsmq, Plan("src", "delete", {"state": "all", "contains": "m"}), 3)
    assert deleted.done == 3
    assert node.call("getQueueAttributes", qname="src")["msgs"] == 0

    assert node.run(("deleteQueue", {"qname": "src"}), ("deleteQueue", {"qname": "dst"})) == [1, 1]
    assert r.keys(f"{ns}:*") == []
