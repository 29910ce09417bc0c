"""rsmqctl's command lines (its README, keithsharp/rsmqctl, and seed 003) typed with `rsmq`
in its place: each line run as typed by a shell (`bash -c`), against the test Redis, its
JSON keys compared with what rsmqctl documents (ours may add keys). Then rsmqctl 1.0.0
itself, from PyPI in a virtualenv of its own, runs the same lines on the same Redis, and
its JSON keys are compared with ours (the best proof of a drop-in).

rsmqctl's lines name no Redis (its default: localhost:6379) or `redis://localhost:6379`:
the test Redis's port (and a database of the test's own) goes in their place, and for the
lines that name none, REDIS_URL — rsmqctl's own way to say it."""

from __future__ import annotations

import json
import os
import subprocess
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from queues.server import EmbeddedRedis

ROOT = Path(__file__).resolve().parents[2]
DB = 13  # ours; rsmqctl's own runs use DB + 1

# What rsmqctl's README prints (its JSON keys), line by line.
DESCRIBE_KEYS = {
    "vt", "delay", "maxsize", "totalrecv", "totalsent", "created", "modified", "msgs",
    "hiddenmsgs",
}  # fmt: skip
RECEIVE_KEYS = {"id", "message", "rc", "ts"}


class Shell:
    """Runs a README line as typed, with `rsmqctl` → the given command."""

    def __init__(self, program: str, port: int, db: int, env: dict[str, str]) -> None:
        self.program, self.port, self.db, self.env = program, port, db, env

    def url(self) -> str:
        return f"redis://localhost:{self.port}/{self.db}"

    def __call__(self, line: str, redis_url_env: bool = True) -> subprocess.CompletedProcess[str]:
        typed = line.replace("rsmqctl", self.program)
        typed = typed.replace("redis://localhost:6379", self.url())
        env = dict(self.env)
        if redis_url_env:
            env["REDIS_URL"] = self.url()  # the lines that name no Redis
        return subprocess.run(
            ["bash", "-c", typed], capture_output=True, text=True, env=env, timeout=60
        )


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RSMQ_", "REDIS_"))}
    env["PYTHONPATH"] = str(ROOT)  # this tree's queues/, not the venv's install
    env["RSMQ_DATA_DIR"] = "/nonexistent-rsmq-data"  # no ./run's Redis found by accident
    return env


@pytest.fixture
def flushed(redis_server: EmbeddedRedis) -> Iterator[int]:
    client = redis.Redis(port=redis_server.port)
    for db in (DB, DB + 1):
        client.select(db)
        client.flushdb()
    client.select(0)
    yield redis_server.port
    for db in (DB, DB + 1):
        client.select(db)
        client.flushdb()
    client.close()


@pytest.fixture
def rsmq_sh(flushed: int) -> Shell:
    return Shell(str(ROOT / ".venv" / "bin" / "rsmq"), flushed, DB, base_env())


def out_json(done: subprocess.CompletedProcess[str]) -> object:
    assert done.returncode == 0, (done.args, done.stderr)
    return json.loads(done.stdout)


def readme_session(sh: Shell) -> dict[str, object]:
    """rsmqctl's README, top to bottom (seed 003's lines where they differ); returns what
    each JSON-printing line printed."""
    got: dict[str, object] = {}
    got["list empty"] = out_json(sh("rsmqctl queue list"))
    created = sh("rsmqctl queue create -n test-queue")
    assert created.returncode == 0, created.stderr
    got["create"] = created.stdout.strip()
    assert sh("rsmqctl queue create -n another-queue").returncode == 0
    got["list"] = out_json(sh("rsmqctl queue list"))
    got["describe"] = out_json(sh("rsmqctl queue describe -n test-queue"))
    sent = sh('rsmqctl message send -n test-queue -m "Hello, World"')
    assert sent.returncode == 0, sent.stderr
    got["send"] = sent.stdout.strip()
    got["receive"] = received = out_json(sh("rsmqctl message receive -n test-queue"))
    assert isinstance(received, dict)
    mid = received["id"]
    shown = sh(f"rsmqctl message visibility -n test-queue -i {mid} -t 600")
    assert shown.returncode == 0, shown.stderr
    got["visibility"] = shown.stdout.strip()
    deleted = sh(f"rsmqctl message delete -n test-queue -i {mid}")
    assert deleted.returncode == 0, deleted.stderr
    got["delete"] = deleted.stdout.strip()
    assert sh('rsmqctl message send -n test-queue -m "Hello, World"').returncode == 0
    got["pop"] = out_json(sh("rsmqctl message pop -n test-queue"))
    got["describe after"] = out_json(sh("rsmqctl queue describe -n test-queue"))
    # the Redis lines: -r, and REDIS_URL in the environment (none from the test)
    got["-r"] = out_json(sh('rsmqctl -r "redis://localhost:6379" queue list', False))
    got["REDIS_URL"] = out_json(sh('REDIS_URL="redis://localhost:6379" rsmqctl queue list', False))
    return got


def test_every_readme_line_works_with_rsmq(rsmq_sh: Shell) -> None:
    got = readme_session(rsmq_sh)
    assert got["list empty"] == []
    assert got["list"] == ["another-queue", "test-queue"]
    describe = got["describe"]
    assert isinstance(describe, dict) and DESCRIBE_KEYS <= describe.keys()
    assert (describe["vt"], describe["delay"], describe["msgs"], describe["hiddenmsgs"]) == (
        30, 0, 0, 0
    )  # fmt: skip
    # send: rsmqctl prints the bare id, we print {"id": …} (the JSON every verb prints)
    sent = json.loads(str(got["send"]))
    assert list(sent) == ["id"] and len(sent["id"]) == 32
    for key in ("receive", "pop"):
        message = got[key]
        assert isinstance(message, dict) and RECEIVE_KEYS <= message.keys()
        assert message["message"] == "Hello, World" and message["rc"] == 1
        assert isinstance(message["ts"], int) and message["ts"] == int(message["sent"])
    assert isinstance(got["receive"], dict) and got["receive"]["id"] == sent["id"]
    after = got["describe after"]
    assert isinstance(after, dict)
    assert (after["totalsent"], after["totalrecv"], after["msgs"]) == (2, 2, 0)
    assert got["-r"] == got["REDIS_URL"] == ["another-queue", "test-queue"]
    # what rsmqctl prints as text or not at all, we print as JSON (docs/cli.md's table)
    assert json.loads(str(got["create"])) == {"created": "test-queue"}
    assert json.loads(str(got["visibility"])) == {"changed": True}
    assert json.loads(str(got["delete"])) == {"deleted": 1}


def test_queue_delete_asks_for_yes_in_one_line(rsmq_sh: Shell) -> None:
    assert rsmq_sh("rsmqctl queue create -n test-queue").returncode == 0
    asked = rsmq_sh("rsmqctl queue delete -n test-queue")
    assert asked.returncode == 1 and asked.stdout == ""
    assert asked.stderr.count("\n") == 1 and "--yes" in asked.stderr
    assert out_json(rsmq_sh("rsmqctl queue list")) == ["test-queue"]
    assert rsmq_sh("rsmqctl queue delete -n test-queue --yes").returncode == 0
    assert out_json(rsmq_sh("rsmqctl queue list")) == []


def test_verbose_prints_the_traceback(rsmq_sh: Shell) -> None:
    quiet = rsmq_sh("rsmqctl queue describe -n nosuch")
    loud = rsmq_sh("rsmqctl -v queue describe -n nosuch")
    assert quiet.returncode == loud.returncode == 1
    assert "Traceback" not in quiet.stderr and quiet.stderr.count("\n") == 1
    assert "Traceback (most recent call last)" in loud.stderr and "nosuch" in loud.stderr
    assert rsmq_sh("rsmqctl --verbose queue list").returncode == 0


def test_the_redis_url_precedence_is_the_helps(rsmq_sh: Shell, flushed: int) -> None:
    """-r/--redis-url/--url, then RSMQ_REDIS_URL, then REDIS_URL: as --help says."""
    bad = f"redis://127.0.0.1:{flushed}/{DB + 1}"  # another database: no queues there
    assert rsmq_sh("rsmqctl queue create -n test-queue").returncode == 0
    good = rsmq_sh.url()
    lines = {
        f"REDIS_URL={bad} rsmqctl --redis-url {good} queue list": ["test-queue"],
        f"REDIS_URL={bad} RSMQ_REDIS_URL={bad} rsmqctl --url {good} queue list": ["test-queue"],
        f"REDIS_URL={bad} RSMQ_REDIS_URL={good} rsmqctl queue list": ["test-queue"],
        f"REDIS_URL={good} RSMQ_REDIS_URL={bad} rsmqctl queue list": [],
    }
    for line, expected in lines.items():
        assert out_json(rsmq_sh(line, redis_url_env=False)) == expected, line
    helped = " ".join(rsmq_sh("rsmqctl --help").stdout.split())
    assert "-r URL, --redis-url URL, --url URL" in helped
    order = [helped.index(w) for w in ("RSMQ_REDIS_URL", "REDIS_URL (rsmqctl", "embedded")]
    assert order == sorted(order), helped


# -- rsmqctl itself, beside us ---------------------------------------------------------


@pytest.fixture(scope="session")
def rsmqctl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rsmqctl 1.0.0 from PyPI, in a virtualenv of its own (never the project's)."""
    where = tmp_path_factory.mktemp("rsmqctl-venv")
    venv.create(where, with_pip=True)
    done = subprocess.run(
        [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", "rsmqctl==1.0.0"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return where / "bin" / "rsmqctl"


@pytest.mark.slow
def test_rsmqctl_and_rsmq_print_the_same_keys(rsmqctl: Path, rsmq_sh: Shell) -> None:
    env = {k: v for k, v in base_env().items() if k != "PYTHONPATH"}
    theirs_sh = Shell(str(rsmqctl), rsmq_sh.port, DB + 1, env)
    theirs, ours = readme_session(theirs_sh), readme_session(rsmq_sh)
    assert theirs.keys() == ours.keys()
    for line, their_out in theirs.items():
        our_out = ours[line]
        if line in ("create", "visibility", "delete"):  # text or nothing from rsmqctl
            continue
        if isinstance(their_out, dict):
            assert their_out.keys() <= our_out.keys(), line  # type: ignore[union-attr]
        elif isinstance(their_out, list):
            assert their_out == our_out, line
        else:  # send: their bare id, our {"id": …}
            assert json.loads(str(our_out))["id"].__len__() == len(str(their_out)) == 32
    # and each reads the other's data: rsmqctl describes the queue we made and fed, we
    # describe the one it made and fed, each the same as its maker does
    for maker, reader, db in ((ours, theirs_sh, DB), (theirs, rsmq_sh, DB + 1)):
        reader.db = db
        seen = out_json(reader("rsmqctl queue describe -n test-queue"))
        made = maker["describe after"]
        assert isinstance(seen, dict) and isinstance(made, dict)
        assert {k: int(seen[k]) for k in DESCRIBE_KEYS} == {k: int(made[k]) for k in DESCRIBE_KEYS}


def test_rsmqctls_long_flags_work_too(rsmq_sh: Shell) -> None:
    """Its --help's long forms (its README types the short ones)."""
    line = "rsmqctl queue create --name q --visibility-timeout 45 --delay 0 --maxsize 2048"
    assert rsmq_sh(line).returncode == 0
    described = out_json(rsmq_sh("rsmqctl queue describe --name q"))
    assert isinstance(described, dict)
    assert (described["vt"], described["maxsize"]) == (45, 2048)
    sent = out_json(rsmq_sh('rsmqctl message send --name q --message "Hi" --delay 0'))
    assert isinstance(sent, dict)
    got = out_json(rsmq_sh("rsmqctl message receive --name q --visibility-timeout 100"))
    assert isinstance(got, dict) and got["id"] == sent["id"]
    line = f"rsmqctl message visibility --name q --message-id {got['id']} --visibility-timeout 0"
    assert out_json(rsmq_sh(line)) == {"changed": True}
    line = f"rsmqctl message delete --name q --message-id {got['id']}"
    assert out_json(rsmq_sh(line)) == {"deleted": 1}
