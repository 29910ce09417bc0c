"""The `rsmq` command line: JSON on stdout, one-line errors on stderr, non-zero exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from queues import RedisSMQ
from queues.cli import EXIT_ERROR, EXIT_REDIS, main
from queues.server import free_port


def test_queue_create_list_describe(cli) -> None:
    assert cli("queue", "create", "-n", "jobs", "--vt", "45")[:2] == (0, {"created": "jobs"})
    assert cli("queue", "list")[1] == ["jobs"]
    code, out, _ = cli("queue", "describe", "-n", "jobs")
    assert code == 0
    assert out["vt"] == 45 and out["msgs"] == 0 and out["visible"] == 0


def test_queue_describe_shows_the_queue_stats(cli, rsmq: RedisSMQ) -> None:
    cli("queue", "create", "-n", "jobs")
    rsmq.send_messages("jobs", ["a", "b"])
    rsmq.send_message("jobs", "later", delay=100)
    rsmq.receive_message("jobs", vt=100)

    out = cli("queue", "describe", "-n", "jobs")[1]

    expected = rsmq.queue_stats(["jobs"])[0].as_dict()
    assert out.keys() == expected.keys() | {"hiddenmsgs"}  # rsmqctl's, beside the split
    assert out["hiddenmsgs"] == out["hidden"]
    assert {k: out[k] for k in ("name", "msgs", "visible", "hidden", "inflight", "delayed")} == {
        "name": "jobs", "msgs": 3, "visible": 1, "hidden": 2, "inflight": 1, "delayed": 1,
    }  # fmt: skip
    assert out["exact"] is True and out["oldest_age"] >= 0


def test_message_send_receive_delete_round_trip(cli) -> None:
    cli("queue", "create", "-n", "jobs")
    sent = cli("message", "send", "-n", "jobs", "-m", "hello")[1]["id"]
    code, got, _ = cli("message", "receive", "-n", "jobs", "--vt", "60")
    assert code == 0 and got["id"] == sent and got["message"] == "hello" and got["rc"] == 1
    assert cli("message", "delete", "-n", "jobs", "-i", sent)[1] == {"deleted": 1}


def test_message_list_shows_state_without_receiving(cli, rsmq: RedisSMQ) -> None:
    cli("queue", "create", "-n", "jobs")
    cli("message", "send", "-n", "jobs", "-m", "a", "-d", "100")
    code, page, _ = cli("message", "list", "-n", "jobs", "--state", "delayed")
    assert code == 0 and page["total"] == 1 and page["items"][0]["state"] == "delayed"
    assert rsmq.get_queue_attributes("jobs").totalrecv == 0


def test_visibility_requeue_pop_move(cli, rsmq: RedisSMQ) -> None:
    cli("queue", "create", "-n", "a")
    cli("queue", "create", "-n", "b")
    mid = cli("message", "send", "-n", "a", "-m", "x")[1]["id"]
    assert cli("message", "visibility", "-n", "a", "-i", mid, "-t", "100")[1] == {"changed": True}
    assert cli("message", "requeue", "-n", "a", "-i", mid)[1] == {"requeued": 1}
    assert cli("message", "move", "-n", "a", "--to", "b", "--all")[1] == {"moved": 1}
    assert cli("message", "pop", "-n", "b")[1]["id"] == mid
    assert cli("message", "pop", "-n", "b")[1] == {}


def test_purge_and_delete_need_yes(cli, rsmq: RedisSMQ) -> None:
    cli("queue", "create", "-n", "jobs")
    cli("message", "send", "-n", "jobs", "-m", "x")
    code, out, err = cli("queue", "purge", "-n", "jobs")
    assert code == EXIT_ERROR and out is None and "--yes" in err
    assert rsmq.get_queue_attributes("jobs").msgs == 1
    assert cli("queue", "purge", "-n", "jobs", "--yes")[1] == {"purged": 1}
    assert cli("queue", "delete", "-n", "jobs", "--yes")[1] == {"deleted": "jobs"}
    assert rsmq.list_queues() == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["queue", "create", "-n", "bad name"], "invalidArgument: Invalid qname format"),
        (["queue", "create", "-n", "q", "--vt", "10000000"], "vt must be an integer between 0"),
        (["queue", "create", "-n", "q", "--maxsize", "5"], "maxsize must be between 1024 and"),
        (["queue", "describe", "-n", "nope"], "queueNotFound: Queue not found: nope"),
        (["message", "delete", "-n", "q", "-i", "short"], "Invalid id format"),
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_1(cli, argv: list[str], expected: str) -> None:
    code, out, err = cli(*argv)
    assert code == EXIT_ERROR
    assert out is None
    assert err.count("\n") == 1 and expected in err


def test_unreachable_redis_exits_3_with_redacted_url(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://user:hunter2@127.0.0.1:{free_port()}/0"
    assert main(["--url", url, "queue", "list"]) == EXIT_REDIS
    err = capsys.readouterr().err
    assert "hunter2" not in err and "redis://user:***@" in err and err.count("\n") == 1


def test_console_script_is_installed(redis_url: str, ns: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "queues.cli", "--url", redis_url, "--ns", ns, "queue", "list"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0 and json.loads(proc.stdout) == []


# -- message list with a filter (h22-filter) --------------------------------------------


def test_message_list_filters_by_json_fields(cli, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("jobs")
    ids = rsmq.send_messages(
        "jobs", ['{"amount": 150}', '{"amount": 5}', "text", '{"amount": 300, "k": "v"}']
    )
    code, out, _ = cli("message", "list", "-n", "jobs", "--where", "amount > 100")
    assert code == 0 and [m["id"] for m in out["items"]] == [ids[0], ids[3]]
    assert out["at_end"] is True and out["next"] is None
    code, out, _ = cli("message", "list", "-n", "jobs", "--where", "exists amount",
                       "--limit", "1")  # fmt: skip
    assert [m["id"] for m in out["items"]] == [ids[0]] and out["next"]
    code, rest, _ = cli("message", "list", "-n", "jobs", "--where", "exists amount",
                        "--after", out["next"])  # fmt: skip
    assert [m["id"] for m in rest["items"]] == [ids[1], ids[3]]
    code, out, _ = cli("message", "list", "-n", "jobs", "--where", "amount > 100",
                       "--search", '"k"', "--younger", "60")  # fmt: skip
    assert [m["id"] for m in out["items"]] == [ids[3]]
    code, out, _ = cli("message", "list", "-n", "jobs", "--older", "60")
    assert out["items"] == []


def test_message_list_refuses_a_bad_expression_with_its_position(cli, rsmq: RedisSMQ) -> None:
    rsmq.create_queue("jobs")
    code, out, err = cli("message", "list", "-n", "jobs", "--where", "amount >")
    assert code != 0 and out is None
    assert "position 9" in err and "where" in err
