"""`rsmq queue pause|throttle|resume|flow|due` and `rsmq message reschedule`."""

from __future__ import annotations

import redis

from queues import RedisSMQ

HOUR = 3_600_000


def server_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) // 1000


def test_pause_for_ten_minutes_with_a_reason(cli, rsmq: RedisSMQ, queue: str) -> None:
    code, out, _ = cli("queue", "pause", "-n", queue, "--reason", "deploy 42", "--for", "10m")
    assert code == 0
    assert (out["state"], out["reason"]) == ("paused", "deploy 42")  # type: ignore[index]
    assert out["until"] - out["since"] == 600_000  # type: ignore[index]
    assert "(rsmq CLI)" in out["by"]  # type: ignore[index]
    flow = rsmq.queue_flow(queue)
    assert flow is not None and flow.paused


def test_throttle_then_resume(cli, rsmq: RedisSMQ, queue: str) -> None:
    code, out, _ = cli("queue", "throttle", "-n", queue, "--rate", "2.5", "--by", "ops")
    assert code == 0 and out["rate"] == 2.5 and out["by"] == "ops"  # type: ignore[index]
    assert out["until"] is None  # type: ignore[index]
    code, shown, _ = cli("queue", "flow", "-n", queue)
    assert shown["flow"]["state"] == "throttled"  # type: ignore[index]
    code, out, _ = cli("queue", "resume", "-n", queue)
    assert code == 0 and out["was"]["rate"] == 2.5  # type: ignore[index]
    code, shown, _ = cli("queue", "flow", "-n", queue)
    assert shown == {"name": queue, "flow": None}


def test_a_bad_duration_is_refused_naming_it(cli, queue: str) -> None:
    code, out, err = cli("queue", "pause", "-n", queue, "--for", "soon")
    assert code == 1 and out is None and "--for must be seconds" in err


def test_due_by_the_hour(cli, rsmq: RedisSMQ, queue: str) -> None:
    rsmq.send_messages(queue, ["a", "b"], delay=7200)
    code, out, _ = cli("queue", "due", "-n", queue)
    assert code == 0 and out["scale"] == "hour" and len(out["buckets"]) == 48  # type: ignore[index]
    assert sum(b["count"] for b in out["buckets"]) == 2  # type: ignore[index]
    assert out["peak"]["count"] == 2  # type: ignore[index]


def test_reschedule_counts_first_then_spreads_and_undo_puts_them_back(
    cli, rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
) -> None:
    ids = rsmq.send_messages(queue, ["m"] * 20, delay=3600)
    before = dict(r.zrange(f"{ns}:{queue}", 0, -1, withscores=True))
    args = ("message", "reschedule", "-n", queue, "--due-from", "+30m", "--due-until", "+2h",
            "--spread", "+3h", "+4h")  # fmt: skip
    code, out, err = cli(*args)
    assert code == 1 and "20 message(s) of" in err
    code, out, _ = cli(*args, "--rate", "1000", "--yes")
    assert code == 0 and out["rescheduled"] == 20 and out["undo"]  # type: ignore[index]
    now = server_ms(r)
    moved = dict(r.zrange(f"{ns}:{queue}", 0, -1, withscores=True))
    assert all(now + 2.9 * HOUR < moved[i] < now + 4 * HOUR for i in ids)
    code, undone, _ = cli("undo", out["undo"])  # type: ignore[index]
    assert undone["restored"] == 20  # type: ignore[index]
    assert dict(r.zrange(f"{ns}:{queue}", 0, -1, withscores=True)) == before


def test_reschedule_takes_one_of_deliver_shift_spread(cli, queue: str) -> None:
    code, _, err = cli("message", "reschedule", "-n", queue, "--deliver", "--shift", "1h", "--yes")
    assert code == 1 and "one of --deliver" in err
