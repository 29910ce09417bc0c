"""What the queue page's action tests share (test_queue_actions.py and one file per family
of actions): q1 with messages in two states, and the states as a dict."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from queues import RedisSMQ


@pytest.fixture
def q1(console, rsmq: RedisSMQ) -> list[str]:
    """q1 with three messages: the first two in flight, the third visible; an empty q2."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    ids = rsmq.send_messages("q1", ["one", "two", "three"])
    rsmq.receive_messages("q1", 2, vt=60)
    return ids


@pytest.fixture
def states(rsmq: RedisSMQ) -> Callable[..., dict[str, str]]:
    """``states("q1")``: each message's state, by id."""

    def read(qname: str = "q1") -> dict[str, str]:
        return {m.id: m.state for m in rsmq.list_messages(qname, limit=100).items}

    return read
