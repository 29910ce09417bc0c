"""What a worker refuses up front, and what its text log lines carry."""

from __future__ import annotations

import logging
import math

import pytest

from queues import InvalidArgument, RedisSMQ
from queues.worker import TextFormatter, Worker


@pytest.mark.parametrize(
    ("option", "value"),
    [("timeout", -1), ("backoff", -0.5), ("max_backoff", math.inf), ("backoff", math.nan)],
)
def test_handler_options_must_be_finite_seconds(option: str, value: float) -> None:
    worker = Worker(url="redis://127.0.0.1:1/0")
    with pytest.raises(InvalidArgument) as err:
        worker.handler("jobs", **{option: value})
    assert err.value.field == option


@pytest.mark.parametrize(
    ("option", "value"), [("ack_batch", 0), ("ack_batch", 1001), ("ack_linger", -0.001)]
)
def test_ack_batch_and_ack_linger_must_be_in_range(option: str, value: float) -> None:
    with pytest.raises(InvalidArgument) as err:
        Worker(url="redis://127.0.0.1:1/0", **{option: value})
    assert err.value.field == option


def test_a_handler_vt_of_0_is_refused() -> None:
    with pytest.raises(InvalidArgument) as err:
        Worker(url="redis://127.0.0.1:1/0").handler("jobs", vt=0)
    assert err.value.field == "vt"


def test_a_queue_with_vt_0_is_refused_when_the_worker_starts(rsmq: RedisSMQ) -> None:
    rsmq.create_queue("jobs", vt=0)
    worker = Worker(rsmq)
    worker.handler("jobs")(lambda msg: None)

    with pytest.raises(InvalidArgument, match="queue jobs has vt 0"):
        worker.run()


def test_text_log_lines_carry_the_queue_and_message_id() -> None:
    record = logging.LogRecord("queues.worker", logging.WARNING, "", 0, "failed", None, None)
    record.queue, record.msg_id, record.event = "jobs", "a" * 32, "failed"

    line = TextFormatter("%(message)s").format(record)

    assert line == f"failed [event=failed queue=jobs msg_id={'a' * 32}]"


def test_a_child_stopped_by_the_forwarded_signal_while_starting_is_a_clean_stop() -> None:
    import signal

    from queues.worker_cli import exit_code

    term = signal.SIGTERM
    assert exit_code([0, -term, 0], stopped_by=[term]) == 0  # stopped before its handlers
    assert exit_code([0, -term, 0]) == 128 + term  # killed by someone else: a failure
    assert exit_code([0, -signal.SIGKILL], stopped_by=[term]) == 128 + signal.SIGKILL
    assert exit_code([0, 3], stopped_by=[term]) == 3
