"""Keyset browsing (RedisSMQ.browse): every state pages through all its messages, in
queue order, from either end or any time, however the hidden ones are interleaved."""

from __future__ import annotations

import pytest
import redis

from queues import RedisSMQ
from queues.errors import InvalidArgument
from queues.models import Browse, Cursor


@pytest.fixture
def interleaved(rsmq: RedisSMQ, queue: str) -> dict[str, list[str]]:
    """30 visible, then hidden ones alternating in flight / delayed by visible-at time
    (10 of each), and one in-flight message received 9 times at the very back."""
    poison = rsmq.send_messages(queue, ["poison at the back"])[0]
    for _ in range(9):
        m = rsmq.receive_message(queue, vt=0)
        assert m is not None and m.id == poison
    rsmq.change_message_visibility(queue, poison, 5000)
    visible = rsmq.send_messages(queue, [f"v{i}" for i in range(30)])
    inflight: list[str] = []
    delayed: list[str] = []
    for i in range(10):
        m = rsmq.receive_message(queue, vt=1000 + 20 * i)
        assert m is not None
        inflight.append(m.id)
        delayed += rsmq.send_messages(queue, [f"d{i}"], delay=1010 + 20 * i)
    visible = visible[10:]
    return {"visible": visible, "inflight": inflight, "delayed": delayed, "poison": [poison]}


def walk(rsmq: RedisSMQ, queue: str, state: str, limit: int, **kw: object) -> list[list[str]]:
    """Every page, forwards with Next, as a person would click through."""
    pages: list[list[str]] = []
    after: Cursor | None = None
    while True:
        b: Browse = rsmq.browse(queue, state=state, after=after, limit=limit, **kw)  # type: ignore[arg-type]
        if b.items:
            pages.append([m.id for m in b.items])
        if b.at_end:
            return pages
        after = b.resume


def test_in_flight_and_delayed_page_through_every_message_in_order(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    inflight = walk(rsmq, queue, "inflight", 3, step=4)
    delayed = walk(rsmq, queue, "delayed", 3, step=4)

    assert sum(inflight, []) == interleaved["inflight"] + interleaved["poison"]
    assert sum(delayed, []) == interleaved["delayed"]
    assert all(len(p) <= 3 for p in inflight + delayed)


def test_a_small_step_budget_still_reaches_the_end(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    # one member per script call and no time: each request goes on from where it stopped
    b = rsmq.browse(queue, state="delayed", limit=50, step=1, budget=0)
    assert (b.items, b.complete, b.looked) == ([], False, 1)
    assert [m.id for m in b.items] == []
    ids = sum(walk(rsmq, queue, "delayed", 50, step=1, budget=0), [])
    assert ids == interleaved["delayed"]


def test_last_page_reads_backwards_from_the_end(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    last = rsmq.browse(queue, state="inflight", before=Cursor("", b""), limit=4)
    assert [m.id for m in last.items] == (interleaved["inflight"] + interleaved["poison"])[-4:]
    prev = rsmq.browse(queue, state="inflight", before=Cursor.decode(_first(last)), limit=4)
    assert [m.id for m in prev.items] == interleaved["inflight"][-7:-3]


def _first(b: Browse) -> str:
    m = b.items[0]
    return Cursor(repr(m.visible_at), m.id.encode()).encode()


def test_unfiltered_states_know_each_page_position(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    everything = interleaved["visible"] + sorted(
        interleaved["inflight"] + interleaved["delayed"] + interleaved["poison"],
        key=lambda i: rsmq.get_message(queue, i).visible_at,  # type: ignore[union-attr]
    )
    page = rsmq.browse(queue, state="all", rank=20, limit=7)
    assert [m.id for m in page.items] == everything[20:27]
    assert (page.position, page.state_size) == (20, len(everything))
    nxt = rsmq.browse(queue, state="all", after=page.resume, limit=7)
    assert [m.id for m in nxt.items] == everything[27:34] and nxt.position == 27
    assert rsmq.browse(queue, state="visible", rank=5, limit=100).position == 5


def test_jump_to_a_time_starts_at_the_first_message_visible_then(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    target = rsmq.get_message(queue, interleaved["delayed"][4])
    assert target is not None
    b = rsmq.browse(queue, state="delayed", after=Cursor.at_time(target.visible_at), limit=2)
    assert [m.id for m in b.items] == interleaved["delayed"][4:6]


def test_equal_scores_are_ordered_by_member_and_never_skipped_or_repeated(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    # a bulk fill writes many messages in one ms: a page boundary inside the tie
    members = [f"{i:032d}" for i in range(25)]
    r.zadd(f"{ns}:{queue}", {m: 5 for m in members})
    r.hset(f"{ns}:{queue}:Q", mapping={m: "x" for m in members})
    pages = walk(rsmq, queue, "all", 4)
    assert sum(pages, []) == members
    back = rsmq.browse(queue, before=Cursor("5", members[10].encode()), limit=4)
    assert [m.id for m in back.items] == members[6:10]


def test_rc_and_text_filters_scan_to_the_very_end(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    poison = walk(rsmq, queue, "all", 50, min_rc=5, step=3)
    assert sum(poison, []) == interleaved["poison"]
    found = walk(rsmq, queue, "all", 50, contains="at the back", step=2)
    assert sum(found, []) == interleaved["poison"]


def test_a_cursor_past_the_end_or_gone_is_a_place_not_an_error(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    past = rsmq.browse(queue, after=Cursor("1e300", b"zz"), limit=5)
    assert (past.items, past.at_end) == ([], True)
    # a message deleted since: its cursor still says where it was
    gone = interleaved["visible"][3]
    m = rsmq.get_message(queue, gone)
    assert m is not None
    rsmq.delete_message(queue, gone)
    b = rsmq.browse(queue, state="visible", after=Cursor(str(m.visible_at), gone.encode()), limit=2)
    assert [x.id for x in b.items] == interleaved["visible"][4:6]


@pytest.mark.parametrize("text", ["12~zz", "abc~00", "nan~00", "nocursor", "1~" + "0" * 2000])
def test_a_cursor_that_is_not_one_is_refused_clearly(text: str):
    with pytest.raises(ValueError):
        Cursor.decode(text)


def test_rank_with_a_filter_is_refused(rsmq: RedisSMQ, queue: str):
    with pytest.raises(InvalidArgument):
        rsmq.browse(queue, state="inflight", rank=3)


def test_corrupt_messages_are_listed_not_fatal(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str):
    ok = rsmq.send_messages(queue, ["a", "b"])
    r.zadd(f"{ns}:{queue}", {b"\xff\xfebad": 1})
    r.hset(f"{ns}:{queue}:Q", mapping={b"\xff\xfebad:rc": "many", ok[1] + ":rc": "x"})
    r.zadd(f"{ns}:{queue}", {ok[1]: 10**15})
    everything = rsmq.browse(queue, limit=10)
    assert len(everything.items) == 3 and everything.items[0].member == b"\xff\xfebad"
    received = rsmq.browse(queue, state="inflight", limit=10)
    assert [m.id for m in received.items] == [ok[1]]
    cur = Cursor.decode(everything.resume.encode())  # type: ignore[union-attr]
    assert cur == everything.resume


def test_previous_pages_of_a_filtered_state_hold_only_its_messages(
    rsmq: RedisSMQ, queue: str, interleaved: dict[str, list[str]]
):
    last = rsmq.browse(queue, state="delayed", before=Cursor("", b""), limit=3)
    assert [m.id for m in last.items] == interleaved["delayed"][-3:]
    prev = rsmq.browse(queue, state="delayed", before=last.first, limit=3)
    assert [m.id for m in prev.items] == interleaved["delayed"][-6:-3]
    again = rsmq.browse(queue, state="delayed", before=prev.first, limit=3)
    assert [m.id for m in again.items] == interleaved["delayed"][-9:-6]
