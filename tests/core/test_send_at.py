"""send_at: a message that becomes visible at a given time, by the Redis server's clock."""

from __future__ import annotations

import datetime as dt
import math
import time

import pytest
import redis

from queues import InvalidArgument, MessageNotString, MessageTooLong, QueueNotFound, RedisSMQ
from queues.cli import EXIT_ERROR

MAX_AHEAD = 9_999_999


def redis_now(r: redis.Redis) -> float:
    """The Redis server's clock, epoch seconds."""
    sec, usec = r.time()
    return sec + usec / 1e6


def now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def visible_at(rsmq: RedisSMQ, qname: str, mid: str) -> int:
    info = rsmq.get_message(qname, mid)
    assert info is not None
    return info.visible_at


def test_a_message_is_visible_at_the_given_time_and_not_before(
    rsmq: RedisSMQ, queue: str, r: redis.Redis
):
    when = redis_now(r) + 1.2

    mid = rsmq.send_at(queue, "later", when)

    assert visible_at(rsmq, queue, mid) == math.ceil(when * 1000)
    assert rsmq.receive_message(queue) is None
    while (msg := rsmq.receive_message(queue)) is None:
        time.sleep(0.01)
    assert msg.id == mid
    assert msg.fr >= when * 1000


def test_an_aware_datetime_in_any_timezone_is_the_same_instant(
    rsmq: RedisSMQ, queue: str, r: redis.Redis
):
    epoch = math.floor(redis_now(r)) + 100
    utc = dt.datetime.fromtimestamp(epoch, tz=dt.UTC)
    plus5 = utc.astimezone(dt.timezone(dt.timedelta(hours=5)))

    ids = [rsmq.send_at(queue, "m", when) for when in (utc, plus5, epoch)]

    assert [visible_at(rsmq, queue, i) for i in ids] == [epoch * 1000] * 3
    assert [m.state for m in rsmq.list_messages(queue).items] == ["delayed"] * 3


@pytest.mark.parametrize("ago", [0.5, 3600, None])
def test_a_time_already_past_means_now(rsmq: RedisSMQ, queue: str, r: redis.Redis, ago):
    when = 0 if ago is None else redis_now(r) - ago
    before = now_ms(r)

    mid = rsmq.send_at(queue, "now", when)

    after = now_ms(r)
    assert before <= visible_at(rsmq, queue, mid) <= after
    got = rsmq.receive_message(queue)
    assert got is not None and got.id == mid


def test_it_counts_as_a_send_of_one_message(rsmq: RedisSMQ, queue: str, r: redis.Redis):
    rsmq.send_at(queue, "m", redis_now(r) + 60)

    attrs = rsmq.get_queue_attributes(queue)
    assert (attrs.totalsent, attrs.msgs, attrs.hiddenmsgs) == (1, 1, 1)


def test_up_to_9999999_seconds_ahead_by_the_redis_clock_is_accepted(
    rsmq: RedisSMQ, queue: str, r: redis.Redis
):
    when = math.floor(redis_now(r)) + MAX_AHEAD - 5

    mid = rsmq.send_at(queue, "far", when)

    assert visible_at(rsmq, queue, mid) == when * 1000


@pytest.mark.parametrize(
    "when",
    [
        lambda now: now + MAX_AHEAD + 5,
        lambda now: dt.datetime.fromtimestamp(now + MAX_AHEAD + 5, tz=dt.UTC),
        lambda now: dt.datetime.now(),  # naive
        lambda now: -1,
        lambda now: True,
        lambda now: "2030-01-01T00:00:00+00:00",
        lambda now: None,
    ],
    ids=["too-far-epoch", "too-far-datetime", "naive", "negative", "bool", "str", "none"],
)
def test_an_invalid_when_is_rejected_naming_when_and_writing_nothing(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns_state, when
):
    before = ns_state()

    with pytest.raises(InvalidArgument) as caught:
        rsmq.send_at(queue, "m", when(redis_now(r)))

    assert caught.value.field == "when"
    assert "when" in str(caught.value)
    assert ns_state() == before


@pytest.mark.parametrize("when", [math.inf, math.nan])
def test_an_infinite_or_nan_when_is_rejected_naming_when(rsmq: RedisSMQ, queue: str, when):
    with pytest.raises(InvalidArgument) as caught:
        rsmq.send_at(queue, "m", when)

    assert caught.value.field == "when"


@pytest.mark.parametrize(
    ("qname", "message", "error"),
    [
        ("nope", "m", QueueNotFound),
        ("q1", "x" * 70_000, MessageTooLong),
        ("q1", 42, MessageNotString),
        ("q1", b"\xff", MessageNotString),
    ],
)
def test_the_queue_and_the_message_are_checked_as_by_send_message(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, qname, message, error
):
    with pytest.raises(error):
        rsmq.send_at(qname, message, redis_now(r) + 10)


def test_a_realtime_client_publishes_the_queue_size(redis_url: str, ns: str, r: redis.Redis):
    client = RedisSMQ(url=redis_url, ns=ns, realtime=True)
    client.create_queue("q1")
    pubsub = r.pubsub()
    pubsub.subscribe(client.realtime_channel("q1"))
    assert pubsub.get_message(timeout=2)["type"] == "subscribe"

    client.send_at("q1", "m", redis_now(r) + 60)

    got = pubsub.get_message(timeout=2)
    assert got is not None and got["data"] == "1"
    pubsub.close()
    client.close()


# -- the CLI: --at -------------------------------------------------------------------------


def test_cli_send_at_epoch_seconds(cli, rsmq: RedisSMQ, queue: str, r: redis.Redis):
    when = redis_now(r) + 30.5

    code, out, _ = cli("message", "send", "-n", queue, "-m", "x", "--at", repr(when))

    assert code == 0
    assert visible_at(rsmq, queue, out["id"]) == math.ceil(when * 1000)


@pytest.mark.parametrize("suffix", ["+00:00", "Z", "+02:00"])
def test_cli_send_at_iso_8601_with_a_timezone(
    cli, rsmq: RedisSMQ, queue: str, r: redis.Redis, suffix: str
):
    epoch = math.floor(redis_now(r)) + 3600
    when = dt.datetime.fromtimestamp(epoch, tz=dt.UTC)
    if suffix == "+02:00":
        when = when.astimezone(dt.timezone(dt.timedelta(hours=2)))
    text = when.replace(tzinfo=None).isoformat() + suffix

    code, out, _ = cli("message", "send", "-n", queue, "-m", "x", "--at", text)

    assert code == 0
    assert visible_at(rsmq, queue, out["id"]) == epoch * 1000


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--at", "2030-01-01T00:00:00"], "--at needs a timezone"),
        (["--at", "tomorrow"], "--at must be epoch seconds or ISO 8601"),
        (["--at", "1", "--delay", "5"], "give --delay or --at, not both"),
        (["--at", "-5"], "when must be"),
        (["--at", "99999999999"], "when must be at most 9999999 seconds from now"),
    ],
)
def test_cli_send_at_errors_are_one_line_with_exit_code_1(
    cli, rsmq: RedisSMQ, queue: str, argv: list[str], message: str
):
    code, out, err = cli("message", "send", "-n", queue, "-m", "x", *argv)

    assert (code, out) == (EXIT_ERROR, None)
    assert message in err and err.count("\n") == 1
    assert rsmq.get_queue_attributes(queue).totalsent == 0


@pytest.mark.parametrize("text", ["inf", "nan"])
def test_cli_send_at_inf_or_nan_is_a_one_line_error(cli, queue: str, text: str):
    code, out, err = cli("message", "send", "-n", queue, "-m", "x", "--at", text)

    assert (code, out) == (EXIT_ERROR, None)
    assert "--at" in err or "when" in err
