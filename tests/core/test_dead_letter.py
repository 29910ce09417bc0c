"""Dead-letter policy (x:dlq, x:maxrc) and redrive, on the real Redis and with Node rsmq.

A receive that would hand a message out for the (maxrc+1)-th time moves it, in the same
script, to the dead-letter queue; ``redrive`` moves dead-lettered messages back.
"""

from __future__ import annotations

import math

import pytest
import redis
from support.node_rsmq import NodeRsmq

from queues import (
    DeadLetterPolicy,
    InvalidArgument,
    QueueNotFound,
    RedisSMQ,
)
from queues.cli import EXIT_ERROR
from queues.limits import MOVE_CHUNK

QUEUE_FIELDS = {"vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv"}


def raw_hash(r: redis.Redis, ns: str, qname: str) -> dict[str, str]:
    return r.hgetall(f"{ns}:{qname}:Q")


def raw_zset(r: redis.Redis, ns: str, qname: str) -> list[str]:
    return r.zrange(f"{ns}:{qname}", 0, -1)


def now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def ids_in(rsmq: RedisSMQ, qname: str) -> list[str]:
    """Every message id of a queue, in queue order (browsed: nothing is received)."""
    out: list[str] = []
    while page := rsmq.list_messages(qname, offset=len(out), limit=1000).items:
        out += [m.id for m in page]
    return out


def receive_n_times(rsmq: RedisSMQ, qname: str, times: int) -> None:
    """Receive the queue's only message ``times`` times, visible again at once after each."""
    for _ in range(times):
        assert rsmq.receive_message(qname, vt=0) is not None


def dead_letter(rsmq: RedisSMQ, qname: str, bodies: list[str], maxrc: int = 1) -> list[str]:
    """Send ``bodies`` to ``qname`` and receive each until the policy moves it away."""
    ids = rsmq.send_messages(qname, bodies)
    for _ in range(maxrc):
        assert len(rsmq.receive_messages(qname, len(bodies), vt=0)) == len(bodies)
    assert rsmq.receive_messages(qname, len(bodies)) == []
    return ids


@pytest.fixture
def jobs(rsmq: RedisSMQ) -> str:
    """Queue "jobs" whose messages go to "dlq" on their third receive (maxrc 2)."""
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("jobs", "dlq", 2)
    return "jobs"


# -- the receive that dead-letters ---------------------------------------------------


def test_the_receive_after_maxrc_receives_moves_the_message_to_the_dlq_instead(
    rsmq: RedisSMQ, jobs: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(jobs, "poison")
    first = rsmq.receive_message(jobs, vt=0)
    receive_n_times(rsmq, jobs, 1)
    before = now_ms(r)

    assert rsmq.receive_message(jobs) is None

    after = now_ms(r)
    assert mid not in raw_zset(r, ns, jobs)
    assert set(raw_hash(r, ns, jobs)) == QUEUE_FIELDS | {"x:dlq", "x:maxrc", "x:deadlettered"}
    assert raw_hash(r, ns, jobs)["x:deadlettered"] == "1"
    assert raw_zset(r, ns, "dlq") == [mid]
    assert before <= r.zscore(f"{ns}:dlq", mid) <= after
    assert first is not None
    dlq_fields = {k: v for k, v in raw_hash(r, ns, "dlq").items() if k not in QUEUE_FIELDS}
    assert dlq_fields == {
        mid: "poison",
        f"{mid}:rc": "2",
        f"{mid}:fr": str(first.fr),
        f"x:src:{mid}": "jobs",
    }


def test_dead_lettering_is_not_a_receive_and_sends_nothing(rsmq: RedisSMQ, jobs: str):
    rsmq.send_message(jobs, "poison")
    receive_n_times(rsmq, jobs, 2)

    rsmq.receive_message(jobs)

    src, dlq = rsmq.get_queue_attributes(jobs), rsmq.get_queue_attributes("dlq")
    assert (src.totalsent, src.totalrecv, src.msgs) == (1, 2, 0)
    assert (dlq.totalsent, dlq.totalrecv, dlq.msgs) == (0, 0, 1)
    assert rsmq.get_dead_letter_policy(jobs) == DeadLetterPolicy("dlq", 2, deadlettered=1)


def test_the_dead_lettered_message_is_visible_in_the_dlq_with_its_rc_and_fr(
    rsmq: RedisSMQ, jobs: str
):
    mid = rsmq.send_message(jobs, "poison")
    first = rsmq.receive_message(jobs, vt=0)
    receive_n_times(rsmq, jobs, 1)
    rsmq.receive_message(jobs)

    (info,) = rsmq.list_messages("dlq").items

    assert first is not None
    assert (info.id, info.message, info.state, info.rc, info.fr) == (
        mid, "poison", "visible", 2, first.fr,
    )  # fmt: skip
    got = rsmq.receive_message("dlq")
    assert got is not None and (got.id, got.rc) == (mid, 3)


def test_the_receive_hands_out_the_next_message_instead(rsmq: RedisSMQ, jobs: str):
    poison = rsmq.send_message(jobs, "poison")
    receive_n_times(rsmq, jobs, 2)
    good = rsmq.send_message(jobs, "good")

    got = rsmq.receive_message(jobs)

    assert got is not None and (got.id, got.message, got.rc) == (good, "good", 1)
    assert ids_in(rsmq, "dlq") == [poison]


def test_a_batch_receive_dead_letters_the_poison_and_returns_the_rest(rsmq: RedisSMQ, jobs: str):
    ids = rsmq.send_messages(jobs, [f"m{i}" for i in range(3)])
    for _ in range(2):
        rsmq.receive_messages(jobs, 3, vt=0)  # m0..m2 reach rc 2
    ids += rsmq.send_messages(jobs, [f"m{i}" for i in range(3, 6)])

    got = rsmq.receive_messages(jobs, 10)

    assert [(m.message, m.rc) for m in got] == [("m3", 1), ("m4", 1), ("m5", 1)]
    assert ids_in(rsmq, "dlq") == ids[:3]
    assert rsmq.get_dead_letter_policy(jobs).deadlettered == 3


def test_one_receive_dead_letters_at_most_1000_messages(rsmq: RedisSMQ, jobs: str):
    poison = rsmq.send_messages(jobs, ["p"] * 1500)
    rsmq.receive_messages(jobs, 1000, vt=0)
    rsmq.receive_messages(jobs, 500, vt=0)  # every one received once
    rsmq.set_dead_letter_policy(jobs, "dlq", 1)
    good = rsmq.send_message(jobs, "good")

    assert rsmq.receive_messages(jobs, 5) == []
    assert ids_in(rsmq, "dlq") == poison[:1000]
    got = rsmq.receive_messages(jobs, 5)

    assert [m.id for m in got] == [good]
    assert ids_in(rsmq, "dlq") == poison


def test_messages_under_maxrc_are_delivered_as_usual(rsmq: RedisSMQ, jobs: str):
    mid = rsmq.send_message(jobs, "m")

    rcs = [rsmq.receive_message(jobs, vt=0).rc for _ in range(2)]

    assert rcs == [1, 2]
    assert ids_in(rsmq, jobs) == [mid]
    assert rsmq.get_queue_attributes("dlq").msgs == 0


def test_a_dlq_deleted_after_the_policy_was_set_never_drops_a_message(rsmq: RedisSMQ, jobs: str):
    mid = rsmq.send_message(jobs, "poison")
    receive_n_times(rsmq, jobs, 2)
    rsmq.delete_queue("dlq")

    rcs = [rsmq.receive_message(jobs, vt=0) for _ in range(3)]

    assert [(m.id, m.rc) for m in rcs] == [(mid, 3), (mid, 4), (mid, 5)]
    assert rsmq.get_dead_letter_policy(jobs) == DeadLetterPolicy("dlq", 2, deadlettered=0)


def test_pop_after_maxrc_receives_moves_the_message_to_the_dlq_instead(rsmq: RedisSMQ, jobs: str):
    mid = rsmq.send_message(jobs, "poison")
    receive_n_times(rsmq, jobs, 2)

    assert rsmq.pop_message(jobs) is None
    assert ids_in(rsmq, "dlq") == [mid]


def test_a_batch_receive_with_vt_0_hands_each_message_out_once(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "only")

    got = rsmq.receive_messages(queue, 5, vt=0)

    assert [(m.id, m.rc) for m in got] == [(mid, 1)]
    assert rsmq.get_queue_attributes(queue).totalrecv == 1


def test_a_message_handed_out_is_not_dead_lettered_by_the_same_receive(rsmq: RedisSMQ, jobs: str):
    rsmq.set_dead_letter_policy(jobs, "dlq", 1)
    poison = rsmq.send_message(jobs, "poison")
    receive_n_times(rsmq, jobs, 1)
    good = rsmq.send_message(jobs, "good")

    got = rsmq.receive_messages(jobs, 2, vt=0)

    assert [(m.id, m.rc) for m in got] == [(good, 1)]
    assert ids_in(rsmq, "dlq") == [poison]
    assert ids_in(rsmq, jobs) == [good]


# -- setting, reading and clearing the policy -------------------------------------------


def test_set_policy_writes_two_extension_fields_and_clear_removes_them(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    before = raw_hash(r, ns, "jobs")

    rsmq.set_dead_letter_policy("jobs", "dlq", 3)

    assert raw_hash(r, ns, "jobs") == {**before, "x:dlq": "dlq", "x:maxrc": "3"}
    assert rsmq.get_dead_letter_policy("jobs") == DeadLetterPolicy("dlq", 3, 0)
    rsmq.clear_dead_letter_policy("jobs")
    assert raw_hash(r, ns, "jobs") == before
    assert rsmq.get_dead_letter_policy("jobs") is None


def test_set_policy_again_replaces_it(rsmq: RedisSMQ, jobs: str):
    rsmq.create_queue("other")

    rsmq.set_dead_letter_policy(jobs, "other", 7)

    assert rsmq.get_dead_letter_policy(jobs) == DeadLetterPolicy("other", 7, 0)


def test_a_cleared_policy_delivers_messages_past_the_old_maxrc(rsmq: RedisSMQ, jobs: str):
    rsmq.send_message(jobs, "m")
    receive_n_times(rsmq, jobs, 2)

    rsmq.clear_dead_letter_policy(jobs)

    got = rsmq.receive_message(jobs)
    assert got is not None and got.rc == 3


def test_queue_stats_show_the_policy(rsmq: RedisSMQ, jobs: str):
    rsmq.send_message(jobs, "poison")
    receive_n_times(rsmq, jobs, 2)
    rsmq.receive_message(jobs)

    stats = {s.qname: s for s in rsmq.queue_stats()}

    assert (stats[jobs].dlq, stats[jobs].maxrc, stats[jobs].deadlettered) == ("dlq", 2, 1)
    assert (stats["dlq"].dlq, stats["dlq"].maxrc, stats["dlq"].msgs) == (None, None, 1)


def test_get_policy_of_a_queue_without_one_is_none(rsmq: RedisSMQ, queue: str):
    assert rsmq.get_dead_letter_policy(queue) is None


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("jobs", "jobs", 3), "dlq"),
        (("jobs", "bad name", 3), "dlq"),
        (("jobs", "", 3), "dlq"),
        (("bad name", "dlq", 3), "qname"),
        (("jobs", "dlq", 0), "maxrc"),
        (("jobs", "dlq", 1001), "maxrc"),
        (("jobs", "dlq", True), "maxrc"),
        (("jobs", "dlq", "3"), "maxrc"),
    ],
)
def test_set_policy_rejects_invalid_arguments_writing_nothing(
    rsmq: RedisSMQ, ns_state, args: tuple, field: str
):
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    before = ns_state()

    with pytest.raises(InvalidArgument) as caught:
        rsmq.set_dead_letter_policy(*args)

    assert caught.value.field == field
    assert ns_state() == before


def test_set_policy_accepts_maxrc_from_1_to_1000(rsmq: RedisSMQ, jobs: str):
    for maxrc in (1, 1000):
        rsmq.set_dead_letter_policy(jobs, "dlq", maxrc)
        assert rsmq.get_dead_letter_policy(jobs).maxrc == maxrc


def test_set_policy_with_a_missing_dlq_names_the_dlq(rsmq: RedisSMQ, queue: str, ns_state):
    before = ns_state()

    with pytest.raises(QueueNotFound) as caught:
        rsmq.set_dead_letter_policy(queue, "nope", 3)

    assert caught.value.qname == "nope"
    assert ns_state() == before


@pytest.mark.parametrize(
    "call",
    [
        lambda rsmq: rsmq.set_dead_letter_policy("nope", "dlq", 3),
        lambda rsmq: rsmq.clear_dead_letter_policy("nope"),
        lambda rsmq: rsmq.get_dead_letter_policy("nope"),
    ],
)
def test_policy_calls_on_a_missing_queue_name_it(rsmq: RedisSMQ, call):
    rsmq.create_queue("dlq")

    with pytest.raises(QueueNotFound) as caught:
        call(rsmq)

    assert caught.value.qname == "nope"


# -- original clients on queues with a policy -----------------------------------------------


def test_node_receives_and_deletes_on_a_queue_with_a_policy_ignoring_it(
    node: NodeRsmq, rsmq: RedisSMQ, jobs: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(jobs, "m")

    results = node.run(
        *[("receiveMessage", {"qname": jobs, "vt": 0}) for _ in range(4)],
        ("deleteMessage", {"qname": jobs, "id": mid}),
        ("getQueueAttributes", {"qname": jobs}),
    )

    assert [m["rc"] for m in results[:4]] == [1, 2, 3, 4]
    assert results[4] == 1
    attrs = results[5]
    assert (attrs["totalsent"], attrs["totalrecv"], attrs["msgs"]) == (1, 4, 0)
    assert set(raw_hash(r, ns, jobs)) == QUEUE_FIELDS | {"x:dlq", "x:maxrc"}
    assert rsmq.get_dead_letter_policy(jobs) == DeadLetterPolicy("dlq", 2, 0)


def test_a_message_node_received_past_maxrc_is_dead_lettered_by_the_next_queues_receive(
    node: NodeRsmq, rsmq: RedisSMQ, jobs: str
):
    mid = rsmq.send_message(jobs, "m")
    node.run(*[("receiveMessage", {"qname": jobs, "vt": 0}) for _ in range(3)])

    assert rsmq.receive_message(jobs) is None
    (info,) = rsmq.list_messages("dlq").items
    assert (info.id, info.rc) == (mid, 3)


def test_node_reads_the_attributes_of_a_queue_with_a_policy_and_of_its_dlq(
    node: NodeRsmq, rsmq: RedisSMQ, jobs: str
):
    rsmq.send_message(jobs, "a")
    receive_n_times(rsmq, jobs, 2)
    rsmq.send_message(jobs, "b")
    rsmq.receive_message(jobs, vt=60)  # dead-letters a, hands out b

    src, dlq = node.run(
        ("getQueueAttributes", {"qname": jobs}), ("getQueueAttributes", {"qname": "dlq"})
    )

    assert (src["totalsent"], src["totalrecv"], src["msgs"], src["hiddenmsgs"]) == (2, 3, 1, 1)
    assert (dlq["totalsent"], dlq["totalrecv"], dlq["msgs"]) == (0, 0, 1)


def test_node_delete_queue_of_a_dlq_and_of_its_source_removes_everything(
    node: NodeRsmq, rsmq: RedisSMQ, jobs: str, r: redis.Redis, ns: str
):
    rsmq.send_messages(jobs, ["a", "b", "c"])
    for _ in range(3):
        rsmq.receive_messages(jobs, 3, vt=0)
    assert rsmq.get_queue_attributes("dlq").msgs == 3

    assert node.run(("deleteQueue", {"qname": "dlq"}), ("deleteQueue", {"qname": jobs})) == [1, 1]

    assert r.keys(f"{ns}:*") == []


def test_node_receives_and_deletes_a_dead_lettered_message_from_the_dlq(
    node: NodeRsmq, rsmq: RedisSMQ, jobs: str
):
    mid = rsmq.send_message(jobs, "poison")
    receive_n_times(rsmq, jobs, 2)
    rsmq.receive_message(jobs)

    got, deleted = node.run(
        ("receiveMessage", {"qname": "dlq"}),
        ("deleteMessage", {"qname": "dlq", "id": {"$ref": [0, "id"]}}),
    )

    assert (got["id"], got["message"], got["rc"]) == (mid, "poison", 3)
    assert deleted == 1
    assert rsmq.get_queue_attributes("dlq").msgs == 0


# -- redrive ---------------------------------------------------------------------------


@pytest.fixture
def two_sources(rsmq: RedisSMQ) -> dict[str, list[str]]:
    """Queues a and b, both dead-lettering to "dlq" after one receive; a's 2 messages and
    b's 2 messages dead-lettered in the order a0 b0 a1 b1."""
    rsmq.create_queue("dlq")
    for q in ("a", "b"):
        rsmq.create_queue(q)
        rsmq.set_dead_letter_policy(q, "dlq", 1)
    ids: dict[str, list[str]] = {"a": [], "b": []}
    for i in range(2):
        for q in ("a", "b"):
            ids[q] += dead_letter(rsmq, q, [f"{q}{i}"])
    return ids


def test_redrive_moves_each_message_back_to_its_own_source(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]], r: redis.Redis, ns: str
):
    assert rsmq.redrive("dlq") == 4

    for q, ids in two_sources.items():
        assert ids_in(rsmq, q) == ids
        assert [i.state for i in rsmq.list_messages(q).items] == ["visible", "visible"]
    assert set(raw_hash(r, ns, "dlq")) <= QUEUE_FIELDS
    assert raw_zset(r, ns, "dlq") == []


def test_redriven_messages_start_over_and_can_be_dead_lettered_again(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]]
):
    rsmq.redrive("dlq")

    got = rsmq.receive_messages("a", 10, vt=0)

    assert [(m.id, m.rc) for m in got] == [(i, 1) for i in two_sources["a"]]
    # fr is whole ms (the receive's TIME), sent has the id's microseconds: a receive in
    # the send's own millisecond has fr == floor(sent)
    assert got[0].sent is not None and got[0].fr >= math.floor(got[0].sent)
    assert rsmq.receive_messages("a", 10) == []
    assert ids_in(rsmq, "dlq") == two_sources["a"]
    assert rsmq.get_dead_letter_policy("a").deadlettered == 4


def test_redrive_to_another_queue_moves_everything_there(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]], r: redis.Redis, ns: str
):
    rsmq.create_queue("c")

    assert rsmq.redrive("dlq", to="c") == 4

    a, b = two_sources["a"], two_sources["b"]
    assert sorted(ids_in(rsmq, "c")) == sorted(a + b)
    assert ids_in(rsmq, "a") == ids_in(rsmq, "b") == ids_in(rsmq, "dlq") == []
    assert set(raw_hash(r, ns, "c")) - QUEUE_FIELDS == set(a + b)


def test_redrive_with_a_limit_moves_the_oldest_dead_letters_first(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]]
):
    a, b = two_sources["a"], two_sources["b"]

    assert rsmq.redrive("dlq", limit=3) == 3

    assert ids_in(rsmq, "a") == a
    assert ids_in(rsmq, "b") == b[:1]
    assert ids_in(rsmq, "dlq") == b[1:]


def test_redrive_of_2500_messages_goes_in_bounded_batches(rsmq: RedisSMQ, r: redis.Redis):
    for q in ("jobs", "dlq"):
        rsmq.create_queue(q)
    rsmq.set_dead_letter_policy("jobs", "dlq", 1)
    ids = rsmq.send_messages("jobs", ["m"] * 2500)
    for _ in range(3):
        rsmq.receive_messages("jobs", 1000, vt=0)
    for _ in range(3):
        rsmq.receive_messages("jobs", 1000)
    assert rsmq.get_queue_attributes("dlq").msgs == 2500
    before = r.info("commandstats")["cmdstat_evalsha"]["calls"]

    assert rsmq.redrive("dlq") == 2500

    # MOVE_CHUNK (250) a call: 10 full calls, and one that finds the end
    assert r.info("commandstats")["cmdstat_evalsha"]["calls"] - before == 2500 // MOVE_CHUNK + 1
    assert ids_in(rsmq, "jobs") == ids
    assert rsmq.get_queue_attributes("dlq").msgs == 0


def test_a_message_whose_source_was_deleted_stays_in_the_dlq(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]], r: redis.Redis, ns: str
):
    rsmq.delete_queue("b")

    assert rsmq.redrive("dlq") == 2
    assert rsmq.redrive("dlq") == 0

    assert ids_in(rsmq, "a") == two_sources["a"]
    assert ids_in(rsmq, "dlq") == two_sources["b"]
    assert {raw_hash(r, ns, "dlq")[f"x:src:{i}"] for i in two_sources["b"]} == {"b"}


def test_a_source_created_again_gets_its_messages_back(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]]
):
    rsmq.delete_queue("b")
    rsmq.create_queue("b")

    assert rsmq.redrive("dlq") == 4

    assert ids_in(rsmq, "b") == two_sources["b"]


def test_a_body_over_the_sources_maxsize_stays_in_the_dlq(rsmq: RedisSMQ):
    for q in ("jobs", "dlq"):
        rsmq.create_queue(q)
    rsmq.set_dead_letter_policy("jobs", "dlq", 1)
    big, small = dead_letter(rsmq, "jobs", ["x" * 2000, "y"])
    rsmq.set_queue_attributes("jobs", maxsize=1024)

    assert rsmq.redrive("dlq") == 1

    assert ids_in(rsmq, "jobs") == [small]
    assert ids_in(rsmq, "dlq") == [big]


@pytest.mark.parametrize(
    ("kwargs", "error", "attribute"),
    [
        ({"dlq": "nope"}, QueueNotFound, ("qname", "nope")),
        ({"dlq": "dlq", "to": "nope"}, QueueNotFound, ("qname", "nope")),
        ({"dlq": "dlq", "to": "bad name"}, InvalidArgument, ("field", "to")),
        ({"dlq": "dlq", "limit": 0}, InvalidArgument, ("field", "limit")),
        ({"dlq": "bad name"}, InvalidArgument, ("field", "qname")),
    ],
)
def test_redrive_rejects_missing_queues_and_invalid_arguments(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]], kwargs, error, attribute
):
    with pytest.raises(error) as caught:
        rsmq.redrive(**kwargs)

    assert getattr(caught.value, attribute[0]) == attribute[1]
    assert rsmq.get_queue_attributes("dlq").msgs == 4


def test_redrive_leaves_in_flight_and_delayed_messages_where_they_are(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]]
):
    """A consumer holding a message (or one not due yet) would get it twice if it moved."""
    held = rsmq.receive_message("dlq", vt=60)
    delayed = rsmq.send_message("dlq", "later", delay=60)
    assert held is not None

    assert rsmq.redrive("dlq", to="a") == 3

    assert sorted(ids_in(rsmq, "dlq")) == sorted([held.id, delayed])
    assert rsmq.get_message("dlq", held.id).rc == held.rc  # its history kept


def test_redrive_skips_hidden_messages_across_chunks(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
):
    import queues.ops.dead_letters

    monkeypatch.setattr(queues.ops.dead_letters, "MOVE_CHUNK", 1)
    rsmq.delete_queue("b")  # b's messages stay: skipped, and counted as such
    rsmq.receive_message("dlq", vt=60)  # a0, the oldest, now in flight

    assert rsmq.redrive("dlq") == 1
    assert ids_in(rsmq, "a") == [two_sources["a"][1]]


def test_dead_letter_sources_are_the_queues_whose_policy_names_the_queue(
    rsmq: RedisSMQ, two_sources: dict[str, list[str]], r: redis.Redis, ns: str
):
    rsmq.create_queue("c")
    rsmq.set_dead_letter_policy("c", "a", 3)
    r.sadd(f"{ns}:QUEUES", "not an rsmq name")

    assert rsmq.dead_letter_sources("dlq") == ["a", "b"]
    assert rsmq.dead_letter_sources("a") == ["c"]
    assert rsmq.dead_letter_sources("c") == []
    assert rsmq.queue_names_and_sources("a") == (["a", "b", "c", "dlq"], ["c"])
    rsmq.create_queue("d")  # created since the last read: found all the same
    rsmq.set_dead_letter_policy("d", "a", 1)
    assert rsmq.dead_letter_sources("a") == ["c", "d"]
    rsmq.clear_dead_letter_policy("b")
    assert rsmq.dead_letter_sources("dlq") == ["a"]


def test_redrive_to_the_dlq_itself_is_rejected(rsmq: RedisSMQ, two_sources):
    with pytest.raises(InvalidArgument) as caught:
        rsmq.redrive("dlq", to="dlq")

    assert caught.value.field == "to"


# -- the CLI ---------------------------------------------------------------------------


def test_cli_queue_policy_sets_shows_and_clears_the_policy(cli, rsmq: RedisSMQ):
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")

    assert cli("queue", "policy", "-n", "jobs") == (0, {"name": "jobs", "policy": None}, "")
    policy = {"dlq": "dlq", "maxrc": 3, "deadlettered": 0}
    assert cli("queue", "policy", "-n", "jobs", "--dlq", "dlq", "--maxrc", "3")[:2] == (
        0, {"name": "jobs", "policy": policy},
    )  # fmt: skip
    assert cli("queue", "policy", "-n", "jobs")[1] == {"name": "jobs", "policy": policy}
    assert rsmq.get_dead_letter_policy("jobs") == DeadLetterPolicy("dlq", 3, 0)
    assert cli("queue", "policy", "-n", "jobs", "--clear")[1] == {"name": "jobs", "policy": None}
    assert rsmq.get_dead_letter_policy("jobs") is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dlq", "dlq"], "give both --dlq and --maxrc"),
        (["--maxrc", "3"], "give both --dlq and --maxrc"),
        (["--dlq", "nope", "--maxrc", "3"], "queueNotFound: Queue not found: nope"),
        (["--dlq", "dlq", "--maxrc", "0"], "maxrc must be an integer between 1 and 1000"),
        (["--dlq", "jobs", "--maxrc", "3"], "dlq must be a different queue"),
    ],
)
def test_cli_queue_policy_errors_are_one_line_with_exit_code_1(
    cli, rsmq: RedisSMQ, argv: list[str], message: str
):
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")

    code, out, err = cli("queue", "policy", "-n", "jobs", *argv)

    assert (code, out) == (EXIT_ERROR, None)
    assert message in err and err.count("\n") == 1
    assert rsmq.get_dead_letter_policy("jobs") is None


def test_cli_message_redrive_with_limit_and_to(
    cli, rsmq: RedisSMQ, two_sources: dict[str, list[str]]
):
    rsmq.create_queue("c")

    assert cli("message", "redrive", "-n", "dlq", "--limit", "1")[:2] == (0, {"redriven": 1})
    assert cli("message", "redrive", "-n", "dlq", "--to", "c")[:2] == (0, {"redriven": 3})
    assert cli("message", "redrive", "-n", "dlq")[:2] == (0, {"redriven": 0})
    assert ids_in(rsmq, "a") == two_sources["a"][:1]
    assert len(ids_in(rsmq, "c")) == 3


def test_cli_message_redrive_of_a_missing_queue_fails(cli):
    code, out, err = cli("message", "redrive", "-n", "nope")

    assert (code, out) == (EXIT_ERROR, None)
    assert "queueNotFound: Queue not found: nope" in err
