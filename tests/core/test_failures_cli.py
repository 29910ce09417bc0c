"""`rsmq failures QUEUE [ID]`: the grouped view and one message's history, as JSON."""

from __future__ import annotations

from queues import RedisSMQ
from queues.cli import EXIT_ERROR


def test_it_shows_the_groups_and_a_message_history(cli, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("jobs")
    a, b = rsmq.send_messages("jobs", ["x", "y"])
    rsmq.record_failure("jobs", a, error_type="TimeoutError", message="upstream slow")
    rsmq.record_failure("jobs", b, error_type="TimeoutError", trace="line 1\nline 2")

    code, out, _ = cli("failures", "jobs")
    assert code == 0
    (group,) = out.pop("groups")
    assert out == {"name": "jobs", "dlq": None, "complete": True}
    first, last = group.pop("first_seen"), group.pop("last_seen")
    assert 0 < first <= last
    assert group == {
        "type": "TimeoutError", "state": "retry", "queue": "jobs", "count": 2,
        "examples": sorted([a, b]),
        # the message's first line; without one, the trace's last
        "texts": [{"text": "line 2", "count": 1}, {"text": "upstream slow", "count": 1}],
        "other_texts": 0,
    }  # fmt: skip

    code, out, _ = cli("failures", "jobs", b)
    assert code == 0
    ((entry),) = out
    assert (entry["type"], entry["attempt"], entry["trace"]) == (
        "TimeoutError",
        0,
        ["line 1", "line 2"],
    )
    assert entry["at"] > 0 and entry["note"] is None


def test_it_names_a_missing_queue_and_a_bad_id(cli, rsmq: RedisSMQ) -> None:
    code, _, err = cli("failures", "nope")
    assert (code, err.strip()) == (EXIT_ERROR, "rsmq: queueNotFound: Queue not found: nope")
    rsmq.create_queue("jobs")
    code, _, err = cli("failures", "jobs", "short")
    assert code == EXIT_ERROR and "id" in err
