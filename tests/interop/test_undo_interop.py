"""Undo (queues/ops/undo.py) beside the original Node rsmq 0.12.4: the stash is no queue
to it, a message it receives between the action and the undo is left as it is, and it
works on the restored messages as on any others (tests/node/driver.js drives it)."""

from __future__ import annotations

import redis
from support.node_rsmq import NodeRsmq

from queues import RedisSMQ


def raw(r: redis.Redis, ns: str, qname: str) -> tuple[dict[str, str], list[tuple[str, float]]]:
    return r.hgetall(f"{ns}:{qname}:Q"), r.zrange(f"{ns}:{qname}", 0, -1, withscores=True)


def fields_of(h: dict[str, str], mid: str) -> dict[str, str]:
    return {k: v for k, v in h.items() if k.startswith(mid)}


def test_node_receives_between_a_delete_and_its_undo(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    ops = [("createQueue", {"qname": "q", "vt": 60})]
    ops += [("sendMessage", {"qname": "q", "message": f"m{i}"}) for i in range(4)]
    ops += [("receiveMessage", {"qname": "q"})]  # m0: rc 1, fr set, hidden
    _, *ids, received = node.run(*ops)
    assert received["id"] == ids[0]
    before_hash, before_zset = raw(r, ns, "q")
    token = rsmq.open_undo("delete", "q")
    assert rsmq.delete_messages("q", [ids[0], ids[1]], keep=token) == 2

    # Node meanwhile: the stash is no queue, and it receives another message
    queues, got = node.run(("listQueues", {}), ("receiveMessage", {"qname": "q"}))
    assert queues == ["q"] and got["id"] == ids[2]
    between_hash, between_zset = raw(r, ns, "q")

    assert rsmq.undo(token).restored == 2

    after_hash, after_zset = raw(r, ns, "q")
    for mid in ids[:2]:  # byte for byte as they were
        assert fields_of(after_hash, mid) == fields_of(before_hash, mid)
        assert dict(after_zset)[mid] == dict(before_zset)[mid]
    # what Node did in between is untouched
    assert fields_of(after_hash, ids[2]) == fields_of(between_hash, ids[2])
    assert dict(after_zset)[ids[2]] == dict(between_zset)[ids[2]]
    attrs, again, deleted = node.run(
        ("getQueueAttributes", {"qname": "q"}),
        ("receiveMessage", {"qname": "q"}),  # m1: restored, visible
        ("deleteMessage", {"qname": "q", "id": ids[1]}),
    )
    assert attrs["msgs"] == 4
    assert (again["id"], again["message"], again["rc"]) == (ids[1], "m1", 1)
    assert deleted == 1


def test_node_works_on_a_purged_queue_and_on_what_its_undo_put_back(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    ops = [("createQueue", {"qname": "q"})]
    ops += [("sendMessage", {"qname": "q", "message": f"m{i}"}) for i in range(3)]
    _, *ids = node.run(*ops)
    before = raw(r, ns, "q")
    token = rsmq.open_undo("purge", "q")
    assert rsmq.purge_queue("q", keep=token) == 3

    attrs, new_id, got = node.run(
        ("getQueueAttributes", {"qname": "q"}),
        ("sendMessage", {"qname": "q", "message": "new"}),
        ("receiveMessage", {"qname": "q", "vt": 60}),
    )
    assert attrs["msgs"] == 0 and got["id"] == new_id

    assert rsmq.undo(token).restored == 3
    h, z = raw(r, ns, "q")
    assert {m: s for m, s in z if m != new_id} == dict(before[1])
    for mid in ids:
        assert fields_of(h, mid) == fields_of(before[0], mid)
    received = node.run(*[("receiveMessage", {"qname": "q"}) for _ in range(3)])
    assert sorted(m["message"] for m in received) == ["m0", "m1", "m2"]
