"""The management commands: `rsmq` (the CLI on the console's Redis) and `demo`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from queues import RedisSMQ

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def console_redis(settings, redis_url: str, ns: str) -> None:
    settings.RSMQ_CONNECTIONS = [{"name": "default", "url": redis_url, "namespaces": [ns]}]


def test_manage_py_rsmq_uses_the_consoles_redis_and_namespace(
    console_redis, rsmq: RedisSMQ, capsys: pytest.CaptureFixture[str]
) -> None:
    rsmq.create_queue("jobs")
    call_command("rsmq", "queue", "list")
    assert json.loads(capsys.readouterr().out) == ["jobs"]


def test_manage_py_rsmq_reports_errors_with_the_rsmq_exit_code(console_redis) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError) as err:
        call_command("rsmq", "queue", "describe", "-n", "missing")
    assert err.value.returncode == 1


def test_demo_creates_queues_in_every_state_and_one_login_per_role(
    console_redis, rsmq: RedisSMQ
) -> None:
    call_command("demo")
    stats = {s.qname: s for s in rsmq.queue_stats()}
    assert {"emails", "orders", "webhooks", "reports", "thumbnails"} <= set(stats)
    assert sum(s.visible for s in stats.values()) > 0
    assert sum(s.inflight for s in stats.values()) > 0
    assert sum(s.delayed for s in stats.values()) > 0
    poison = rsmq.browse("webhooks", min_rc=3)
    assert poison.items, "some messages were received several times"
    for role in ("admin", "operator", "viewer"):
        user = authenticate(username=role, password=role)
        assert user is not None and user.groups.filter(name=role).exists()


def test_demo_is_idempotent(console_redis, rsmq: RedisSMQ) -> None:
    call_command("demo")
    before = rsmq.get_queue_attributes("emails").totalsent
    call_command("demo")
    assert rsmq.get_queue_attributes("emails").totalsent == before


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("--threads", "0", "argument --threads: must be a whole number from 1 to 64, not '0'"),
        ("--workers", "x", "argument --workers: must be a whole number from 1 to 64, not 'x'"),
        (
            "--redis-port", "70000",
            "argument --redis-port: must be a whole number from 1 to 65535, not '70000'",
        ),
    ],
)  # fmt: skip
def test_console_refuses_a_bad_number_in_one_line_naming_the_option_and_range(
    option: str, value: str, error: str
) -> None:
    """./run's options (it hands them to manage.py console): checked before anything starts."""
    done = subprocess.run(
        [sys.executable, "manage.py", "console", option, value],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"manage.py console: error: {error}"


@pytest.mark.parametrize(
    ("cores", "workers", "threads"), [(None, 2, 4), (1, 2, 4), (2, 2, 4), (4, 4, 2), (16, 8, 2)]
)
def test_run_serves_one_process_a_core_and_8_page_threads_by_default(
    monkeypatch: pytest.MonkeyPatch, cores: int | None, workers: int, threads: int
) -> None:
    """docs/running.md: one process a core (2 to 8), 8 Django threads in all (2 at least
    a process); ./run's --workers / --threads override them."""
    from dashboard.management.commands.console import web_argv
    from dashboard.serving import defaults as serving

    monkeypatch.setattr(serving.os, "cpu_count", lambda: cores)
    assert (serving.default_workers(), serving.default_threads(workers)) == (workers, threads)
    argv = web_argv("127.0.0.1", 8000, {"dev": False, "workers": serving.default_workers()})
    assert argv[argv.index("--workers") + 1] == str(workers)
