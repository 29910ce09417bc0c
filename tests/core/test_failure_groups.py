"""Failure groups as the Failing view shows them: each error type's first and last
failure, its error lines, and retry / delete of one group, on the real Redis."""

from __future__ import annotations

import pytest

from queues import InvalidArgument, QueueNotFound, RedisSMQ


def fkey(ns: str, qname: str) -> str:
    return f"{ns}:{qname}:x:failures"


def redis_ms(r) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


@pytest.fixture
def jobs(rsmq: RedisSMQ) -> str:
    """jobs, dead-lettering to dlq after 2 receives."""
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("jobs", "dlq", 2)
    return "jobs"


def dead_letter(rsmq: RedisSMQ, body: str, error: BaseException) -> str:
    """A message of jobs that failed on both its receives, then was dead-lettered."""
    mid = rsmq.send_message("jobs", body)
    for _ in range(2):
        got = rsmq.receive_message("jobs", vt=0)
        assert got is not None and got.id == mid
        rsmq.record_failure("jobs", mid, error, vt=0)
    assert rsmq.receive_message("jobs") is None  # the third receive dead-letters it
    return mid


def test_a_group_has_its_first_and_last_failure_and_its_error_lines(
    rsmq: RedisSMQ, jobs: str, r
) -> None:
    before = redis_ms(r)
    a, b, c = rsmq.send_messages(jobs, ["a", "b", "c"])
    rsmq.record_failure(jobs, a, ValueError("amount is not a number\nmore detail"))
    middle = redis_ms(r)
    rsmq.record_failure(jobs, b, ValueError("amount is not a number"))
    rsmq.record_failure(jobs, c, ValueError("currency missing"))
    rsmq.record_failure(jobs, a, ValueError("amount is not a number"))  # a again: same first
    after = redis_ms(r)

    (g,) = rsmq.failure_groups(jobs).groups

    assert (g.type, g.state, g.where, g.count) == ("ValueError", "retry", jobs, 3)
    assert before <= g.first <= middle <= g.last <= after
    assert g.texts == (("amount is not a number", 2), ("currency missing", 1))
    assert g.other_texts == 0
    d = g.as_dict()
    assert (d["first_seen"], d["last_seen"]) == (g.first, g.last)
    assert d["texts"][0] == {"text": "amount is not a number", "count": 2}


def test_only_the_top_error_lines_are_listed_the_rest_counted(rsmq: RedisSMQ, jobs: str) -> None:
    ids = rsmq.send_messages(jobs, ["m"] * 6)
    for n, mid in enumerate(ids):
        rsmq.record_failure(jobs, mid, error_type="Timeout", message=f"after {n % 5} s")

    (g,) = rsmq.failure_groups(jobs).groups

    assert g.texts[0] == ("after 0 s", 2) and len(g.texts) == 3
    assert g.other_texts == 6 - sum(n for _, n in g.texts) == 2


def test_without_a_message_the_error_line_is_the_traces_last(rsmq: RedisSMQ, jobs: str) -> None:
    mid = rsmq.send_message(jobs, "m")
    rsmq.record_failure(jobs, mid, error_type="Crash", trace="Traceback\n  x\nCrash: it fell\n")

    assert rsmq.failure_groups(jobs).groups[0].texts == (("Crash: it fell", 1),)


def test_a_trace_given_as_lines_without_newlines_keeps_them_apart(
    rsmq: RedisSMQ, jobs: str
) -> None:
    mid = rsmq.send_message(jobs, "m")
    rsmq.record_failure(jobs, mid, error_type="E", trace=["first line", "second line", "third"])

    assert rsmq.failures(jobs, mid)[0].trace == ("first line", "second line", "third")


def test_a_summary_from_before_times_were_kept_or_spoiled_reads_as_unknown(
    rsmq: RedisSMQ, jobs: str, r
) -> None:
    a, b = rsmq.send_messages(jobs, ["a", "b"])
    spoiled = {a: "[]", a + ":t": "Old", b: "[]", b + ":t": "E\x1fx\x1f"}
    r.hset(fkey(rsmq.ns, jobs), mapping=spoiled)

    groups = {g.type: g for g in rsmq.failure_groups(jobs).groups}

    assert (groups["Old"].count, groups["Old"].first, groups["Old"].last) == (1, 0, 0)
    assert (groups["E"].first, groups["E"].texts, groups["E"].other_texts) == (0, (), 0)
    rsmq.record_failure(jobs, a, error_type="Old", message="now with times")
    old = next(g for g in rsmq.failure_groups(jobs).groups if g.type == "Old")
    assert old.first > 0 and old.texts == (("now with times", 1),)


def test_on_a_dead_letter_queue_its_messages_are_dead_letters(rsmq: RedisSMQ, jobs: str) -> None:
    mid = dead_letter(rsmq, "d", ValueError("declined"))

    g = rsmq.failure_groups("dlq")

    assert [(x.type, x.state, x.where, x.count) for x in g.groups] == [
        ("ValueError", "dead", "dlq", 1)
    ]
    assert g.groups[0].examples == (mid,) and g.groups[0].texts == (("declined", 1),)


def test_retry_of_a_retrying_group_makes_its_messages_visible_where_they_are(
    rsmq: RedisSMQ, jobs: str
) -> None:
    a, b, c = rsmq.send_messages(jobs, ["a", "b", "c"])
    assert len(rsmq.receive_messages(jobs, 3, vt=300)) == 3
    rsmq.record_failure(jobs, a, ValueError("x"), vt=300)
    rsmq.record_failure(jobs, b, ValueError("y"), vt=300)
    rsmq.record_failure(jobs, c, KeyError("z"), vt=300)

    assert rsmq.retry_failure_group(jobs, "ValueError", "retry") == 2

    got = rsmq.receive_messages(jobs, 10)
    assert sorted(m.id for m in got) == sorted([a, b])
    assert all(m.rc == 2 for m in got)  # requeued: receive counts kept


def test_retry_of_a_dead_group_redrives_it_to_its_source_afresh(rsmq: RedisSMQ, jobs: str) -> None:
    declined = [dead_letter(rsmq, f"d{n}", ValueError("declined")) for n in range(3)]
    other = dead_letter(rsmq, "k", KeyError("sku"))
    held = rsmq.receive_message("dlq", vt=300)  # a consumer of the dlq holds one
    assert held is not None and held.id == declined[0]

    assert rsmq.retry_failure_group(jobs, "ValueError", "dead") == 2

    assert sorted(m.id for m in rsmq.list_messages("dlq").items) == sorted([declined[0], other])
    back = rsmq.receive_messages(jobs, 10)
    assert sorted(m.id for m in back) == sorted(declined[1:])
    assert all(m.rc == 1 for m in back)  # starting over: not dead-lettered again at once
    assert rsmq.failures(jobs, declined[1])[0].message == "declined"  # history went along


def test_retry_from_the_dead_letter_queues_page_sends_each_home(rsmq: RedisSMQ, jobs: str) -> None:
    rsmq.create_queue("other")
    rsmq.set_dead_letter_policy("other", "dlq", 1)
    a = dead_letter(rsmq, "a", ValueError("v"))
    b = rsmq.send_message("other", "b")
    rsmq.receive_message("other", vt=0)
    rsmq.record_failure("other", b, ValueError("v"))
    assert rsmq.receive_message("other") is None

    assert rsmq.retry_failure_group("dlq", "ValueError", "dead") == 2

    assert rsmq.get_queue_attributes("dlq").msgs == 0
    assert [m.id for m in rsmq.list_messages(jobs).items] == [a]
    assert [m.id for m in rsmq.list_messages("other").items] == [b]


def test_delete_of_a_group_deletes_only_its_messages_up_to_the_limit(
    rsmq: RedisSMQ, jobs: str
) -> None:
    ids = rsmq.send_messages(jobs, ["m"] * 4)
    for mid in ids[:3]:
        rsmq.record_failure(jobs, mid, ValueError("v"))
    rsmq.record_failure(jobs, ids[3], KeyError("k"))

    assert rsmq.delete_failure_group(jobs, "ValueError", "retry", limit=2) == 2

    assert sorted(m.id for m in rsmq.list_messages(jobs).items) == sorted(ids[2:])  # oldest first
    assert [(g.type, g.count) for g in rsmq.failure_groups(jobs).groups] == [
        ("KeyError", 1), ("ValueError", 1),
    ]  # fmt: skip
    assert rsmq.delete_failure_group(jobs, "ValueError", "retry") == 1
    assert rsmq.delete_failure_group(jobs, "ValueError", "retry") == 0
    assert rsmq.failures(jobs, ids[2]) == []  # its history went with it


def test_a_group_action_names_a_bad_argument_and_changes_nothing(rsmq: RedisSMQ, jobs: str) -> None:
    mid = rsmq.send_message(jobs, "m")
    rsmq.record_failure(jobs, mid, ValueError("v"))
    for kwargs, field in [
        ({"state": "gone"}, "state"),
        ({"type": ""}, "type"),
        ({"limit": 0}, "limit"),
        ({"where": "no such:name"}, "where"),
    ]:
        args = {"type": "ValueError", "state": "retry"} | kwargs
        with pytest.raises(InvalidArgument) as e:
            rsmq.delete_failure_group(jobs, **args)
        assert field in str(e.value)
    with pytest.raises(QueueNotFound):
        rsmq.retry_failure_group("nope", "ValueError", "retry")
    assert rsmq.get_queue_attributes(jobs).msgs == 1


def test_a_dead_group_of_big_bodies_goes_home_in_several_bounded_calls(rsmq: RedisSMQ) -> None:
    rsmq.create_queue("big", maxsize=-1)
    rsmq.create_queue("bigdlq", maxsize=-1)
    rsmq.set_dead_letter_policy("big", "bigdlq", 1)
    body = "x" * 600_000  # two of them pass MOVE_BYTES (1 MiB): a call stops after one
    ids = rsmq.send_messages("big", [body] * 3)
    for mid in ids:
        rsmq.receive_message("big", vt=0)
        rsmq.record_failure("big", mid, ValueError("too big to handle"))
    assert rsmq.receive_messages("big", 10) == []  # all dead-lettered

    assert rsmq.retry_failure_group("big", "ValueError", "dead") == 3

    assert rsmq.get_queue_attributes("bigdlq").msgs == 0
    back = rsmq.list_messages("big", preview=10).items
    assert sorted(m.id for m in back) == sorted(ids) and all(m.rc == 0 for m in back)
