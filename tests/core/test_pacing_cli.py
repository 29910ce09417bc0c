"""`rsmq message redrive|move` paced: the count first (nothing moves without --yes), the
rate cap, the canary (a real consumer failing the redriven messages back), fresh receive
counts unless --keep-counts, bad input refused naming the field."""

from __future__ import annotations

import re
import threading
import time

import pytest

from queues import RedisSMQ


@pytest.fixture
def dead(rsmq: RedisSMQ) -> list[str]:
    """ "jobs" dead-letters into "dlq" after one receive; 50 dead letters, 10 of them
    with "poison" in the body."""
    rsmq.create_queue("jobs")
    rsmq.create_queue("dlq")
    rsmq.set_dead_letter_policy("jobs", "dlq", 1)
    ids = rsmq.send_messages("jobs", [f"job {i} {'poison' if i < 10 else ''}" for i in range(50)])
    rsmq.receive_messages("jobs", 50, vt=0)
    while rsmq.receive_messages("jobs", 50, vt=0):
        pass
    assert rsmq.get_queue_attributes("dlq").msgs == 50
    return ids


def test_nothing_moves_without_yes_and_the_count_is_said(cli, rsmq: RedisSMQ, dead) -> None:
    code, out, err = cli("message", "redrive", "-n", "dlq", "--contains", "poison", "--rate", "100")
    assert code == 1 and out is None
    assert "yes" in err and "10 message(s) of dlq match" in err
    assert rsmq.get_queue_attributes("dlq").msgs == 50


def test_a_paced_redrive_of_a_filter_with_fresh_receive_counts(
    cli, rsmq: RedisSMQ, dead: list[str]
) -> None:
    start = time.monotonic()
    code, out, _ = cli("message", "redrive", "-n", "dlq", "--contains", "poison", "--rate", "20",
                       "--yes")  # fmt: skip
    took = time.monotonic() - start
    assert code == 0
    assert isinstance(out, dict) and re.fullmatch(r"[0-9a-f]{32}", out.pop("undo"))
    assert out == {"redriven": 10, "matched": 10, "changed": 0, "skipped": 0, "phase": "done"}
    assert took >= 0.25  # steps of 5 at 20 a second: the second starts 0.25 s after the first
    assert {rsmq.get_message("jobs", i).rc for i in dead[:10]} == {0}  # type: ignore[union-attr]


def test_keep_counts(cli, rsmq: RedisSMQ, dead: list[str]) -> None:
    rsmq.create_queue("other")
    code, out, _ = cli("message", "move", "-n", "dlq", "--to", "other", "--contains", "poison",
                       "--keep-counts", "--yes")  # fmt: skip
    assert (code, out["moved"]) == (0, 10)  # type: ignore[index]
    assert {rsmq.get_message("other", i).rc for i in dead[:10]} == {1}  # type: ignore[union-attr]


def test_a_canary_that_comes_back_stops_it_with_exit_4(
    cli, rsmq: RedisSMQ, dead: list[str], redis_url: str, ns: str
) -> None:
    consumer = RedisSMQ(url=redis_url, ns=ns)
    stop = threading.Event()

    def fail_everything() -> None:  # receives, never deletes: back to dlq on the next receive
        while not stop.is_set():
            if not consumer.receive_messages("jobs", 100, vt=0):
                time.sleep(0.05)

    t = threading.Thread(target=fail_everything, daemon=True)
    t.start()
    try:
        code, out, _ = cli("message", "redrive", "-n", "dlq", "--rate", "100", "--canary", "5",
                           "--watch", "5", "--max-bounce", "20", "--yes")  # fmt: skip
    finally:
        stop.set()
        t.join(5)
        consumer.close()
    assert code == 4
    assert out["phase"] == "stopped" and out["redriven"] == 5  # type: ignore[index]
    assert out["canary"]["moved"] == 5 and out["canary"]["came_back"] >= 2  # type: ignore[index]
    assert "came back to dlq" in out["note"]  # type: ignore[index]
    assert rsmq.get_queue_attributes("dlq").msgs >= 45


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--rate", "0"], "rate"),
        (["--rate", "many"], "rate"),
        (["--canary", "60", "--watch", "1"], "canary"),  # 50 match
        (["--canary", "5"], "watch"),
        (["--canary", "5", "--watch", "1", "--max-bounce", "101"], "max_bounce"),
    ],
)
def test_bad_input_is_refused_naming_the_field(
    cli, rsmq: RedisSMQ, dead, flags: list[str], field: str
) -> None:
    code, out, err = cli("message", "redrive", "-n", "dlq", *flags, "--yes")
    assert code == 1 and out is None
    assert field in err
    assert rsmq.get_queue_attributes("dlq").msgs == 50


def test_a_paced_move_prints_its_undo_and_rsmq_undo_takes_them_back(
    cli, rsmq: RedisSMQ, dead: list[str]
) -> None:
    rsmq.create_queue("other")
    before = {m.id: m.visible_at for m in rsmq.list_messages("dlq", limit=100).items}
    code, out, _ = cli("message", "move", "-n", "dlq", "--to", "other", "--contains", "poison",
                       "--yes")  # fmt: skip
    assert code == 0 and out["moved"] == 10  # type: ignore[index]
    token = out["undo"]  # type: ignore[index]
    code, undone, _ = cli("undo", token)
    assert code == 0 and undone["restored"] == 10  # type: ignore[index]
    after = {m.id: m.visible_at for m in rsmq.list_messages("dlq", limit=100).items}
    assert after == before and rsmq.get_queue_attributes("other").msgs == 0
    code, again, _ = cli("undo", token)
    assert code == 0 and again["already"] is True  # type: ignore[index]


def test_a_run_that_changed_nothing_has_no_undo(cli, rsmq: RedisSMQ, dead: list[str]) -> None:
    code, out, _ = cli("message", "redrive", "-n", "dlq", "--contains", "nothing like it", "--yes")
    assert code == 0 and out["redriven"] == 0 and out["undo"] is None  # type: ignore[index]
