"""Export and import as JSON Lines (queues/transfer.py, `rsmq message export|import`):
exporting changes nothing, an import keeps relative delays, gives new ids unless asked to
keep them, refuses bad lines by number before writing anything, and reports exactly what
it wrote."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from support.node_rsmq import NodeRsmq

from queues import InvalidArgument, RedisSMQ
from queues.transfer import (
    IMPORT_BATCH,
    BadLines,
    check,
    export_lines,
    import_records,
    read_records,
)

Cli = Callable[..., tuple[int, object, str]]


def now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def raw(r: redis.Redis, ns: str, queue: str) -> tuple[dict[str, float], dict[str, str]]:
    """The queue's zset and hash, exactly as Redis holds them."""
    return dict(r.zrange(f"{ns}:{queue}", 0, -1, withscores=True)), r.hgetall(f"{ns}:{queue}:Q")


def exported(rsmq: RedisSMQ, queue: str, **kw: object) -> list[dict[str, object]]:
    return [json.loads(line) for line in export_lines(rsmq, queue, **kw)]  # type: ignore[arg-type]


@pytest.fixture
def mixed(rsmq: RedisSMQ, queue: str) -> dict[str, list[str]]:
    """3 visible, 2 in flight (received once), 1 delayed by an hour."""
    inflight = rsmq.send_messages(queue, ["a", "b"])
    assert [m.id for m in rsmq.receive_messages(queue, 2, vt=600)] == inflight
    visible = rsmq.send_messages(queue, ['{"n": 1}', '{"n": 2}', "plain ünïcode"])
    delayed = [rsmq.send_message(queue, "later", delay=3600)]
    return {"visible": visible, "inflight": inflight, "delayed": delayed}


def test_export_reads_every_message_and_changes_nothing(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str, mixed: dict[str, list[str]]
):
    before = raw(r, ns, queue)
    rows = exported(rsmq, queue)
    assert raw(r, ns, queue) == before  # no rc, fr or totalrecv bump
    by_id = {row["id"]: row for row in rows}
    assert set(by_id) == {i for ids in mixed.values() for i in ids}
    for mid in mixed["inflight"]:
        assert by_id[mid]["state"] == "inflight"
        assert by_id[mid]["rc"] == 1 and isinstance(by_id[mid]["fr"], int)
        assert 590_000 <= by_id[mid]["delay_ms"] <= 600_000  # type: ignore[operator]
    (later,) = mixed["delayed"]
    assert by_id[later]["state"] == "delayed" and by_id[later]["fr"] is None
    assert 3_590_000 <= by_id[later]["delay_ms"] <= 3_600_000  # type: ignore[operator]
    assert {by_id[i]["body"] for i in mixed["visible"]} == {'{"n": 1}', '{"n": 2}', "plain ünïcode"}
    assert all(by_id[i]["delay_ms"] == 0 for i in mixed["visible"])
    # the same keys as the id's time and the score in Redis
    for mid, score in before[0].items():
        assert by_id[mid]["visible_at"] == int(score)


def test_export_of_a_state_or_a_filter(rsmq: RedisSMQ, queue: str, mixed: dict[str, list[str]]):
    assert [x["id"] for x in exported(rsmq, queue, state="inflight")] == mixed["inflight"]
    assert [x["id"] for x in exported(rsmq, queue, state="delayed")] == mixed["delayed"]
    assert [x["body"] for x in exported(rsmq, queue, contains='"n"')] == ['{"n": 1}', '{"n": 2}']
    assert {x["id"] for x in exported(rsmq, queue, min_rc=1)} == set(mixed["inflight"])


def test_export_goes_on_past_one_browse_page(rsmq: RedisSMQ, queue: str):
    ids = rsmq.send_messages(queue, [f"m{i}" for i in range(1_234)])
    assert [x["id"] for x in exported(rsmq, queue)] == ids


def test_import_gives_new_ids_keeps_relative_delays_and_counts_as_sent(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, mixed: dict[str, list[str]]
):
    lines = list(export_lines(rsmq, queue))
    rsmq.create_queue("copy")
    start = now_ms(r)
    report = import_records(rsmq, "copy", read_records(lines, keep_ids=False))
    end = now_ms(r)

    assert report.imported == 6 and report.skipped == [] and report.batches == 1
    copy = exported(rsmq, "copy")
    assert not {x["id"] for x in copy} & {json.loads(line)["id"] for line in lines}
    assert sorted(x["body"] for x in copy) == sorted(json.loads(line)["body"] for line in lines)
    assert all(x["rc"] == 0 and x["fr"] is None for x in copy)  # new messages
    by_body = {x["body"]: x for x in copy}
    assert start + 3_590_000 <= by_body["later"]["visible_at"] <= end + 3_600_000  # type: ignore[operator]
    assert start <= by_body['{"n": 1}']["visible_at"] <= end  # type: ignore[operator]
    assert rsmq.get_queue_attributes("copy").totalsent == 6
    # a new id sorts after every id sent before it, as a send's would
    assert report.first_id is not None and report.first_id > max(
        x["id"] for x in exported(rsmq, queue)
    )  # type: ignore[type-var]


def test_import_keeping_ids_restores_the_exact_records_and_skips_ids_taken(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str, mixed: dict[str, list[str]]
):
    lines = list(export_lines(rsmq, queue))
    zset, hash_ = raw(r, ns, queue)
    keep = mixed["visible"][0]
    gone = [i for ids in mixed.values() for i in ids if i != keep]
    rsmq.delete_messages(queue, gone)

    report = import_records(rsmq, queue, read_records(lines, keep_ids=True), keep_ids=True)

    assert report.imported == 5
    assert report.skipped == [{"line": 1, "id": keep, "why": "id already in the queue"}]
    after_zset, after_hash = raw(r, ns, queue)
    assert set(after_zset) == set(zset)
    # ids, bodies, rc and fr as they were; every score relative to the import's time
    for field in hash_:
        if field not in ("totalsent", "totalrecv", "modified"):
            assert after_hash[field] == hash_[field], field
    assert after_zset[keep] == zset[keep]  # the one skipped is untouched


def test_bad_lines_are_refused_by_number_and_nothing_is_written(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    lines = [
        '{"body": "fine"}',
        "not json",
        '{"body": 42}',
        "[1, 2]",
        "",  # blank lines are skipped
        '{"body": "x", "delay_ms": -5}',
        '{"body": "x", "rc": "2"}',
        b'{"body": "\xff"}',
        '{"body": "' + "[" * 50_000 + '"}',  # a long body is fine
        "[" * 100_000,  # deep nesting: refused, not a crash
    ]
    with pytest.raises(BadLines) as e:
        check(lines)
    assert [n for n, _ in e.value.bad] == [2, 3, 4, 6, 7, 8, 10]
    text = str(e.value)
    assert "line 3: body must be a string" in text
    assert "line 6: delay_ms must be an integer between 0 and 9999999000" in text
    assert "line 8: not UTF-8" in text
    before = raw(r, ns, queue)
    with pytest.raises(BadLines):
        import_records(rsmq, queue, read_records(lines, keep_ids=False))
    assert raw(r, ns, queue) == before


def test_keeping_ids_needs_valid_ids(rsmq: RedisSMQ, queue: str):
    with pytest.raises(BadLines, match="line 1: id must be an RSMQ message id"):
        check(['{"body": "x", "id": "a:rc"}'], keep_ids=True)
    with pytest.raises(BadLines, match="line 1: id must be"):
        check(['{"body": "x"}'], keep_ids=True)


def test_an_import_writes_in_batches_each_atomic(
    rsmq: RedisSMQ, queue: str, r: redis.Redis, ns: str
):
    n = IMPORT_BATCH * 2 + 7
    lines = [json.dumps({"body": f"m{i}"}) for i in range(n)]
    report = import_records(rsmq, queue, read_records(lines, keep_ids=False))
    assert report.imported == n and report.batches == 3
    assert [x["body"] for x in exported(rsmq, queue)] == [f"m{i}" for i in range(n)]


def test_a_body_over_maxsize_refuses_the_file_before_anything_is_written(
    rsmq: RedisSMQ, cli: Cli, tmp_path: Path, r: redis.Redis, ns: str
):
    rsmq.create_queue("small", maxsize=1024)
    f = tmp_path / "in.jsonl"
    f.write_text(json.dumps({"body": "ok"}) + "\n" + json.dumps({"body": "x" * 2000}) + "\n")
    code, out, err = cli("message", "import", "-n", "small", "-i", str(f))
    assert code == 1 and out is None
    assert "line 2: body is 2000 bytes, the queue takes at most 1024" in err
    assert r.zcard(f"{ns}:small") == 0


def test_import_batch_is_atomic_on_a_body_too_long(rsmq: RedisSMQ):
    from queues import MessageTooLong
    from queues.models import ImportRecord

    rsmq.create_queue("small", maxsize=1024)
    with pytest.raises(MessageTooLong):
        rsmq.import_messages("small", [ImportRecord("ok"), ImportRecord("x" * 2000)])
    assert rsmq.get_queue_attributes("small").msgs == 0


def test_import_messages_validates_its_arguments(rsmq: RedisSMQ, queue: str):
    from queues.models import ImportRecord

    with pytest.raises(InvalidArgument, match="delay_ms must be an integer between 0"):
        rsmq.import_messages(queue, [ImportRecord("x", delay_ms=-1)])
    with pytest.raises(InvalidArgument, match="keeping ids needs"):
        rsmq.import_messages(queue, [ImportRecord("x")], keep_ids=True)


def test_cli_export_then_import_round_trip(
    rsmq: RedisSMQ, queue: str, cli: Cli, tmp_path: Path, mixed: dict[str, list[str]]
):
    f = tmp_path / "out.jsonl"
    code, out, _ = cli("message", "export", "-n", queue, "-o", str(f))
    assert code == 0 and out == {"exported": 6, "file": str(f)}
    assert len(f.read_text().splitlines()) == 6

    rsmq.create_queue("copy")
    code, out, _ = cli("message", "import", "-n", "copy", "-i", str(f))
    assert code == 0
    assert out == {"lines": 6, "imported": 6, "skipped": 0, "skipped_lines": [], "batches": 1,
                   "first_id": out["first_id"], "last_id": out["last_id"]}  # type: ignore[index]  # fmt: skip
    assert rsmq.get_queue_attributes("copy").msgs == 6


def test_cli_export_to_stdout_is_only_json_lines(
    rsmq: RedisSMQ, queue: str, redis_url: str, ns: str, capsys: pytest.CaptureFixture[str]
):
    from queues.cli import main

    ids = rsmq.send_messages(queue, ["a", "b"])
    assert main(["--url", redis_url, "--ns", ns, "message", "export", "-n", queue, "-o", "-"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["id"] for line in out.splitlines()] == ids
    assert json.loads(err) == {"exported": 2}


def test_node_rsmq_receives_imported_messages(
    rsmq: RedisSMQ, queue: str, node: NodeRsmq, r: redis.Redis
):
    lines = [json.dumps({"body": "from an export", "rc": 3, "fr": now_ms(r)})]
    import_records(rsmq, queue, read_records(lines, keep_ids=False))
    got = node.call("receiveMessage", qname=queue)
    assert got["message"] == "from an export" and got["rc"] == 1  # a new message
