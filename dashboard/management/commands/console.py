"""`manage.py console`, what `./run` runs: the whole console as one supervised process tree.

Before anything starts, every address it needs is checked (the web address, the embedded
Redis's port, the data dir not in use by another ./run): a second ./run exits with one line
and starts nothing. Then: the embedded Redis (unless RSMQ_REDIS_URL names a real one),
migrations, static files, demo data on the embedded Redis only, and the children — the web
server (granian; `--dev`: runserver) and the Celery worker with beat in a thread of it —
each in a process group of its own. A child that dies is named with its exit in one line:
Redis and the worker are restarted (a few times at most), the web server is not —
everything stops and ./run exits non-zero, never leaving a half console behind. SIGINT and
SIGTERM stop the web server, the worker, then Redis, in that order, terminal or not.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from dashboard.management import demo
from dashboard.management.commands.demo import DEMO_PASSWORD, DEMO_USER, ensure_demo_login
from dashboard.serving.defaults import default_threads, default_workers
from queues import RedisSMQ
from queues.server import (
    EMBEDDED_PORT,
    URL_FILE,
    EmbeddedRedis,
    die_with_parent,
    port_is_free,
)
from queues.urls import redacted

# A child restarted this many times within RESTART_WINDOW seconds is given up on.
RESTART_LIMIT = 5
RESTART_WINDOW = 300.0
# Seconds each child gets to stop before SIGKILL: the worker finishes its task.
STOP_TIMEOUT = {"web": 15.0, "worker": 20.0}


class Stop(Exception):
    """A signal asked the console to stop."""


def say(line: str) -> None:
    print(f"rsmq-console: {line}", file=sys.stderr, flush=True)


def exit_reason(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


@dataclass
class Child:
    """A supervised child process: ``start`` makes a new one (in its own process group)."""

    name: str
    what: str
    start: Callable[[], subprocess.Popen[bytes]]
    restart: bool
    process: subprocess.Popen[bytes] | None = None
    restarts: deque[float] = field(default_factory=deque)

    def run(self) -> None:
        self.process = self.start()

    def may_restart(self) -> bool:
        now = time.monotonic()
        while self.restarts and now - self.restarts[0] > RESTART_WINDOW:
            self.restarts.popleft()
        if not self.restart or len(self.restarts) >= RESTART_LIMIT:
            return False
        self.restarts.append(now)
        return True

    def stop(self, timeout: float) -> None:
        """SIGTERM to the group, SIGKILL after ``timeout``; then nothing of it is left."""
        p = self.process
        if p is None:
            return
        signal_group(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            say(f"{self.what} still running after {timeout:.0f} s: killing it")
            signal_group(p.pid, signal.SIGKILL)
            p.wait()
        # Whatever it started and left behind in its group (a reloader, pool processes).
        signal_group(p.pid, signal.SIGKILL)


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is empty: all gone already


def spawn(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    # A group of its own: a terminal's Ctrl-C reaches only this process, which stops the
    # children in order; and a child is stopped with everything it started.
    return subprocess.Popen(
        argv, cwd=settings.BASE_DIR, env=env, stdin=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=die_with_parent,  # and never orphaned, even if this process is killed -9
    )  # fmt: skip


class Command(BaseCommand):
    # The console's own configuration check (dashboard/serving/checks.py) here; Django's
    # others run in the migrate command below, in a process of its own: they import every
    # view and route, which this process, supervising for days, never needs.
    requires_system_checks = ["rsmq"]
    help = (
        "Run the whole console: the embedded redis-server (unless RSMQ_REDIS_URL is set), "
        "migrations, demo data and a login, the Celery worker and beat, and the web server."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "addrport", nargs="?", default="127.0.0.1:8000", help="[HOST:]PORT to serve on"
        )
        parser.add_argument(
            "--dev", action="store_true", help="Django's runserver (reloads code), DEBUG on"
        )
        parser.add_argument(
            "--demo", action="store_true", help="demo queues and logins on a real Redis too"
        )
        parser.add_argument("--no-demo", action="store_true", help="skip the demo data")
        parser.add_argument(
            "--no-celery", action="store_true", help="no Celery worker and beat: no snapshots"
        )
        parser.add_argument(
            "--redis-port", type=between(1, 65535), default=EMBEDDED_PORT,
            help="the embedded Redis's port",
        )  # fmt: skip
        parser.add_argument(
            "--workers", type=between(1, 64), default=None,
            help=f"web server processes (default: one a core, 2 to 8: {default_workers()} here)",
        )  # fmt: skip
        parser.add_argument(
            "--threads", type=between(1, 64), default=None,
            help="threads running Django in each web process (default: 8 in all, at least 2)",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        options["workers"] = options["workers"] or default_workers()
        options["threads"] = options["threads"] or default_threads(options["workers"])
        self.stopping = False
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        host, port = parse_addrport(options["addrport"])
        embedded = self._embedded(options["redis_port"])
        self.children: list[Child] = []
        self.url_file: Path | None = None
        code = 1
        try:
            self._check(host, port, embedded)
            code = self._run(host, port, embedded, options)
        except Stop:
            code = 0
        except (DatabaseError, redis.RedisError, OSError, RuntimeError) as e:
            # The database, Redis or a port failing at start: one line, not a traceback.
            say(f"{type(e).__name__}: {' '.join(str(e).split())[:300]}: stopping everything")
        finally:
            self._stop_all(embedded)
        sys.exit(code)

    # -- before anything starts -------------------------------------------------------

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self.stopping:
            return  # already stopping, in order
        self.stopping = True
        raise Stop(signal.Signals(signum).name)

    def _embedded(self, redis_port: int) -> EmbeddedRedis | None:
        """The embedded Redis to start, or None when RSMQ_REDIS_URL names another."""
        data = settings.DATA_DIR / "redis"
        server = EmbeddedRedis(data, port=redis_port, persist=True, aof=True)
        url = os.environ.get("RSMQ_REDIS_URL")
        # The embedded Redis's own address (exported from an earlier ./run): start it.
        return server if not url or url == server.url else None

    def _check(self, host: str, port: int, embedded: EmbeddedRedis | None) -> None:
        """Everything that would stop the console, before it starts anything."""
        if not port_is_free(port, host):
            fail(f"{host}:{port} is in use (another ./run?): nothing started")
        self.lock = lock_data_dir(settings.DATA_DIR)
        if embedded and not port_is_free(embedded.port):
            fail(
                f"127.0.0.1:{embedded.port}, the embedded Redis's port, is in use: nothing "
                "started (--redis-port PORT for another)"
            )
        if embedded is None:
            url = settings.RSMQ_REDIS_URL
            try:
                ns = settings.RSMQ_NAMESPACE.split(",")[0] or "rsmq"  # a Cluster's: its slot
                with RedisSMQ(url=url, ns=ns, socket_timeout=3) as rsmq:
                    rsmq.redis.ping()
            except redis.AuthenticationError as e:
                fail(f"Redis at {redacted(url)} refused the login ({' '.join(str(e).split())})")
            except (redis.RedisError, ValueError) as e:
                fail(f"Redis at {redacted(url)} does not answer ({' '.join(str(e).split())})")
            if not settings.DEBUG and settings.SECRET_KEY == settings.INSECURE_SECRET_KEY:
                fail(
                    "DEBUG is off and SECRET_KEY is unset: set SECRET_KEY (a long random "
                    "string) to serve a real Redis, or run with --dev"
                )

    # -- running ------------------------------------------------------------------------

    def _run(
        self, host: str, port: int, embedded: EmbeddedRedis | None, options: dict[str, Any]
    ) -> int:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if embedded:
            self.children.append(
                Child("redis", "the embedded Redis", redis_starter(embedded), True)
            )
            self.children[-1].run()
            self.url_file = settings.DATA_DIR / URL_FILE
            self.url_file.write_text(embedded.url + "\n")
            use_redis(embedded.url)
            env["RSMQ_REDIS_URL"] = embedded.url
            say(f"embedded Redis: {embedded.url}, data in {embedded.data_dir} (append-only file)")
            if not settings.DEBUG and settings.SECRET_KEY == settings.INSECURE_SECRET_KEY:
                env["SECRET_KEY"] = settings.SECRET_KEY = kept_secret_key(settings.DATA_DIR)
        env["RSMQ_CONNECTIONS"] = json.dumps(settings.RSMQ_CONNECTIONS)
        if not os.environ.get("ALLOWED_HOSTS") and host not in ("127.0.0.1", "localhost"):
            # Served on another address: reached by names this process can't know.
            if host in ("0.0.0.0", "::"):
                env["ALLOWED_HOSTS"] = "*"
                say(f"on {host}, answering any host name: set ALLOWED_HOSTS to restrict it")
            else:
                env["ALLOWED_HOSTS"] = host

        manage = [sys.executable, str(settings.BASE_DIR / "manage.py")]
        if subprocess.run([*manage, "migrate", "--no-input", "-v", "0"], env=env).returncode:
            raise CommandError("manage.py migrate failed (above): nothing was started")
        if not options["dev"]:
            call_command("collectstatic", interactive=False, verbosity=0)
        demo_data = (embedded or options["demo"]) and not options["no_demo"]
        if demo_data:
            self._seed(embedded.url if embedded else None)

        celery = [sys.executable, "-m", "celery", "--app"]
        # DEBUG keeps every SQL query in memory: a worker that runs for days must not. The
        # system checks ran in migrate: the worker imports no view or route. Beat is a
        # thread of the one worker (dashboard/celery.py), not a process of its own.
        celery_env = dict(env, DEBUG="0", CELERY_SKIP_CHECKS="1", RSMQ_WORKER_BEAT="1")
        web_env = dict(env, RSMQ_WEB_THREADS=str(options["threads"]))
        # glibc gives each thread that allocates an arena of its own, kept for good: a web
        # process's Django threads would each hold one. Two are enough for a few threads.
        web_env.setdefault("MALLOC_ARENA_MAX", "2")
        web = Child(
            "web", "the web server", lambda: spawn(web_argv(host, port, options), web_env), False
        )
        self.children.insert(0, web)
        if not options["no_celery"]:
            # solo: one task at a time is plenty for a snapshot every few seconds.
            worker_argv = [*celery, "dashboard", "worker", "--pool", "solo", "--loglevel", "INFO"]
            start_worker = lambda: spawn(worker_argv, celery_env)  # noqa: E731
            self.children.insert(1, Child("worker", "the Celery worker", start_worker, True))
        for child in self.children:
            if child.process is None:
                child.run()
        url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/"
        if not wait_for(url + "healthz", web, timeout=60):
            code = web.process.poll() if web.process else None
            how = "did not answer in 60 s" if code is None else exit_reason(code)
            say(f"the web server {how}: stopping everything")
            return 1
        if demo_data:
            login = f"Log in as {DEMO_USER} / {DEMO_PASSWORD}  (also operator, viewer: the same)"
        elif not get_user_model().objects.filter(is_superuser=True).exists():
            login = "No demo logins on a real Redis: make one with `manage.py createsuperuser`"
        else:
            login = ""
        self.stdout.write(self.style.SUCCESS(f"\n  RSMQ Console: {url}\n  {login}\n"))
        self.stdout.flush()
        return self._supervise()

    def _seed(self, embedded_url: str | None) -> None:
        """Demo queues in the first namespace of the embedded Redis's connection (with
        --demo on a real Redis: of the first connection). RSMQ_NAMESPACE="a,b" is two."""
        conns = settings.RSMQ_CONNECTIONS
        if embedded_url:
            conns = [c for c in conns if c["url"] == embedded_url]
        if not conns:
            say("no connection is on the embedded Redis (RSMQ_CONNECTIONS): no demo queues")
            return
        conn = conns[0]
        namespaces = conn.get("namespaces") or ["rsmq"]
        with RedisSMQ(url=conn["url"], ns=namespaces[0]) as rsmq:
            created = demo.seed(rsmq)
        if created:
            say(f"demo queues created in namespace {namespaces[0]}: {', '.join(created)}")
        ensure_demo_login()

    def _supervise(self) -> int:
        while True:
            for child in self.children:
                assert child.process is not None
                code = child.process.poll()
                if code is None:
                    continue
                reason = f"{child.what} {exit_reason(code)}"
                if child.name == "redis" and code > 0:
                    reason += redis_log_tail(settings.DATA_DIR / "redis")
                if not child.may_restart():
                    how = "" if not child.restart else f" {RESTART_LIMIT} times in 5 min"
                    say(f"{reason}{how}: stopping everything")
                    return 1
                say(f"{reason}: restarting it ({len(child.restarts)}/{RESTART_LIMIT})")
                try:
                    child.run()
                except (RuntimeError, OSError) as e:
                    say(f"{child.what} did not start again ({str(e).splitlines()[0]}): stopping")
                    return 1
            time.sleep(0.5)

    # -- stopping -----------------------------------------------------------------------

    def _stop_all(self, embedded: EmbeddedRedis | None) -> None:
        # Web first (no new requests), then the worker (finishes its task while Redis is
        # up), and Redis last (it writes its append-only file on the way out).
        self.stopping = True
        running = [c for c in self.children if c.process and c.process.poll() is None]
        if running:
            say("stopping " + ", ".join(c.what for c in running))
        for child in self.children:
            if child.name != "redis":
                child.stop(STOP_TIMEOUT[child.name])
        if embedded:
            embedded.stop()
        if self.url_file:
            self.url_file.unlink(missing_ok=True)


def between(low: int, high: int) -> Callable[[str], int]:
    """An option's type: a whole number from ``low`` to ``high`` (else argparse's one-line
    error, naming the option and the range; never a traceback)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low} to {high}, not {text!r}"
            )
        return value

    return parse


def fail(reason: str) -> None:
    say(reason)
    sys.exit(1)


def parse_addrport(addrport: str) -> tuple[str, int]:
    host, _, port = addrport.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit():
        fail(f"{addrport!r} is not [HOST:]PORT")
    return host, int(port)


def lock_data_dir(data_dir: Path) -> IO[str]:
    """One ./run per data dir: two would write one Redis's files, one database and lake."""
    data_dir.mkdir(parents=True, exist_ok=True)
    lock = open(data_dir / "run.lock", "a+")  # noqa: SIM115 (held until the process exits)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        other = lock.read().strip() or "?"
        fail(f"another ./run (pid {other}) uses the data dir {data_dir}: nothing started")
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


def kept_secret_key(data_dir: Path) -> str:
    """A random SECRET_KEY made once and kept in the data dir (the embedded console's)."""
    path = data_dir / "secret_key"
    if path.exists():
        return path.read_text().strip()
    key = secrets.token_urlsafe(50)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    return key


def use_redis(url: str) -> None:
    """This process's settings on the embedded Redis (the children get it in env)."""
    os.environ["RSMQ_REDIS_URL"] = url
    settings.RSMQ_REDIS_URL = url
    for conn in settings.RSMQ_CONNECTIONS:
        if conn["name"] == "default":
            conn["url"] = url


def web_argv(host: str, port: int, options: dict[str, Any]) -> list[str]:
    if options["dev"]:
        return [sys.executable, "manage.py", "runserver", f"[{host}]:{port}" if ":" in host
                else f"{host}:{port}"]  # fmt: skip
    # granian: --workers processes, each reading requests in its event loop (a slow client
    # holds no thread) and running Django in --threads threads (dashboard/serving/app.py,
    # RSMQ_WEB_THREADS). A worker that dies is started
    # again; one that dies at start (a refused setting) stops granian. uvloop: the API's
    # plain calls are answered in the event loop (dashboard/serving/fast.py).
    header_ms = min(60_000, max(1, round(settings.RSMQ_HEADER_TIMEOUT * 1000)))
    return [
        sys.executable, "-m", "granian", "--interface", "asgi", "dashboard.asgi:application",
        "--host", host, "--port", str(port), "--workers", str(options["workers"]),
        "--http1-header-read-timeout", str(header_ms), "--no-ws", "--loop", "uvloop",
        "--respawn-failed-workers", "--workers-kill-timeout", "10",
    ]  # fmt: skip


def redis_starter(embedded: EmbeddedRedis) -> Callable[[], subprocess.Popen[bytes]]:
    def start() -> subprocess.Popen[bytes]:
        embedded.start()
        assert embedded.process is not None
        return embedded.process

    return start


def wait_for(url: str, web: Child, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if web.process is not None and web.process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            time.sleep(0.2)
    return False


def redis_log_tail(data_dir: Path) -> str:
    try:
        lines = (data_dir / "redis.log").read_text().strip().splitlines()
    except OSError:
        return ""
    return f" (redis.log: {lines[-1].strip()})" if lines else ""
