"""Edit and re-send (``resend_message``, scripts/resend.lua): the edited body goes to this
queue or another one of the namespace as a new message, and — when asked — the original
is deleted in the same atomic step: an original gone meanwhile is refused with nothing
sent; the target's maxsize and delay apply."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis

from queues import InvalidArgument, MessageGone, MessageTooLong, QueueNotFound, RedisSMQ


def test_resend_to_the_same_queue_keeps_the_original_unless_asked(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    old = rsmq.send_message(queue, '{"amount": 1}')
    rsmq.receive_message(queue, vt=0)  # rc 1 on the original
    new = rsmq.resend_message(queue, old, '{"amount": 100}')
    assert new != old
    got = rsmq.get_message(queue, new)
    assert got is not None and got.message == '{"amount": 100}' and got.rc == 0
    kept = rsmq.get_message(queue, old)
    assert kept is not None and kept.message == '{"amount": 1}' and kept.rc == 1
    assert r.hget(f"{ns}:{queue}:Q", "totalsent") == "2"


def test_resend_with_delete_replaces_the_original_in_one_step(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    old = rsmq.send_message(queue, "typo")
    rsmq.receive_message(queue, vt=0)
    rsmq.create_queue("other")
    new = rsmq.resend_message(queue, old, "fixed", to="other", delete_original=True)
    assert rsmq.get_message(queue, old) is None
    # nothing of the original is left in its queue's hash (body, rc, fr)
    assert not [f for f in r.hkeys(f"{ns}:{queue}:Q") if f.startswith(old)]
    assert r.zscore(f"{ns}:{queue}", old) is None
    got = rsmq.get_message("other", new)
    assert got is not None and got.message == "fixed" and got.rc == 0
    assert r.hget(f"{ns}:other:Q", "totalsent") == "1"


def test_an_original_gone_meanwhile_is_refused_and_nothing_is_sent(
    rsmq: RedisSMQ, queue: str, ns_state: Callable[[], object]
) -> None:
    old = rsmq.send_message(queue, "x")
    rsmq.create_queue("other")
    assert rsmq.delete_message(queue, old)
    before = ns_state()
    with pytest.raises(MessageGone) as e:
        rsmq.resend_message(queue, old, "y", to="other", delete_original=True)
    assert old in str(e.value)
    assert ns_state() == before


def test_the_targets_maxsize_and_delay_apply(
    rsmq: RedisSMQ, queue: str, ns_state: Callable[[], object]
) -> None:
    old = rsmq.send_message(queue, "x" * 2000)
    rsmq.create_queue("small", maxsize=1024, delay=60)
    before = ns_state()
    with pytest.raises(MessageTooLong):
        rsmq.resend_message(queue, old, "x" * 2000, to="small", delete_original=True)
    assert ns_state() == before  # the original stays: both or neither
    new = rsmq.resend_message(queue, old, "short", to="small", delete_original=True)
    got = rsmq.get_message("small", new)
    assert got is not None and got.state == "delayed"
    assert got is not None and got.visible_at - got.read_at > 50_000
    # a delay given overrides the target's
    now = rsmq.resend_message("small", new, "now", delay=0)
    got = rsmq.get_message("small", now)
    assert got is not None and got.state == "visible"


def test_bad_input_and_missing_queues_change_nothing(
    rsmq: RedisSMQ, queue: str, ns_state: Callable[[], object]
) -> None:
    old = rsmq.send_message(queue, "x")
    before = ns_state()
    with pytest.raises(QueueNotFound) as nf:
        rsmq.resend_message(queue, old, "y", to="nowhere", delete_original=True)
    assert nf.value.qname == "nowhere"
    with pytest.raises(QueueNotFound) as nf:
        rsmq.resend_message("gone", old, "y", to=queue)
    assert nf.value.qname == "gone"
    with pytest.raises(InvalidArgument) as bad:
        rsmq.resend_message(queue, old, "y", to="bad name!")
    assert bad.value.field == "to"
    with pytest.raises(InvalidArgument) as bad:
        rsmq.resend_message(queue, "not-an-id", "y")
    assert bad.value.field == "id"
    with pytest.raises(InvalidArgument) as bad:
        rsmq.resend_message(queue, old, "y", delay=-1)
    assert bad.value.field == "delay"
    assert ns_state() == before


def test_node_rsmq_reads_the_resent_message(rsmq: RedisSMQ, queue: str, node: object) -> None:
    old = rsmq.send_message(queue, "before")
    new = rsmq.resend_message(queue, old, "after ünïcode", delete_original=True)
    got = node.call("receiveMessage", qname=queue)  # type: ignore[attr-defined]
    assert got["id"] == new and got["message"] == "after ünïcode" and got["rc"] == 1
