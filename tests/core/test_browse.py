"""Browsing: list_messages, get_message and requeue; reading never changes a message."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import redis

from queues import MessageInfo, Page, QueueNotFound, RedisSMQ

ABSENT_ID = "a" * 32


def now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


@dataclass
class Mixed:
    """A queue q1 of 3 visible, 2 in flight and 2 delayed messages, ids in queue order."""

    visible: list[str]
    inflight: list[str]
    delayed: list[str]

    @property
    def hidden(self) -> list[str]:
        return self.inflight + self.delayed

    @property
    def all(self) -> list[str]:
        return self.visible + self.hidden


@pytest.fixture
def mixed(rsmq: RedisSMQ, queue: str) -> Mixed:
    ids = rsmq.send_messages(queue, [f"m{i}" for i in range(5)])
    rsmq.receive_messages(queue, 2, vt=100)
    delayed = rsmq.send_messages(queue, ["d0", "d1"], delay=200)
    return Mixed(visible=ids[2:], inflight=ids[:2], delayed=delayed)


def ids_of(page: Page) -> list[str]:
    return [m.id for m in page.items]


# -- list_messages: states -----------------------------------------------------------


@pytest.mark.parametrize("state", ["all", "visible", "hidden", "inflight", "delayed"])
def test_list_messages_returns_the_messages_of_a_state_in_queue_order(
    rsmq: RedisSMQ, queue: str, mixed: Mixed, state: str
):
    page = rsmq.list_messages(queue, state=state)

    expected = getattr(mixed, state)
    assert ids_of(page) == expected
    assert (page.total, page.exact, page.has_next) == (len(expected), True, False)
    assert (page.offset, page.limit) == (0, 50)


def test_list_messages_defaults_to_all(rsmq: RedisSMQ, queue: str, mixed: Mixed):
    assert ids_of(rsmq.list_messages(queue)) == mixed.all


def test_list_messages_labels_each_message_with_its_state(rsmq: RedisSMQ, queue: str, mixed: Mixed):
    states = {m.id: m.state for m in rsmq.list_messages(queue).items}

    assert states == {
        **dict.fromkeys(mixed.visible, "visible"),
        **dict.fromkeys(mixed.inflight, "inflight"),
        **dict.fromkeys(mixed.delayed, "delayed"),
    }


def test_list_messages_reports_body_size_rc_fr_sent_and_visible_at(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    mid = rsmq.send_message(queue, "héllo")
    got = rsmq.receive_message(queue, vt=100)

    (info,) = rsmq.list_messages(queue).items

    assert isinstance(info, MessageInfo)
    assert (info.id, info.message, info.size, info.rc, info.fr) == (mid, "héllo", 6, 1, got.fr)
    assert info.sent == int(mid[:10], 36) / 1000
    assert info.visible_at == r.zscore(f"{ns}:{queue}", mid) == got.fr + 100_000
    assert info.truncated is False


def test_list_messages_reports_rc_0_and_no_fr_for_a_message_never_received(
    rsmq: RedisSMQ, queue: str
):
    rsmq.send_message(queue, "hello")

    (info,) = rsmq.list_messages(queue).items

    assert (info.rc, info.fr, info.state) == (0, None, "visible")


def test_list_messages_page_now_is_the_server_time(rsmq: RedisSMQ, queue: str, r: redis.Redis):
    before = now_ms(r)

    page = rsmq.list_messages(queue)

    assert before <= page.now <= now_ms(r)


def test_list_messages_of_an_empty_queue_is_an_empty_exact_page(rsmq: RedisSMQ, queue: str):
    page = rsmq.list_messages(queue)

    assert (page.items, page.total, page.exact, page.has_next) == ([], 0, True, False)


def test_list_messages_of_a_missing_queue_raises_queue_not_found(rsmq: RedisSMQ):
    with pytest.raises(QueueNotFound):
        rsmq.list_messages("nope")


# -- list_messages: paging -----------------------------------------------------------


def test_list_messages_pages_with_offset_and_limit(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, [f"m{i}" for i in range(7)])

    pages = [rsmq.list_messages(queue, offset=o, limit=3) for o in (0, 3, 6)]

    assert [ids_of(p) for p in pages] == [ids[0:3], ids[3:6], ids[6:7]]
    assert [p.has_next for p in pages] == [True, True, False]
    assert [p.total for p in pages] == [7, 7, 7]
    assert [(p.offset, p.limit) for p in pages] == [(0, 3), (3, 3), (6, 3)]


def test_list_messages_past_the_end_is_empty_without_next(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["a", "b"])

    page = rsmq.list_messages(queue, offset=5, limit=3)

    assert (page.items, page.total, page.has_next) == ([], 2, False)


def test_list_messages_last_full_page_has_no_next(rsmq: RedisSMQ, queue: str):
    rsmq.send_messages(queue, ["a", "b", "c", "d"])

    assert rsmq.list_messages(queue, offset=2, limit=2).has_next is False


@pytest.mark.parametrize("state", ["visible", "hidden", "inflight", "delayed"])
def test_list_messages_pages_within_a_state(rsmq: RedisSMQ, queue: str, mixed: Mixed, state: str):
    expected = getattr(mixed, state)

    first = rsmq.list_messages(queue, state=state, offset=0, limit=1)
    rest = rsmq.list_messages(queue, state=state, offset=1, limit=50)

    assert ids_of(first) + ids_of(rest) == expected
    assert (first.has_next, rest.has_next) == (True, False)
    assert first.total == rest.total == len(expected)


def test_list_messages_visible_page_stops_before_hidden_messages(
    rsmq: RedisSMQ, queue: str, mixed: Mixed
):
    page = rsmq.list_messages(queue, state="visible", offset=2, limit=10)

    assert ids_of(page) == mixed.visible[2:]


def test_list_messages_hidden_offset_counts_from_the_first_hidden_message(
    rsmq: RedisSMQ, queue: str, mixed: Mixed
):
    page = rsmq.list_messages(queue, state="hidden", offset=1, limit=2)

    assert ids_of(page) == mixed.hidden[1:3]


def test_list_messages_estimates_inflight_past_the_scan_budget(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, ["m"] * 40)
    rsmq.receive_messages(queue, 40, vt=100)

    page = rsmq.list_messages(queue, state="inflight", limit=5, scan_budget=10)

    assert page.exact is False
    assert ids_of(page) == ids[:5]
    assert page.total == 40


def test_list_messages_pages_and_counts_inflight_and_delayed_across_browse_steps(
    rsmq: RedisSMQ, queue: str
):
    # 300 delayed (visible in 100 s) before 700 in flight (in 1 h) in the hidden range:
    # the pages and counts span several browse steps of 500.
    for _ in range(7):
        rsmq.send_messages(queue, ["i"] * 100)
    for _ in range(7):
        rsmq.receive_messages(queue, 100, vt=3600)
    for _ in range(3):
        rsmq.send_messages(queue, ["d"] * 100, delay=100)
    inflight, after = [], None
    while not (b := rsmq.browse(queue, state="inflight", after=after, limit=1000)).at_end:
        inflight += [m.id for m in b.items]
        after = b.resume
    inflight += [m.id for m in b.items]
    assert len(inflight) == 700

    page = rsmq.list_messages(queue, state="inflight", offset=450, limit=100)
    delayed = rsmq.list_messages(queue, state="delayed", offset=250, limit=100)
    estimate = rsmq.list_messages(queue, state="inflight", limit=10, scan_budget=600)

    assert (ids_of(page), page.total, page.exact) == (inflight[450:550], 700, True)
    assert (len(delayed.items), delayed.total, delayed.exact) == (50, 300, True)
    assert {m.message for m in delayed.items} == {"d"}
    # 600 looked at (300 delayed, 300 in flight) of 1000 hidden: 300 * 1000 / 600
    assert (ids_of(estimate), estimate.total, estimate.exact) == (inflight[:10], 500, False)


def test_list_messages_is_exact_when_the_hidden_messages_fit_the_scan_budget(
    rsmq: RedisSMQ, queue: str, mixed: Mixed
):
    page = rsmq.list_messages(queue, state="delayed", scan_budget=4)

    assert (page.exact, page.total) == (True, 2)


# -- list_messages: preview ----------------------------------------------------------


def test_list_messages_preview_cuts_the_body_and_keeps_the_full_size(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "abcdefgh")

    (info,) = rsmq.list_messages(queue, preview=3).items

    assert (info.message, info.size, info.truncated) == ("abc", 8, True)


def test_list_messages_preview_longer_than_the_body_keeps_it_whole(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "abc")

    (info,) = rsmq.list_messages(queue, preview=3).items

    assert (info.message, info.size, info.truncated) == ("abc", 3, False)


def test_list_messages_without_preview_returns_the_whole_body(rsmq: RedisSMQ, queue: str):
    body = "x" * 5000
    rsmq.send_message(queue, body)

    (info,) = rsmq.list_messages(queue).items

    assert (info.message, info.size, info.truncated) == (body, 5000, False)


@pytest.mark.parametrize(
    ("body", "preview", "shown"),
    [
        ("aéb", 2, "a"),  # é is 2 bytes: cut after its first
        ("aéb", 3, "aé"),
        ("a☃b", 2, "a"),  # ☃ is 3 bytes
        ("a☃b", 3, "a"),
        ("a☃b", 4, "a☃"),
        ("a🎉b", 2, "a"),  # 🎉 is 4 bytes
        ("a🎉b", 4, "a"),
        ("a🎉b", 5, "a🎉"),
        ("éé", 1, ""),
    ],
)
def test_list_messages_preview_drops_a_multibyte_character_cut_in_the_middle(
    rsmq: RedisSMQ, queue: str, body: str, preview: int, shown: str
):
    rsmq.send_message(queue, body)

    (info,) = rsmq.list_messages(queue, preview=preview).items

    assert info.message == shown
    assert "\ufffd" not in info.message
    assert info.size == len(body.encode())
    assert info.truncated is True


def test_list_messages_preview_cut_works_with_a_decode_responses_client(redis_url: str, ns: str):
    with RedisSMQ(client=redis.Redis.from_url(redis_url, decode_responses=True), ns=ns) as c:
        c.create_queue("q1")
        c.send_message("q1", "aéb")

        (info,) = c.list_messages("q1", preview=2).items

    assert (info.message, info.size) == ("a", 4)


# -- get_message ---------------------------------------------------------------------


def test_get_message_returns_the_full_body_and_metadata(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    body = "héllo " * 1000
    mid = rsmq.send_message(queue, body)
    got = rsmq.receive_message(queue, vt=100)

    info = rsmq.get_message(queue, mid)

    assert (info.id, info.message, info.size) == (mid, body, len(body.encode()))
    assert (info.rc, info.fr, info.state) == (1, got.fr, "inflight")
    assert info.sent == int(mid[:10], 36) / 1000
    assert info.visible_at == r.zscore(f"{ns}:{queue}", mid)


@pytest.mark.parametrize("state", ["visible", "delayed"])
def test_get_message_reports_rc_0_and_no_fr_for_a_message_never_received(
    rsmq: RedisSMQ, queue: str, mixed: Mixed, state: str
):
    info = rsmq.get_message(queue, getattr(mixed, state)[0])

    assert (info.state, info.rc, info.fr) == (state, 0, None)


def test_get_message_of_a_requeued_message_is_visible_with_its_rc(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")
    rsmq.receive_message(queue)
    rsmq.requeue(queue, [mid])

    info = rsmq.get_message(queue, mid)

    assert (info.state, info.rc) == ("visible", 1)


def test_get_message_of_an_absent_id_returns_none(rsmq: RedisSMQ, queue: str):
    rsmq.send_message(queue, "hello")

    assert rsmq.get_message(queue, ABSENT_ID) is None


def test_get_message_of_a_missing_queue_raises_queue_not_found(rsmq: RedisSMQ):
    with pytest.raises(QueueNotFound):
        rsmq.get_message("nope", ABSENT_ID)


def test_get_message_size_is_in_bytes_with_a_decode_responses_client(redis_url: str, ns: str):
    with RedisSMQ(client=redis.Redis.from_url(redis_url, decode_responses=True), ns=ns) as c:
        c.create_queue("q1")
        mid = c.send_message("q1", "é" * 10)

        assert c.get_message("q1", mid).size == 20


# -- browsing never changes a message ------------------------------------------------


@pytest.mark.parametrize(
    "browse",
    [
        lambda c, q, m: [c.list_messages(q, state=s) for s in ("all", "visible", "hidden")],
        lambda c, q, m: [c.list_messages(q, state=s) for s in ("inflight", "delayed")],
        lambda c, q, m: c.list_messages(q, preview=1, offset=1, limit=2),
        lambda c, q, m: [c.get_message(q, i) for i in m.all],
        lambda c, q, m: c.queue_stats([q]),
        lambda c, q, m: c.queue_stats(),
        lambda c, q, m: c.queue_stats([q], sample=1),
        lambda c, q, m: c.get_queue_attributes(q),
    ],
    ids=["list", "list-split", "list-page", "get", "stats", "stats-all", "stats-sampled", "attrs"],
)
def test_browsing_never_changes_rc_fr_totalrecv_or_scores(
    rsmq: RedisSMQ, queue: str, mixed: Mixed, ns_state, browse
):
    before = ns_state()

    browse(rsmq, queue, mixed)

    assert ns_state() == before


# -- requeue -------------------------------------------------------------------------


def test_requeue_makes_in_flight_messages_visible_now(
    rsmq: RedisSMQ, queue: str, mixed: Mixed, r: redis.Redis, ns: str
):
    before = now_ms(r)

    assert rsmq.requeue(queue, mixed.inflight) == 2

    after = now_ms(r)
    for mid in mixed.inflight:
        assert before <= r.zscore(f"{ns}:{queue}", mid) <= after


def test_requeue_makes_delayed_messages_visible_now(rsmq: RedisSMQ, queue: str, mixed: Mixed):
    rsmq.requeue(queue, mixed.delayed)

    assert set(mixed.delayed) <= {m.id for m in rsmq.receive_messages(queue, 10)}


def test_requeue_keeps_rc_fr_and_totals(
    rsmq: RedisSMQ, queue: str, mixed: Mixed, r: redis.Redis, ns: str
):
    before = r.hgetall(f"{ns}:{queue}:Q")

    rsmq.requeue(queue, mixed.all)

    assert r.hgetall(f"{ns}:{queue}:Q") == before


def test_a_requeued_message_is_received_with_rc_2_and_its_first_fr(rsmq: RedisSMQ, queue: str):
    mid = rsmq.send_message(queue, "hello")
    first = rsmq.receive_message(queue)
    rsmq.requeue(queue, [mid])

    again = rsmq.receive_message(queue)

    assert (again.id, again.rc, again.fr) == (mid, 2, first.fr)


def test_requeue_counts_only_ids_in_the_queue(rsmq: RedisSMQ, queue: str, mixed: Mixed):
    assert rsmq.requeue(queue, [mixed.inflight[0], ABSENT_ID]) == 1


def test_requeue_of_absent_ids_writes_nothing(rsmq: RedisSMQ, queue: str, mixed: Mixed, ns_state):
    before = ns_state()

    assert rsmq.requeue(queue, [ABSENT_ID]) == 0
    assert ns_state() == before


def test_requeue_of_more_than_a_thousand_ids(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, ["m"] * 1500)
    rsmq.receive_messages(queue, 1000)
    rsmq.receive_messages(queue, 500)

    assert rsmq.requeue(queue, ids) == 1500
    assert rsmq.get_queue_attributes(queue).hiddenmsgs == 0


def test_requeue_on_a_missing_queue_raises_queue_not_found(rsmq: RedisSMQ):
    with pytest.raises(QueueNotFound):
        rsmq.requeue("nope", [ABSENT_ID])
