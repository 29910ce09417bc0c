"""The embedded Redis: a stable port, an append-only file, and found by every command."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from queues.server import EmbeddedRedis, default_redis_url, free_port, port_is_free

ROOT = Path(__file__).resolve().parents[2]


def test_a_port_in_time_wait_is_free_to_listen_on() -> None:
    port = free_port()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen()
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = server.accept()
    assert not port_is_free(port)  # listening
    accepted.close()  # the server side closes first: its port goes to TIME_WAIT
    server.close()
    time.sleep(0.1)
    client.close()
    assert port_is_free(port)


def test_persisting_uses_an_append_only_file_synced_every_second(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path, persist=True, aof=True).start()
    try:
        r = redis.Redis(port=server.port, decode_responses=True)
        assert r.config_get("appendonly") == {"appendonly": "yes"}
        assert r.config_get("appendfsync") == {"appendfsync": "everysec"}
        r.set("k", "kept")
        time.sleep(1.5)  # one fsync later
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        server.start()
        assert r.get("k") == "kept"
        r.close()
    finally:
        server.stop()


def test_a_data_dir_with_only_an_rdb_file_is_loaded_then_kept_as_aof(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as old:
        r = redis.Redis(port=old.port)
        r.set("k", "from rdb")
        r.save()
        r.close()
    assert (tmp_path / "dump.rdb").exists()
    with EmbeddedRedis(tmp_path, persist=True, aof=True) as server:
        r = redis.Redis(port=server.port, decode_responses=True)
        assert r.get("k") == "from rdb"
        assert r.config_get("appendonly") == {"appendonly": "yes"}
        r.close()
    assert (tmp_path / "appendonly.aof").exists()


def test_default_redis_url_is_rsmq_redis_url_when_set(monkeypatch, capsys) -> None:
    monkeypatch.setenv("RSMQ_REDIS_URL", "redis://elsewhere:6379/3")
    assert default_redis_url() == "redis://elsewhere:6379/3"
    assert capsys.readouterr().err == ""


def test_default_redis_url_finds_the_embedded_redis_of_run(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("RSMQ_REDIS_URL", raising=False)
    monkeypatch.setenv("RSMQ_DATA_DIR", str(tmp_path))
    (tmp_path / "redis.url").write_text("redis://127.0.0.1:6389/0\n")
    assert default_redis_url() == "redis://127.0.0.1:6389/0"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the embedded Redis of ./run" in err[0]


def test_default_redis_url_without_run_says_so(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("RSMQ_REDIS_URL", raising=False)
    monkeypatch.setenv("RSMQ_DATA_DIR", str(tmp_path / "nothing"))
    monkeypatch.setattr("queues.server._announced", set())
    assert default_redis_url() == "redis://127.0.0.1:6379/0"
    assert "RSMQ_REDIS_URL is unset and no ./run is running" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command",
    [
        [str(ROOT / ".venv/bin/rsmq"), "queue", "list"],
        [sys.executable, "manage.py", "rsmq", "queue", "list"],
    ],
    ids=["rsmq", "manage.py rsmq"],
)
def test_commands_use_the_embedded_redis_of_run_and_say_which(
    command: list[str], redis_server: EmbeddedRedis, ns: str, tmp_path: Path
) -> None:
    (tmp_path / "redis.url").write_text(redis_server.url + "\n")
    r = redis.Redis(port=redis_server.port)
    r.sadd(f"{ns}:QUEUES", "found")
    r.close()
    env = {"PATH": "/usr/bin:/bin", "RSMQ_DATA_DIR": str(tmp_path), "RSMQ_NAMESPACE": ns}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '["found"]'
    assert f"Redis: {redis_server.url}, the embedded Redis of ./run" in done.stderr
