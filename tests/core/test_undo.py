"""Undo (queues/ops/undo.py): what a destructive action removed is kept outside the RSMQ
keys, in the same script call as the removal, and put back byte for byte — compared here
in raw Redis (HGETALL of the queue's hash, ZRANGE WITHSCORES of its zset)."""

from __future__ import annotations

import time

import pytest
import redis

from queues import InvalidArgument, QueueNotFound, RedisSMQ
from queues.errors import UndoNotFound
from queues.limits import UNDO_CHUNK


def raw(r: redis.Redis, ns: str, qname: str) -> tuple[dict[str, str], list[tuple[str, float]]]:
    """A queue exactly as Redis holds it: its hash, its zset with scores."""
    return r.hgetall(f"{ns}:{qname}:Q"), r.zrange(f"{ns}:{qname}", 0, -1, withscores=True)


def fill(rsmq: RedisSMQ, qname: str) -> list[str]:
    """Visible, received (rc, fr, hidden), received twice and delayed messages, one body
    with bytes that are not ASCII."""
    ids = rsmq.send_messages(qname, ["a", "b", "c", '{"x": "é€😀"}'])
    rsmq.receive_messages(qname, 2, vt=1000)  # a and b: in flight, rc 1
    rsmq.change_message_visibility(qname, ids[0], 0)
    rsmq.receive_message(qname, vt=1000)  # a again: rc 2
    ids.append(rsmq.send_message(qname, "later", delay=500))
    return ids


def undo_keys(r: redis.Redis, ns: str) -> list[str]:
    return sorted(r.scan_iter(f"{ns}:@undo:*"))


def test_purge_then_undo_restores_every_message_byte_for_byte(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    fill(rsmq, queue)
    before = raw(r, ns, queue)
    token = rsmq.open_undo("purge", queue)

    assert rsmq.purge_queue(queue, keep=token) == 5
    hash_after, zset_after = raw(r, ns, queue)
    assert zset_after == [] and set(hash_after) == {
        "vt", "delay", "maxsize", "created", "modified", "totalsent", "totalrecv"
    }  # fmt: skip
    info = rsmq.undo_info(token)
    assert info is not None and (info.action, info.qname, info.count) == ("purge", queue, 5)
    assert info.bytes == sum(len(b.encode()) for b in ["a", "b", "c", '{"x": "é€😀"}', "later"])

    done = rsmq.undo(token)

    assert (done.restored, done.skipped, done.already) == (5, 0, False)
    assert raw(r, ns, queue) == before
    assert undo_keys(r, ns) == [f"{ns}:@undo:{token}"]  # only the record: "done"


def test_a_second_undo_does_nothing_and_says_so(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = fill(rsmq, queue)
    token = rsmq.open_undo("delete", queue)
    rsmq.delete_messages(queue, ids[:2], keep=token)
    assert rsmq.undo(token).restored == 2
    before = raw(r, ns, queue)

    again = rsmq.undo(token)

    assert again.already and again.restored == 0
    assert raw(r, ns, queue) == before
    info = rsmq.undo_info(token)
    assert info is not None and info.done_ms is not None and info.restored == 2


@pytest.mark.parametrize("how", ["one", "ids", "members", "state"])
def test_deletes_are_undone_exactly(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str, how: str):
    ids = fill(rsmq, queue)
    before = raw(r, ns, queue)
    token = rsmq.open_undo("delete_all" if how == "state" else "delete", queue)
    if how == "one":
        assert rsmq.delete_message(queue, ids[0], keep=token)
        gone = 1
    elif how == "ids":
        gone = rsmq.delete_messages(queue, ids[1:4], keep=token)
    elif how == "members":
        gone = rsmq.delete_members(queue, [ids[2].encode(), ids[4]], keep=token)
    else:
        gone = rsmq.delete_state(queue, "inflight", keep=token)
    assert gone > 0 and raw(r, ns, queue) != before

    assert rsmq.undo(token).restored == gone
    assert raw(r, ns, queue) == before


def test_a_message_whose_id_is_back_is_reported_not_duplicated(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["one", "two"])
    token = rsmq.open_undo("delete", queue)
    rsmq.delete_messages(queue, ids, keep=token)
    # the same id written again meanwhile (an import keeping ids does exactly that)
    from queues.models import ImportRecord

    rsmq.import_messages(queue, [ImportRecord("other body", id=ids[0])], keep_ids=True)
    before = raw(r, ns, queue)

    done = rsmq.undo(token)

    assert (done.restored, done.present, done.present_ids) == (1, 1, (ids[0],))
    hash_after, zset_after = raw(r, ns, queue)
    assert hash_after[ids[0]] == "other body" and hash_after[ids[1]] == "two"
    assert [m for m, _ in zset_after].count(ids[0]) == 1 and len(zset_after) == 2
    assert {k: v for k, v in hash_after.items() if not k.startswith(ids[1])} == before[0]


def test_move_then_undo_takes_them_back_unless_gone_or_received_there(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.create_queue("dst")
    ids = fill(rsmq, queue)
    before_src, before_dst = raw(r, ns, queue), raw(r, ns, "dst")
    token = rsmq.open_undo("move", queue, to="dst")
    assert rsmq.move_messages(queue, "dst", ids[:4], keep=token) == 4
    rsmq.delete_message("dst", ids[2])  # gone from dst
    got = rsmq.receive_message("dst", vt=1000)  # the first visible there: received
    assert got is not None
    taken = got.id

    done = rsmq.undo(token)

    assert (done.restored, done.gone_ids, done.taken_ids) == (2, (ids[2],), (taken,))
    src_hash, src_zset = raw(r, ns, queue)
    back = [i for i in ids[:4] if i not in (ids[2], taken)]
    for i in back:  # exactly as they were in the source
        assert src_hash[i] == before_src[0][i]
        assert src_hash.get(f"{i}:rc") == before_src[0].get(f"{i}:rc")
        assert src_hash.get(f"{i}:fr") == before_src[0].get(f"{i}:fr")
        assert dict(src_zset)[i] == dict(before_src[1])[i]
    dst_hash, dst_zset = raw(r, ns, "dst")
    assert [m for m, _ in dst_zset] == [taken]  # the received one stays where it is
    assert not any(k.startswith(tuple(back)) for k in dst_hash)
    assert before_dst[1] == []


def test_a_whole_move_and_its_undo(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str):
    rsmq.create_queue("dst")
    fill(rsmq, queue)
    before = raw(r, ns, queue), raw(r, ns, "dst")
    token = rsmq.open_undo("move", queue, to="dst")
    assert rsmq.move_messages(queue, "dst", keep=token) == 5

    assert rsmq.undo(token).restored == 5
    assert (raw(r, ns, queue), raw(r, ns, "dst")) == before


def test_redrive_then_undo_puts_the_dead_letters_back(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("work")
    rsmq.create_queue("dead")
    rsmq.set_dead_letter_policy("work", "dead", 1)
    rsmq.send_messages("work", ["x", "y", "z"])
    rsmq.receive_messages("work", 3, vt=0)
    assert rsmq.receive_messages("work", 3) == []  # all three dead-lettered
    before = raw(r, ns, "dead"), raw(r, ns, "work")
    assert len(before[0][1]) == 3 and any(k.startswith("x:src:") for k in before[0][0])
    token = rsmq.open_undo("redrive", "dead")

    assert rsmq.redrive("dead", keep=token) == 3
    assert raw(r, ns, "dead")[1] == []

    assert rsmq.undo(token).restored == 3
    assert raw(r, ns, "dead") == before[0]
    work_hash, work_zset = raw(r, ns, "work")
    assert work_zset == before[1][1] and work_hash == before[1][0]


def test_delete_queue_then_undo_brings_it_back_whole(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    fill(rsmq, queue)
    before = raw(r, ns, queue)
    token = rsmq.open_undo("delete_queue", queue)
    rsmq.delete_queue(queue, keep=token)
    assert not r.exists(f"{ns}:{queue}", f"{ns}:{queue}:Q")
    assert queue not in rsmq.list_queues()

    done = rsmq.undo(token)

    assert done.whole_queue and done.restored == 5
    assert raw(r, ns, queue) == before
    assert r.ttl(f"{ns}:{queue}:Q") == -1 and r.ttl(f"{ns}:{queue}") == -1
    assert queue in rsmq.list_queues()


def test_an_empty_queue_deleted_comes_back_too(rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str):
    before = raw(r, ns, queue)
    token = rsmq.open_undo("delete_queue", queue)
    rsmq.delete_queue(queue, keep=token)

    assert rsmq.undo(token).whole_queue
    assert raw(r, ns, queue) == before and queue in rsmq.list_queues()


def test_a_deleted_queue_created_again_keeps_its_new_attributes(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = fill(rsmq, queue)
    old_hash, old_zset = raw(r, ns, queue)
    token = rsmq.open_undo("delete_queue", queue)
    rsmq.delete_queue(queue, keep=token)
    rsmq.create_queue(queue, vt=77)
    new_attrs = r.hgetall(f"{ns}:{queue}:Q")

    done = rsmq.undo(token)

    assert done.recreated and not done.whole_queue and done.restored == 5
    h, z = raw(r, ns, queue)
    assert z == old_zset
    assert {k: v for k, v in h.items() if k in new_attrs} == new_attrs
    assert {k: v for k, v in h.items() if k not in new_attrs} == {
        k: v for k, v in old_hash.items() if k.startswith(tuple(ids))
    }


def test_undo_of_a_purge_when_the_queue_is_gone_does_nothing_until_it_is_back(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.send_messages(queue, ["a", "b"])
    token = rsmq.open_undo("purge", queue)
    rsmq.purge_queue(queue, keep=token)
    rsmq.delete_queue(queue)

    assert rsmq.undo(token).missing
    rsmq.create_queue(queue)
    assert rsmq.undo(token).restored == 2


def test_the_stash_is_outside_the_rsmq_keys_and_expires(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b"])
    token = rsmq.open_undo("delete", queue, hours=2 / 3600)  # two seconds
    rsmq.delete_messages(queue, ids, keep=token)
    keys = undo_keys(r, ns)
    assert keys == sorted(f"{ns}:@undo:{token}{s}" for s in ("", ":m", ":z"))
    assert all(0 < r.pttl(k) <= 2000 for k in keys)
    assert rsmq.list_queues() == [queue]  # no client lists the stash as a queue

    time.sleep(2.2)

    assert undo_keys(r, ns) == [] and rsmq.undo_info(token) is None
    with pytest.raises(UndoNotFound):
        rsmq.undo(token)
    with pytest.raises(InvalidArgument, match="keep"):  # nor is it filled again
        rsmq.delete_messages(queue, [rsmq.send_message(queue, "c")], keep=token)


def test_a_used_or_bad_token_is_refused_and_nothing_is_removed(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["a", "b"])
    token = rsmq.open_undo("purge", queue)
    rsmq.purge_queue(queue, keep=token)
    rsmq.undo(token)
    before = raw(r, ns, queue)

    for call in (
        lambda: rsmq.purge_queue(queue, keep=token),  # undone: closed
        lambda: rsmq.delete_messages(queue, ids, keep=token),
        lambda: rsmq.delete_messages(queue, ids, keep="nothex"),
    ):
        with pytest.raises(InvalidArgument):
            call()
    assert raw(r, ns, queue) == before
    with pytest.raises(InvalidArgument, match="action"):
        rsmq.open_undo("Send!", queue)
    with pytest.raises(InvalidArgument, match="hours"):
        rsmq.open_undo("purge", queue, hours=0)
    with pytest.raises(QueueNotFound):
        rsmq.purge_queue("nosuch", keep=rsmq.open_undo("purge", "nosuch"))


def test_an_interrupted_purge_is_undone_all_the_same(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    """The purge's first call (the zset renamed into the stash) ran, its bodies were
    not moved yet: undo moves them, then restores every one."""
    from queues import scripts as S

    rsmq.send_messages(queue, [f"m{i}" for i in range(UNDO_CHUNK * 2 + 10)])
    before = raw(r, ns, queue)
    token = rsmq.open_undo("purge", queue)
    z, m, record = rsmq._undo_keys(token)
    sha = r.script_load(S.PURGE_DETACH.source)
    qz, qh, f = rsmq._with_failures(queue)
    assert r.evalsha(sha, 7, qz, qh, rsmq._purge_key(queue), f, z, m, record) == UNDO_CHUNK * 2 + 10

    assert rsmq.undo(token).restored == UNDO_CHUNK * 2 + 10
    assert raw(r, ns, queue) == before


def test_undo_estimate(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, ["x" * 1000, "y" * 10])
    assert rsmq.undo_estimate(queue, ids[:1]) >= 1000
    assert rsmq.undo_estimate(queue, ids) > rsmq.undo_estimate(queue, ids[:1])
    assert rsmq.undo_estimate(queue) == rsmq.undo_estimate(queue, ids)


def test_long_bodies_go_and_come_back_in_several_calls(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    """A call moves at most MOVE_BYTES of bodies (one at least): three of 700 KB take three
    calls each way, and come back whole."""
    rsmq.create_queue("big", maxsize=-1)
    rsmq.send_messages("big", [c * 700_000 for c in "xyz"])
    before = raw(r, ns, "big")
    token = rsmq.open_undo("purge", "big")
    assert rsmq.purge_queue("big", keep=token) == 3
    info = rsmq.undo_info(token)
    assert info is not None and info.bytes == 2_100_000

    assert rsmq.undo(token).restored == 3
    assert raw(r, ns, "big") == before


def test_a_stash_that_kept_nothing_is_discarded_one_that_kept_something_is_not(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    empty = rsmq.open_undo("delete", queue)
    assert rsmq.delete_messages(queue, ["a" * 32], keep=empty) == 0
    assert rsmq.discard_undo(empty) and undo_keys(r, ns) == []
    kept = rsmq.open_undo("delete", queue)
    rsmq.delete_messages(queue, rsmq.send_messages(queue, ["x"]), keep=kept)
    assert not rsmq.discard_undo(kept) and rsmq.undo(kept).restored == 1


def test_open_undo_within_a_bound_checks_the_size_in_the_same_call(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = rsmq.send_messages(queue, ["x" * 1000, "y" * 10])
    whole = rsmq.undo_estimate(queue)
    no = rsmq.open_undo_within("purge", queue, whole - 1)
    assert (no.token, no.bytes) == ("", whole) and undo_keys(r, ns) == []
    yes = rsmq.open_undo_within("delete", queue, whole, ids=ids[:1])
    assert yes.token and yes.bytes == rsmq.undo_estimate(queue, ids[:1]) and yes.expires_ms > 0
    assert rsmq.delete_messages(queue, ids[:1], keep=yes.token) == 1
    assert rsmq.undo(yes.token).restored == 1


def test_a_move_keeps_only_into_a_stash_opened_for_its_destination(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.create_queue("dst")
    rsmq.create_queue("other")
    ids = rsmq.send_messages(queue, ["a", "b"])
    before = raw(r, ns, queue)
    for token in (rsmq.open_undo("move", queue, to="other"), rsmq.open_undo("move", queue)):
        with pytest.raises(InvalidArgument, match="keep"):
            rsmq.move_messages(queue, "dst", ids, keep=token)
    assert raw(r, ns, queue) == before and r.zcard(f"{ns}:dst") == 0


@pytest.mark.parametrize("keep_counts", [False, True])
def test_a_move_with_or_without_its_receive_counts_comes_back_as_it_was(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str, keep_counts: bool
):
    """A move starts its messages over (rc and fr dropped) unless asked to keep them;
    either way its undo knows what the move wrote, and puts each back exactly."""
    rsmq.create_queue("dst")
    ids = fill(rsmq, queue)
    before = raw(r, ns, queue)
    token = rsmq.open_undo("move", queue, to="dst")
    assert rsmq.move_messages(queue, "dst", ids, keep_counts=keep_counts, keep=token) == 5
    moved_rc = r.hget(f"{ns}:dst:Q", f"{ids[0]}:rc")
    assert before[0][f"{ids[0]}:rc"] in ("1", "2")
    assert moved_rc == (before[0][f"{ids[0]}:rc"] if keep_counts else None)

    done = rsmq.undo(token)

    assert (done.restored, done.skipped) == (5, 0)
    assert raw(r, ns, queue) == before
    dst_hash, dst_zset = raw(r, ns, "dst")
    assert dst_zset == [] and not [k for k in dst_hash for i in ids if k.startswith(i)]


# act_checked and the paced runs (queues/pacing.py: a bulk job's steps) keep too


def _seen(rsmq: RedisSMQ, qname: str, ids: list[str]) -> list[tuple[str, int]]:
    """(id, visible_at) pairs as browsing read them, for ``act_checked``."""
    page = rsmq.browse(qname, limit=100)
    return [(m.id, m.visible_at) for m in page.items if m.id in ids]


def test_act_checked_delete_keeps_what_it_removes_and_undo_is_byte_identical(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    ids = fill(rsmq, queue)
    before = raw(r, ns, queue)
    token = rsmq.open_undo("delete_selection", queue)
    acted = rsmq.act_checked(queue, "delete", _seen(rsmq, queue, ids[:4]), keep=token)
    assert acted.done == 4 and len(raw(r, ns, queue)[1]) == 1
    assert rsmq.undo_info(token).count == 4  # type: ignore[union-attr]

    assert rsmq.undo(token).restored == 4
    assert raw(r, ns, queue) == before


@pytest.mark.parametrize("keep_counts", [False, True])
def test_act_checked_move_keeps_where_they_went_and_undo_takes_them_back(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str, keep_counts: bool
):
    rsmq.create_queue("dst")
    ids = fill(rsmq, queue)
    before = raw(r, ns, queue), raw(r, ns, "dst")
    token = rsmq.open_undo("move", queue, to="dst")
    seen = _seen(rsmq, queue, ids)
    acted = rsmq.act_checked(queue, "move", seen, to="dst", keep_counts=keep_counts, keep=token)
    assert acted.done == 5 and raw(r, ns, queue)[1] == []

    done = rsmq.undo(token)
    assert (done.restored, done.gone, done.taken) == (5, 0, 0)
    assert (raw(r, ns, queue), raw(r, ns, "dst")) == before


def test_act_checked_redrive_keeps_each_to_its_own_queue(rsmq: RedisSMQ, r: redis.Redis, ns: str):
    rsmq.create_queue("work")
    rsmq.create_queue("dead")
    rsmq.set_dead_letter_policy("work", "dead", 1)
    rsmq.send_messages("work", ["x", "y"])
    rsmq.receive_messages("work", 2, vt=0)
    assert rsmq.receive_messages("work", 2) == []
    before = raw(r, ns, "dead"), raw(r, ns, "work")
    ids = [m for m, _ in before[0][1]]
    token = rsmq.open_undo("redrive", "dead")
    assert rsmq.act_checked("dead", "redrive", _seen(rsmq, "dead", ids), keep=token).done == 2
    assert sorted(m for m, _ in raw(r, ns, "work")[1]) == sorted(ids)

    assert rsmq.undo(token).restored == 2
    assert (raw(r, ns, "dead"), raw(r, ns, "work")) == before


def test_act_checked_refuses_a_stash_where_nothing_is_removed_or_another_destination(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    rsmq.create_queue("dst")
    rsmq.create_queue("other")
    ids = rsmq.send_messages(queue, ["a", "b"])
    before = raw(r, ns, queue)
    token = rsmq.open_undo("move", queue, to="other")
    with pytest.raises(InvalidArgument, match="keep"):
        rsmq.act_checked(queue, "move", _seen(rsmq, queue, ids), to="dst", keep=token)
    with pytest.raises(InvalidArgument, match="keep"):
        rsmq.act_checked(queue, "requeue", _seen(rsmq, queue, ids), keep=token)
    assert raw(r, ns, queue) == before and r.zcard(f"{ns}:dst") == 0


def test_a_paced_delete_of_every_match_keeps_one_stash_and_undo_puts_them_back(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    from queues.pacing import STEP, Plan, run

    n = STEP * 4 + 7  # more matches than one step takes: several steps, one stash
    for k in range(0, n, 100):
        rsmq.send_messages(
            queue, [f"keep {i}" if i % 3 else f"go {i}" for i in range(k, min(n, k + 100))]
        )
    before = raw(r, ns, queue)
    plan = Plan(queue, "delete", {"state": "all", "contains": "go"})
    limit = sum(1 for i in range(n) if not i % 3)
    token = rsmq.open_undo("delete_matches", queue)
    got = run(rsmq, plan, limit, keep=token)
    assert got.done == limit and got.steps > 1
    assert len(raw(r, ns, queue)[1]) == n - limit
    assert rsmq.undo_info(token).count == limit  # type: ignore[union-attr]

    assert rsmq.undo(token).restored == limit
    assert raw(r, ns, queue) == before


def test_a_paced_move_keeps_one_stash_and_undo_takes_them_back(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    from queues.pacing import Plan, run

    rsmq.create_queue("dst")
    fill(rsmq, queue)
    before = raw(r, ns, queue), raw(r, ns, "dst")
    token = rsmq.open_undo("move", queue, to="dst")
    assert run(rsmq, Plan(queue, "move", {"state": "all"}, to="dst"), 5, keep=token).done == 5

    assert rsmq.undo(token).restored == 5
    assert (raw(r, ns, queue), raw(r, ns, "dst")) == before


def test_a_paced_run_that_removes_nothing_takes_no_stash(rsmq: RedisSMQ, queue: str):
    from queues.pacing import Plan, run

    rsmq.send_messages(queue, ["a"])
    token = rsmq.open_undo("visibility", queue)
    with pytest.raises(InvalidArgument, match="keep"):
        run(rsmq, Plan(queue, "visibility", {"state": "all"}, vt=5), 1, keep=token)
    assert rsmq.get_queue_attributes(queue).hiddenmsgs == 0


def test_a_paced_redrive_keeps_one_stash_and_undo_puts_the_dead_letters_back(
    rsmq: RedisSMQ, r: redis.Redis, ns: str
):
    from queues.pacing import Plan, run

    rsmq.create_queue("work")
    rsmq.create_queue("dead")
    rsmq.set_dead_letter_policy("work", "dead", 1)
    rsmq.send_messages("work", ["x", "y", "z"])
    rsmq.receive_messages("work", 3, vt=0)
    assert rsmq.receive_messages("work", 3) == []  # all three dead-lettered
    before = raw(r, ns, "dead"), raw(r, ns, "work")
    token = rsmq.open_undo("redrive", "dead")
    assert run(rsmq, Plan("dead", "redrive", {"state": "visible"}), 3, keep=token).done == 3
    assert raw(r, ns, "dead")[1] == [] and len(raw(r, ns, "work")[1]) == 3

    assert rsmq.undo(token).restored == 3
    assert (raw(r, ns, "dead"), raw(r, ns, "work")) == before
