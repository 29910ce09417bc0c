from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from queues.server import EmbeddedRedis, port_is_free

from .demo import DEMO_PASSWORD, DEMO_USER

# A stable port, so `rsmq --url redis://127.0.0.1:6389/0 …` works from another terminal.
EMBEDDED_PORT = 6389


class Command(BaseCommand):
    help = (
        "Run the whole console: the embedded redis-server (unless RSMQ_REDIS_URL is set), "
        "migrations, demo data and a login, the Celery worker and beat, and the web server."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-demo", action="store_true", help="skip the demo data")
        parser.add_argument(
            "--no-celery", action="store_true", help="no Celery worker and beat: no snapshots"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # SIGTERM (docker stop, kill) shuts down like Ctrl-C: redis-server saves and stops.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        embedded = None
        celery: list[subprocess.Popen[bytes]] = []
        if not os.environ.get("RSMQ_REDIS_URL"):
            port = EMBEDDED_PORT if port_is_free(EMBEDDED_PORT) else None
            embedded = EmbeddedRedis(settings.DATA_DIR / "redis", port=port, persist=True)
            embedded.start()
            self._use_redis(embedded.url)
            self.stdout.write(f"embedded redis-server: {embedded.url}, data in {embedded.data_dir}")
        try:
            call_command("migrate", interactive=False, verbosity=0)
            if not options["no_demo"]:
                call_command("demo")
            host, _, port = options["addrport"].rpartition(":")
            self.stdout.write(
                self.style.SUCCESS(
                    f"\n  RSMQ Console: http://{host or '127.0.0.1'}:{port}/"
                    f"\n  Log in as {DEMO_USER} / {DEMO_PASSWORD}"
                    "  (also operator / operator and viewer / viewer)\n"
                )
            )
            if not options["no_celery"]:
                celery = start_celery()
            call_command("runserver", options["addrport"], use_reloader=False)
        finally:
            # The worker and beat first: the worker finishes its task while Redis is up.
            stop(celery)
            if embedded:
                embedded.stop()

    @staticmethod
    def _use_redis(url: str) -> None:
        os.environ["RSMQ_REDIS_URL"] = url
        settings.RSMQ_REDIS_URL = url
        for conn in settings.RSMQ_CONNECTIONS:
            if conn["name"] == "default":
                conn["url"] = url


def start_celery() -> list[subprocess.Popen[bytes]]:
    """The Celery worker and beat as child processes, on this process's settings."""
    env = {
        **os.environ,
        # The connections as this process has them (the embedded Redis's URL included).
        "RSMQ_CONNECTIONS": json.dumps(settings.RSMQ_CONNECTIONS),
        # DEBUG keeps every SQL query in memory: a worker that runs for days must not.
        "DEBUG": "0",
    }
    celery = [sys.executable, "-m", "celery", "--app", "dashboard"]
    beat_file = settings.CELERY_BEAT_SCHEDULE_FILENAME
    return [
        # solo: one task at a time is plenty for a snapshot every few seconds.
        subprocess.Popen([*celery, "worker", "--pool", "solo", "--loglevel", "INFO"], env=env),
        subprocess.Popen([*celery, "beat", "--loglevel", "INFO", "--schedule", beat_file], env=env),
    ]


def stop(processes: list[subprocess.Popen[bytes]], timeout: float = 15) -> None:
    """SIGTERM (Celery's warm shutdown), then SIGKILL for any still there after ``timeout``.

    On Ctrl-C the terminal has already sent them SIGINT, which they take the same way.
    """
    for p in processes:
        if p.poll() is None:
            p.terminate()
    for p in processes:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
