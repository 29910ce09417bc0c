from __future__ import annotations

import os
import signal
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
        "migrations, demo data and a login, and the web server."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-demo", action="store_true", help="skip the demo data")

    def handle(self, *args: Any, **options: Any) -> None:
        # SIGTERM (docker stop, kill) shuts down like Ctrl-C: redis-server saves and stops.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        embedded = None
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
            call_command("runserver", options["addrport"], use_reloader=False)
        finally:
            if embedded:
                embedded.stop()

    @staticmethod
    def _use_redis(url: str) -> None:
        os.environ["RSMQ_REDIS_URL"] = url
        settings.RSMQ_REDIS_URL = url
        for conn in settings.RSMQ_CONNECTIONS:
            if conn["name"] == "default":
                conn["url"] = url
