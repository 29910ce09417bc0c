"""A queue's flow flag (queues/ops/flow.py) beside the original Node rsmq 0.12.4: Node
reads and writes a paused or throttled queue exactly as any other (the flag is no queue
and no field of the queue's hash to it), its receives bypass the flag — and show as
bypassed — while our client is held; rescheduled messages are received by Node as any."""

from __future__ import annotations

import redis
from support.node_rsmq import NodeRsmq

from queues import RedisSMQ


def test_node_sends_receives_and_deletes_on_a_paused_queue_unchanged(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    node.call("createQueue", qname="q")
    rsmq.pause_queue("q", reason="incident")
    sent, got = node.run(
        ("sendMessage", {"qname": "q", "message": "from node"}),
        ("receiveMessage", {"qname": "q"}),
    )
    assert got["id"] == sent and got["message"] == "from node" and got["rc"] == 1
    mine = rsmq.send_message("q", "from us")
    assert rsmq.receive_message("q") is None  # held: ours honours the flag
    queues, attrs, again, deleted = node.run(
        ("listQueues", {}),
        ("getQueueAttributes", {"qname": "q"}),
        ("receiveMessage", {"qname": "q"}),
        ("deleteMessage", {"qname": "q", "id": sent}),
    )
    assert queues == ["q"]
    assert (attrs["msgs"], attrs["totalsent"], attrs["totalrecv"]) == (2, 2, 1)
    assert again["id"] == mine and deleted == 1
    flow = rsmq.queue_flow("q")
    assert flow is not None and (flow.received, flow.granted, flow.bypassed) == (2, 0, 2)
    assert flow.held == 1
    # the queue's own hash holds nothing of the flag
    assert set(r.hkeys(f"{ns}:q:Q")) == {
        "vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv",
        f"{mine}", f"{mine}:rc", f"{mine}:fr",
    }  # fmt: skip


def test_node_bypasses_a_throttle_and_ours_keeps_to_it(node: NodeRsmq, rsmq: RedisSMQ) -> None:
    node.call("createQueue", qname="q")
    rsmq.send_messages("q", ["m"] * 20)
    rsmq.throttle_queue("q", 1)  # a full bucket: 1
    assert len(rsmq.receive_messages("q", 10)) == 1
    assert rsmq.receive_messages("q", 10) == []
    got = node.run(*[("receiveMessage", {"qname": "q"})] * 5)
    assert all(g["id"] for g in got)
    flow = rsmq.queue_flow("q")
    assert flow is not None and (flow.granted, flow.bypassed) == (1, 5)


def test_node_deletes_a_paused_queue_and_makes_it_again(node: NodeRsmq, rsmq: RedisSMQ) -> None:
    node.call("createQueue", qname="q")
    rsmq.pause_queue("q", seconds=600)
    node.run(("deleteQueue", {"qname": "q"}), ("createQueue", {"qname": "q"}))
    # Node's deleteQueue knows nothing of the flag: the new queue is still paused here
    # (until it expires, or is resumed), and says so
    assert rsmq.queue_flow("q") is not None
    assert rsmq.resume_queue("q") is not None
    rsmq.send_message("q", "x")
    assert rsmq.receive_message("q") is not None


def test_node_receives_messages_our_reschedule_delivered_now(
    node: NodeRsmq, rsmq: RedisSMQ, r: redis.Redis, ns: str
) -> None:
    node.call("createQueue", qname="q")
    ids = node.run(*[("sendMessage", {"qname": "q", "message": f"m{i}", "delay": 3600})
                     for i in range(3)])  # fmt: skip
    scores = dict(r.zrange(f"{ns}:q", 0, -1, withscores=True))
    token = rsmq.open_undo("deliver_matches", "q")
    acted = rsmq.reschedule("q", [(i, int(scores[i]), None) for i in ids[:2]], keep=token)
    assert acted.done == 2
    got = node.run(("receiveMessage", {"qname": "q"}), ("receiveMessage", {"qname": "q"}))
    assert {g["id"] for g in got} == set(ids[:2])
    # received since: its undo leaves both alone (a consumer holds them)
    done = rsmq.undo(token)
    assert (done.restored, done.taken) == (0, 2)
