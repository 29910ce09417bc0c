"""Every rejected call: the right RsmqError, a message naming the field and its range, and
nothing written to Redis (SPEC §3 "Validation", "Errors"; §4 "A batch is atomic")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from queues import (
    InvalidArgument,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    QueueExists,
    QueueNotFound,
    RedisSMQ,
    RsmqError,
)

ABSENT_ID = "a" * 32


@dataclass
class Populated:
    """q1 (maxsize 1024) with one visible and one in-flight message, and an empty q2."""

    visible: str
    inflight: str


@pytest.fixture
def populated(rsmq: RedisSMQ) -> Populated:
    rsmq.create_queue("q1", maxsize=1024)
    rsmq.create_queue("q2")
    inflight, visible = rsmq.send_messages("q1", ["first", "second"])
    rsmq.receive_message("q1", vt=100)
    return Populated(visible=visible, inflight=inflight)


Call = Callable[[RedisSMQ, Populated, Any], object]


def rejects(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call, value: object, error: type
) -> Exception:
    """Run a call that must fail; assert it raised ``error`` and left Redis unchanged."""
    before = ns_state()
    with pytest.raises(error) as exc:
        call(rsmq, populated, value)
    assert isinstance(exc.value, RsmqError)
    assert ns_state() == before
    return exc.value


# -- queue names ---------------------------------------------------------------------

QNAME_CALLS: dict[str, Call] = {
    "create_queue": lambda c, p, q: c.create_queue(q),
    "delete_queue": lambda c, p, q: c.delete_queue(q),
    "get_queue_attributes": lambda c, p, q: c.get_queue_attributes(q),
    "set_queue_attributes": lambda c, p, q: c.set_queue_attributes(q, vt=5),
    "send_message": lambda c, p, q: c.send_message(q, "m"),
    "send_messages": lambda c, p, q: c.send_messages(q, ["m"]),
    "receive_message": lambda c, p, q: c.receive_message(q),
    "receive_messages": lambda c, p, q: c.receive_messages(q, 2),
    "pop_message": lambda c, p, q: c.pop_message(q),
    "pop_messages": lambda c, p, q: c.pop_messages(q, 2),
    "change_message_visibility": lambda c, p, q: c.change_message_visibility(q, p.visible, 5),
    "delete_message": lambda c, p, q: c.delete_message(q, p.visible),
    "delete_messages": lambda c, p, q: c.delete_messages(q, [p.visible]),
    "list_messages": lambda c, p, q: c.list_messages(q),
    "get_message": lambda c, p, q: c.get_message(q, p.visible),
    "requeue": lambda c, p, q: c.requeue(q, [p.inflight]),
    "purge_queue": lambda c, p, q: c.purge_queue(q),
    "move_messages-src": lambda c, p, q: c.move_messages(q, "q2"),
    "move_messages-dst": lambda c, p, q: c.move_messages("q1", q),
    "realtime_channel": lambda c, p, q: c.realtime_channel(q),
}

BAD_QNAMES = {
    "empty": "",
    "161-chars": "q" * 161,
    "space": "my queue",
    "colon": "a:b",
    "non-ascii": "qü",
    "newline": "q1\n",
    "int": 123,
    "none": None,
    "bytes": b"q1",
}


@pytest.mark.parametrize("bad", BAD_QNAMES.values(), ids=BAD_QNAMES.keys())
@pytest.mark.parametrize("call", QNAME_CALLS.values(), ids=QNAME_CALLS.keys())
def test_a_bad_queue_name_raises_invalid_argument_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call, bad: object
):
    err = rejects(rsmq, populated, ns_state, call, bad, InvalidArgument)

    assert err.field == "qname"


@pytest.mark.parametrize("bad", [123, None, b"q1"], ids=["int", "none", "bytes"])
def test_queue_stats_of_a_name_that_is_not_text_raises_invalid_argument(
    rsmq: RedisSMQ, populated: Populated, ns_state, bad: object
):
    rejects(
        rsmq, populated, ns_state, lambda c, p, q: c.queue_stats(["q1", q]), bad, InvalidArgument
    )


# A text that is not a queue name is listed as such by queue_stats (the queue set, written
# by any client, may hold it): tests/core/test_corrupt_data.py.

QNAME_MESSAGE_CASES = [pytest.param(v, id=k) for k, v in BAD_QNAMES.items()]


@pytest.mark.parametrize("bad", QNAME_MESSAGE_CASES)
def test_a_bad_queue_name_message_names_the_field_and_the_allowed_format(
    rsmq: RedisSMQ, bad: object
):
    with pytest.raises(InvalidArgument) as exc:
        rsmq.create_queue(bad)

    assert "qname" in str(exc.value)
    assert "160" in str(exc.value)


def test_a_queue_name_of_160_chars_is_accepted(rsmq: RedisSMQ):
    rsmq.create_queue("q" * 160)

    assert rsmq.list_queues() == ["q" * 160]


def test_an_empty_namespace_raises_invalid_argument(redis_url: str):
    with pytest.raises(InvalidArgument) as exc:
        RedisSMQ(url=redis_url, ns="")

    assert exc.value.field == "ns"


# -- message ids ---------------------------------------------------------------------

ID_CALLS: dict[str, Call] = {
    "change_message_visibility": lambda c, p, i: c.change_message_visibility("q1", i, 5),
    "delete_message": lambda c, p, i: c.delete_message("q1", i),
    "delete_messages": lambda c, p, i: c.delete_messages("q1", [i]),
    "delete_messages-batch": lambda c, p, i: c.delete_messages("q1", [p.visible, i]),
    "get_message": lambda c, p, i: c.get_message("q1", i),
    "requeue": lambda c, p, i: c.requeue("q1", [i]),
    "requeue-batch": lambda c, p, i: c.requeue("q1", [p.inflight, i]),
    "move_messages": lambda c, p, i: c.move_messages("q1", "q2", ids=[i]),
    "move_messages-batch": lambda c, p, i: c.move_messages("q1", "q2", ids=[p.visible, i]),
}

BAD_IDS = {
    "31-chars": "a" * 31,
    "33-chars": "a" * 33,
    "bang": "a" * 31 + "!",
    "space": "a" * 31 + " ",
    "dash": "a" * 31 + "-",
    "non-ascii": "a" * 31 + "é",
    "empty": "",
    "none": None,
    "int": 12345678901234567890123456789012,
    "bytes": b"a" * 32,
}


@pytest.mark.parametrize("bad", BAD_IDS.values(), ids=BAD_IDS.keys())
@pytest.mark.parametrize("call", ID_CALLS.values(), ids=ID_CALLS.keys())
def test_a_bad_id_raises_invalid_argument_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call, bad: object
):
    err = rejects(rsmq, populated, ns_state, call, bad, InvalidArgument)

    assert err.field == "id"


ID_MESSAGE_CASES = [pytest.param(v, id=k) for k, v in BAD_IDS.items()]


@pytest.mark.parametrize("bad", ID_MESSAGE_CASES)
def test_a_bad_id_message_names_the_field_and_the_allowed_format(
    rsmq: RedisSMQ, populated: Populated, bad: object
):
    with pytest.raises(InvalidArgument) as exc:
        rsmq.delete_message("q1", bad)

    assert "id" in str(exc.value)
    assert "32" in str(exc.value)


def test_an_id_with_a_colon_is_a_valid_format(rsmq: RedisSMQ, populated: Populated):
    assert rsmq.delete_message("q1", "a" * 31 + ":") is False


# -- vt and delay ---------------------------------------------------------------------

SECONDS_CALLS: dict[str, tuple[str, Call]] = {
    "create_queue-vt": ("vt", lambda c, p, s: c.create_queue("new", vt=s)),
    "create_queue-delay": ("delay", lambda c, p, s: c.create_queue("new", delay=s)),
    "set_queue_attributes-vt": ("vt", lambda c, p, s: c.set_queue_attributes("q1", vt=s)),
    "set_queue_attributes-delay": (
        "delay",
        lambda c, p, s: c.set_queue_attributes("q1", delay=s),
    ),
    "send_message": ("delay", lambda c, p, s: c.send_message("q1", "m", delay=s)),
    "send_messages": ("delay", lambda c, p, s: c.send_messages("q1", ["m"], delay=s)),
    "receive_message": ("vt", lambda c, p, s: c.receive_message("q1", vt=s)),
    "receive_messages": ("vt", lambda c, p, s: c.receive_messages("q1", 2, vt=s)),
    "change_message_visibility": (
        "vt",
        lambda c, p, s: c.change_message_visibility("q1", p.visible, s),
    ),
}

BAD_SECONDS = {
    "minus-1": -1,
    "10_000_000": 10_000_000,
    "float": 1.5,
    "whole-float": 1.0,
    "true": True,
    "false": False,
    "str": "5",
}


@pytest.mark.parametrize("bad", BAD_SECONDS.values(), ids=BAD_SECONDS.keys())
@pytest.mark.parametrize("field_call", SECONDS_CALLS.values(), ids=SECONDS_CALLS.keys())
def test_vt_or_delay_out_of_range_raises_invalid_argument_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, field_call: tuple[str, Call], bad: object
):
    field, call = field_call

    err = rejects(rsmq, populated, ns_state, call, bad, InvalidArgument)

    assert err.field == field
    assert str(err).startswith(field)
    assert "0" in str(err) and "9999999" in str(err)


@pytest.mark.parametrize(
    "call",
    [
        lambda c, p, s: c.create_queue("new", vt=s),
        lambda c, p, s: c.create_queue("new", delay=s),
        lambda c, p, s: c.change_message_visibility("q1", p.visible, s),
    ],
    ids=["create_queue-vt", "create_queue-delay", "change_message_visibility"],
)
def test_vt_or_delay_of_none_where_it_is_required_raises_invalid_argument(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call
):
    rejects(rsmq, populated, ns_state, call, None, InvalidArgument)


@pytest.mark.parametrize("seconds", [0, 9_999_999])
def test_set_queue_attributes_accepts_vt_and_delay_at_either_bound(
    rsmq: RedisSMQ, populated: Populated, seconds: int
):
    attrs = rsmq.set_queue_attributes("q1", vt=seconds, delay=seconds)

    assert (attrs.vt, attrs.delay) == (seconds, seconds)


@pytest.mark.parametrize("seconds", [0, 9_999_999])
def test_send_accepts_delay_at_either_bound(
    rsmq: RedisSMQ, populated: Populated, r, ns: str, seconds: int
):
    one = rsmq.send_message("q2", "m", delay=seconds)
    (two,) = rsmq.send_messages("q2", ["m"], delay=seconds)

    for mid in (one, two):
        assert r.zscore(f"{ns}:q2", mid) == int(mid[:10], 36) // 1000 + seconds * 1000


@pytest.mark.parametrize("seconds", [0, 9_999_999])
def test_receive_accepts_vt_at_either_bound(
    rsmq: RedisSMQ, populated: Populated, r, ns: str, seconds: int
):
    # One message at a time: with vt 0 a second receive could take the first one again.
    rsmq.send_message("q2", "a")
    single = rsmq.receive_message("q2", vt=seconds)
    assert single.rc == 1
    assert r.zscore(f"{ns}:q2", single.id) == single.fr + seconds * 1000
    rsmq.delete_message("q2", single.id)

    rsmq.send_message("q2", "b")
    (batch,) = rsmq.receive_messages("q2", 1, vt=seconds)
    assert batch.rc == 1
    assert r.zscore(f"{ns}:q2", batch.id) == batch.fr + seconds * 1000


@pytest.mark.parametrize("seconds", [0, 9_999_999])
def test_change_message_visibility_accepts_vt_at_either_bound(
    rsmq: RedisSMQ, populated: Populated, r, ns: str, seconds: int
):
    before = r.time()[0] * 1000

    assert rsmq.change_message_visibility("q1", populated.visible, seconds) is True

    score = r.zscore(f"{ns}:q1", populated.visible)
    assert before + seconds * 1000 <= score <= (r.time()[0] + 1) * 1000 + seconds * 1000


# -- maxsize -------------------------------------------------------------------------

MAXSIZE_CALLS: dict[str, Call] = {
    "create_queue": lambda c, p, m: c.create_queue("new", maxsize=m),
    "set_queue_attributes": lambda c, p, m: c.set_queue_attributes("q1", maxsize=m),
}

BAD_MAXSIZES = {
    "1023": 1023,
    "65537": 65537,
    "0": 0,
    "minus-2": -2,
    "float": 2048.0,
    "true": True,
    "str": "2048",
}


@pytest.mark.parametrize("bad", BAD_MAXSIZES.values(), ids=BAD_MAXSIZES.keys())
@pytest.mark.parametrize("call", MAXSIZE_CALLS.values(), ids=MAXSIZE_CALLS.keys())
def test_maxsize_out_of_range_raises_invalid_argument_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call, bad: object
):
    err = rejects(rsmq, populated, ns_state, call, bad, InvalidArgument)

    assert err.field == "maxsize"
    assert all(part in str(err) for part in ("maxsize", "1024", "65536", "-1"))


def test_create_queue_with_maxsize_none_raises_invalid_argument(
    rsmq: RedisSMQ, populated: Populated, ns_state
):
    rejects(rsmq, populated, ns_state, MAXSIZE_CALLS["create_queue"], None, InvalidArgument)


@pytest.mark.parametrize("maxsize", [-1, 1024, 65536])
def test_create_queue_accepts_maxsize_of_minus_1_or_either_bound(rsmq: RedisSMQ, maxsize: int):
    rsmq.create_queue("new", maxsize=maxsize)

    assert rsmq.get_queue_attributes("new").maxsize == maxsize


@pytest.mark.parametrize("maxsize", [-1, 1024, 65536])
def test_set_queue_attributes_accepts_maxsize_of_minus_1_or_either_bound(
    rsmq: RedisSMQ, populated: Populated, maxsize: int
):
    assert rsmq.set_queue_attributes("q1", maxsize=maxsize).maxsize == maxsize


# -- message bodies ------------------------------------------------------------------

SEND_CALLS: dict[str, Call] = {
    "send_message": lambda c, p, m: c.send_message("q1", m),
    "send_messages": lambda c, p, m: c.send_messages("q1", ["ok", m]),
}

TOO_LONG = {
    "1025-ascii": ("x" * 1025, 1025),
    "1024-e-acute-is-2048-bytes": ("é" * 1024, 2048),
    "513-e-acute-is-1026-bytes": ("é" * 513, 1026),
    "1025-bytes": (b"x" * 1025, 1025),
}


@pytest.mark.parametrize(("body", "size"), TOO_LONG.values(), ids=TOO_LONG.keys())
@pytest.mark.parametrize("call", SEND_CALLS.values(), ids=SEND_CALLS.keys())
def test_a_message_over_maxsize_in_utf8_bytes_raises_message_too_long_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call, body: str | bytes, size: int
):
    err = rejects(rsmq, populated, ns_state, call, body, MessageTooLong)

    assert (err.size, err.maxsize) == (size, 1024)
    assert str(size) in str(err) and "maxsize" in str(err) and "1024" in str(err)


@pytest.mark.parametrize(
    "body", ["x" * 1024, "é" * 512, "🎉" * 256], ids=["ascii", "2-byte", "4-byte"]
)
def test_a_message_of_exactly_maxsize_bytes_is_accepted(
    rsmq: RedisSMQ, populated: Populated, body: str
):
    mid = rsmq.send_message("q1", body)

    assert rsmq.get_message("q1", mid).message == body


NOT_STRINGS = {
    "int": 42,
    "none": None,
    "float": 1.5,
    "list": ["a"],
    "dict": {"a": 1},
    "bool": True,
    "invalid-utf8-bytes": b"\xff\xfe",
    "truncated-utf8-bytes": b"caf\xc3",
    "invalid-utf8-bytearray": bytearray(b"\x80"),
}


@pytest.mark.parametrize("bad", NOT_STRINGS.values(), ids=NOT_STRINGS.keys())
@pytest.mark.parametrize("call", SEND_CALLS.values(), ids=SEND_CALLS.keys())
def test_a_message_that_is_not_a_string_raises_message_not_string_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call, bad: object
):
    err = rejects(rsmq, populated, ns_state, call, bad, MessageNotString)

    assert "message" in str(err).lower() and "string" in str(err)


@pytest.mark.parametrize("call", SEND_CALLS.values(), ids=SEND_CALLS.keys())
def test_a_str_with_a_lone_surrogate_raises_message_not_string_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call
):
    rejects(rsmq, populated, ns_state, call, "bad \ud800 text", MessageNotString)


# -- batch size, state, paging, sample -------------------------------------------------

N_CALLS: dict[str, Call] = {
    "receive_messages": lambda c, p, n: c.receive_messages("q1", n),
    "pop_messages": lambda c, p, n: c.pop_messages("q1", n),
}

BAD_NS = {"0": 0, "1001": 1001, "minus-1": -1, "float": 2.0, "true": True, "str": "2", "none": None}


@pytest.mark.parametrize("bad", BAD_NS.values(), ids=BAD_NS.keys())
@pytest.mark.parametrize("call", N_CALLS.values(), ids=N_CALLS.keys())
def test_a_batch_size_out_of_range_raises_invalid_argument_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call, bad: object
):
    err = rejects(rsmq, populated, ns_state, call, bad, InvalidArgument)

    assert err.field == "n"
    assert "n must be" in str(err) and "1" in str(err) and "1000" in str(err)


BAD_STATES = {"empty": "", "capitalised": "Visible", "unknown": "ready", "none": None, "int": 1}


@pytest.mark.parametrize("bad", BAD_STATES.values(), ids=BAD_STATES.keys())
def test_list_messages_with_a_bad_state_raises_invalid_argument_naming_every_state(
    rsmq: RedisSMQ, populated: Populated, ns_state, bad: object
):
    call: Call = lambda c, p, s: c.list_messages("q1", state=s)  # noqa: E731

    err = rejects(rsmq, populated, ns_state, call, bad, InvalidArgument)

    assert err.field == "state"
    assert all(s in str(err) for s in ("all", "visible", "hidden", "inflight", "delayed"))


PAGING = {
    "offset-minus-1": ("offset", {"offset": -1}),
    "offset-float": ("offset", {"offset": 1.0}),
    "limit-0": ("limit", {"limit": 0}),
    "limit-1001": ("limit", {"limit": 1001}),
    "limit-str": ("limit", {"limit": "10"}),
    "preview-minus-1": ("preview", {"preview": -1}),
    "scan_budget-0": ("scan_budget", {"scan_budget": 0}),
}


@pytest.mark.parametrize(("field", "kwargs"), PAGING.values(), ids=PAGING.keys())
def test_list_messages_with_bad_paging_raises_invalid_argument_naming_field_and_range(
    rsmq: RedisSMQ, populated: Populated, ns_state, field: str, kwargs: dict[str, object]
):
    call: Call = lambda c, p, kw: c.list_messages("q1", **kw)  # noqa: E731

    err = rejects(rsmq, populated, ns_state, call, kwargs, InvalidArgument)

    assert err.field == field
    assert str(err).startswith(f"{field} must be an integer between ")


@pytest.mark.parametrize("bad", [0, 100_001, 1.5, None])
def test_queue_stats_with_a_bad_sample_raises_invalid_argument(
    rsmq: RedisSMQ, populated: Populated, ns_state, bad: object
):
    call: Call = lambda c, p, s: c.queue_stats(sample=s)  # noqa: E731

    err = rejects(rsmq, populated, ns_state, call, bad, InvalidArgument)

    assert err.field == "sample"
    assert "1" in str(err) and "100000" in str(err)


def test_list_messages_accepts_limit_1000(rsmq: RedisSMQ, populated: Populated):
    assert rsmq.list_messages("q1", limit=1000).total == 2


# -- set_queue_attributes with nothing, existing and missing queues --------------------


@pytest.mark.parametrize(
    "kwargs", [{}, {"vt": None, "delay": None, "maxsize": None}], ids=["nothing", "all-none"]
)
def test_set_queue_attributes_with_nothing_raises_no_attribute_supplied(
    rsmq: RedisSMQ, populated: Populated, ns_state, kwargs: dict[str, object]
):
    call: Call = lambda c, p, kw: c.set_queue_attributes("q1", **kw)  # noqa: E731

    err = rejects(rsmq, populated, ns_state, call, kwargs, NoAttributeSupplied)

    assert all(f in str(err) for f in ("vt", "delay", "maxsize"))


def test_creating_an_existing_queue_raises_queue_exists_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state
):
    call: Call = lambda c, p, q: c.create_queue(q, vt=1, delay=1, maxsize=-1)  # noqa: E731

    err = rejects(rsmq, populated, ns_state, call, "q1", QueueExists)

    assert err.qname == "q1" and "q1" in str(err)


MISSING_CALLS: dict[str, Call] = {
    "delete_queue": lambda c, p, q: c.delete_queue(q),
    "get_queue_attributes": lambda c, p, q: c.get_queue_attributes(q),
    "set_queue_attributes": lambda c, p, q: c.set_queue_attributes(q, vt=5, maxsize=-1),
    "send_message": lambda c, p, q: c.send_message(q, "m"),
    "send_messages": lambda c, p, q: c.send_messages(q, ["m", "n"]),
    "receive_message": lambda c, p, q: c.receive_message(q),
    "receive_messages": lambda c, p, q: c.receive_messages(q, 2),
    "pop_message": lambda c, p, q: c.pop_message(q),
    "pop_messages": lambda c, p, q: c.pop_messages(q, 2),
    "change_message_visibility": lambda c, p, q: c.change_message_visibility(q, p.visible, 5),
    "delete_message": lambda c, p, q: c.delete_message(q, p.visible),
    "delete_messages": lambda c, p, q: c.delete_messages(q, [p.visible]),
    "list_messages": lambda c, p, q: c.list_messages(q),
    "list_messages-inflight": lambda c, p, q: c.list_messages(q, state="inflight"),
    "get_message": lambda c, p, q: c.get_message(q, p.visible),
    "requeue": lambda c, p, q: c.requeue(q, [p.inflight]),
    "purge_queue": lambda c, p, q: c.purge_queue(q),
    "move_messages-src": lambda c, p, q: c.move_messages(q, "q2"),
    "move_messages-src-ids": lambda c, p, q: c.move_messages(q, "q2", ids=[p.visible]),
    "move_messages-dst": lambda c, p, q: c.move_messages("q1", q),
    "move_messages-dst-ids": lambda c, p, q: c.move_messages("q1", q, ids=[p.visible]),
}


@pytest.mark.parametrize("call", MISSING_CALLS.values(), ids=MISSING_CALLS.keys())
def test_an_operation_on_a_missing_queue_raises_queue_not_found_and_writes_nothing(
    rsmq: RedisSMQ, populated: Populated, ns_state, call: Call
):
    err = rejects(rsmq, populated, ns_state, call, "nope", QueueNotFound)

    assert err.qname == "nope" and "nope" in str(err)


def test_a_stale_name_in_the_queues_set_is_not_a_queue(
    rsmq: RedisSMQ, populated: Populated, r, ns: str
):
    r.sadd(f"{ns}:QUEUES", "ghost")

    with pytest.raises(QueueNotFound):
        rsmq.send_message("ghost", "m")
    assert not r.exists(f"{ns}:ghost", f"{ns}:ghost:Q")


# -- the error classes ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "name"),
    [
        (QueueNotFound, "queueNotFound"),
        (QueueExists, "queueExists"),
        (MessageTooLong, "messageTooLong"),
        (MessageNotString, "messageNotString"),
        (NoAttributeSupplied, "noAttributeSupplied"),
        (InvalidArgument, "invalidArgument"),
    ],
)
def test_every_error_derives_from_rsmq_error_and_keeps_the_original_name(cls: type, name: str):
    assert issubclass(cls, RsmqError)
    assert cls.name == name
