"""What the message page's action tests share: a message in flight in q1, and the
words for a message another consumer deleted first."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from queues import RedisSMQ


@pytest.fixture
def mid(console, rsmq: RedisSMQ) -> str:
    """One message in q1, received once and in flight for a minute; an empty q2."""
    rsmq.create_queue("q1")
    rsmq.create_queue("q2")
    mid = rsmq.send_message("q1", "payload")
    rsmq.send_message("q1", "other")
    rsmq.receive_message("q1", vt=60)
    return mid


@pytest.fixture
def gone_text() -> Callable[[str], str]:
    def text(mid: str) -> str:
        return f"Message {mid} is not in queue q1 (deleted, moved or never there)."

    return text
