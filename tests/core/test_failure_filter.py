"""browse's failure filter: the messages whose last recorded failure (``record_failure``)
is of a type, says a text in its error line, or came at an attempt or later — what a
failure group of the Failing view is (``error=<its type>``), for the message browser and
the jobs that act on every match. Decided in browse.lua from each message's summary."""

from __future__ import annotations

import pytest

from queues import InvalidArgument, RedisSMQ, pacing


@pytest.fixture
def failing(rsmq: RedisSMQ) -> dict[str, str]:
    """jobs: a, b failed with KeyError (b twice: at attempts 1 and 2), c with a timeout,
    d never failed."""
    rsmq.create_queue("jobs")
    a, b, c, d = rsmq.send_messages("jobs", ["a", "b", "c", "d"])
    rsmq.record_failure("jobs", a, KeyError("customer_id"))
    rsmq.record_failure("jobs", c, TimeoutError("read timed out (10 s)"))
    for _ in range(2):  # every message received twice; b failed at each
        got = rsmq.receive_messages("jobs", 4, vt=0)
        assert b in {m.id for m in got}
        rsmq.record_failure("jobs", b, KeyError("customer_id"))
    return {"a": a, "b": b, "c": c, "d": d}


def ids(rsmq: RedisSMQ, **kw) -> set[str]:
    return {m.id for m in rsmq.browse("jobs", **kw).items}


def test_it_finds_the_messages_of_one_error_type(rsmq: RedisSMQ, failing) -> None:
    assert ids(rsmq, error="KeyError") == {failing["a"], failing["b"]}
    assert ids(rsmq, error="TimeoutError") == {failing["c"]}
    assert ids(rsmq, error="Key") == set()  # the type, exactly


def test_it_finds_a_text_in_the_error_line(rsmq: RedisSMQ, failing) -> None:
    assert ids(rsmq, error_text="timed out") == {failing["c"]}
    assert ids(rsmq, error_text="customer_id") == {failing["a"], failing["b"]}


def test_it_finds_the_messages_that_failed_at_an_attempt_or_later(rsmq, failing) -> None:
    # a failed before any receive (attempt 0); b last failed at its second receive
    assert ids(rsmq, min_attempt=2) == {failing["b"]}
    assert ids(rsmq, error="KeyError", min_attempt=1) == {failing["b"]}


def test_it_combines_with_the_other_filters(rsmq: RedisSMQ, failing) -> None:
    assert ids(rsmq, error="KeyError", min_rc=2) == {failing["a"], failing["b"]}
    assert ids(rsmq, error="KeyError", contains="a") == {failing["a"]}
    assert ids(rsmq, state="visible", error_text="timed out") == {failing["c"]}


def test_a_queue_with_no_failures_has_no_match(rsmq: RedisSMQ) -> None:
    rsmq.create_queue("clean")
    rsmq.send_messages("clean", ["x"] * 5)
    assert rsmq.browse("clean", error="KeyError").items == []


def test_another_clients_key_where_the_failures_go_matches_nothing(rsmq, failing, r) -> None:
    r.delete(f"{rsmq.ns}:jobs:x:failures")
    r.set(f"{rsmq.ns}:jobs:x:failures", "not a hash")
    assert rsmq.browse("jobs", error="KeyError").items == []


def test_it_refuses_what_is_too_long(rsmq: RedisSMQ, failing) -> None:
    with pytest.raises(InvalidArgument, match="error must be at most 200 characters"):
        rsmq.browse("jobs", error="E" * 201)
    with pytest.raises(InvalidArgument, match="error_text must be at most 64 characters"):
        rsmq.browse("jobs", error_text="t" * 65)


def test_a_job_counts_and_acts_on_one_error_type(rsmq: RedisSMQ, failing) -> None:
    match = {"state": "all", "min_rc": 0, "contains": "", "error": "KeyError"}
    assert pacing.count_matches(rsmq, "jobs", match).matched == 2
    rsmq.create_queue("parked")
    plan = pacing.Plan("jobs", "move", match, to="parked")
    assert pacing.run(rsmq, plan, 2).done == 2
    assert {m.id for m in rsmq.browse("parked").items} == {failing["a"], failing["b"]}
    # their histories moved with them: the filter finds them there
    assert ids_of(rsmq, "parked", error="KeyError") == {failing["a"], failing["b"]}


def ids_of(rsmq: RedisSMQ, qname: str, **kw) -> set[str]:
    return {m.id for m in rsmq.browse(qname, **kw).items}
