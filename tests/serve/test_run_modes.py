"""Where ./run puts demo data, and what it refuses: real processes from a fresh clone."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import redis
from support.served import processes_in, request, run_env, start

pytestmark = pytest.mark.slow

KEY = "a-real-secret-key-" + "k" * 50


def test_on_a_real_redis_it_seeds_nothing_and_asks_for_createsuperuser(
    clone: Path, redis_url: str, ns: str
) -> None:
    namespaces = f"{ns}a,{ns}b"
    console = start(
        clone, "--no-celery", log_name="real.log",
        RSMQ_REDIS_URL=redis_url, RSMQ_NAMESPACE=namespaces, SECRET_KEY=KEY,
    )  # fmt: skip
    try:
        console.wait_ready()
        r = redis.Redis.from_url(redis_url)
        assert r.keys(f"{ns}*") == []  # no demo queues, in no namespace
        r.close()
        assert "createsuperuser" in console.output()
        assert "Log in as admin" not in console.output()
        assert not (clone / ".data" / "redis").exists()  # no embedded Redis started
    finally:
        assert console.stop() == 0
    assert processes_in(clone) == []


def test_with_debug_off_and_no_secret_key_a_real_redis_is_refused_in_one_line(
    clone: Path, redis_url: str
) -> None:
    done = subprocess.run(
        [str(clone / "run"), "127.0.0.1:0"], cwd=clone, env=run_env(RSMQ_REDIS_URL=redis_url),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("rsmq-console: DEBUG is off and SECRET_KEY is unset")
    ), done.stderr
    assert processes_in(clone) == []


def test_a_redis_that_does_not_answer_is_one_line_not_a_traceback(clone: Path) -> None:
    done = subprocess.run(
        [str(clone / "run"), "127.0.0.1:0"], cwd=clone,
        env=run_env(RSMQ_REDIS_URL="redis://127.0.0.1:1/0", SECRET_KEY=KEY),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "rsmq-console: Redis at redis://127.0.0.1:1/0 does not answer" in done.stderr


def test_a_wrong_redis_password_is_one_line_not_a_traceback(clone: Path, redis_url: str) -> None:
    r = redis.Redis.from_url(redis_url)
    r.execute_command("ACL", "SETUSER", "console", "on", ">right", "~*", "+@all")
    url = redis_url.replace("redis://", "redis://console:wrong@")
    done = subprocess.run(
        [str(clone / "run"), "127.0.0.1:0"], cwd=clone,
        env=run_env(RSMQ_REDIS_URL=url, SECRET_KEY=KEY),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    r.execute_command("ACL", "DELUSER", "console")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "wrong" not in done.stderr
    assert "refused the login" in done.stderr.strip().splitlines()[-1]


def test_a_bad_configuration_is_one_line_each_and_nothing_starts(clone: Path) -> None:
    conns = '[{"name": "Prod EU", "url": "http://:pw@h/0"}]'
    done = subprocess.run(
        [str(clone / "run"), "127.0.0.1:0"], cwd=clone,
        env=run_env(RSMQ_CONNECTIONS=conns, SECRET_KEY=KEY),
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and ":pw@" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if "rsmq.E001" in line]) == 2
    assert processes_in(clone) == []


def test_the_embedded_redis_seeds_the_first_of_several_namespaces(clone: Path) -> None:
    console = start(clone, "--no-celery", log_name="ns.log", RSMQ_NAMESPACE="one,two")
    try:
        console.wait_ready()
        r = redis.Redis(port=console.redis_port, decode_responses=True)
        assert "emails" in r.smembers("one:QUEUES")
        assert r.keys("one,two:*") == [] and r.keys("two:*") == []
        r.close()
        assert "Log in as admin / admin" in console.output()
    finally:
        assert console.stop() == 0
    assert processes_in(clone) == []


def test_run_killed_with_sigkill_leaves_no_orphan(clone: Path) -> None:
    console = start(clone, log_name="kill9.log")
    try:
        console.wait_ready()
        assert len(processes_in(clone)) >= 5
        console.process.kill()  # ./run itself, no chance to stop anything
        console.process.wait()
        deadline = time.monotonic() + 30
        while processes_in(clone) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert processes_in(clone) == [], [p.cmdline() for p in processes_in(clone)]
    finally:
        console.stop()


def test_served_on_all_addresses_it_answers_other_host_names(clone: Path) -> None:
    console = start(clone, "--no-celery", log_name="any.log", host="0.0.0.0")
    try:
        console.wait_ready()
        page = request(console.port, "/login/", headers={"Host": "console.example.com:9000"})
        assert page.status == 200
        assert "answering any host name" in console.output()
    finally:
        assert console.stop() == 0
