from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.places.connections import connections
from queues import cli


class Command(BaseCommand):
    help = "The rsmq command line (see `rsmq --help`), on the console's Redis and namespace."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("args", nargs="*", help="rsmq arguments, e.g. queue list")

    def run_from_argv(self, argv: list[str]) -> None:
        # Hand everything after `rsmq` to the rsmq parser untouched (its own --help too).
        raise SystemExit(self._run(argv[2:]))

    def handle(self, *args: str, **options: Any) -> None:
        code = self._run(list(args))
        if code:
            raise CommandError(f"rsmq exited with {code}", returncode=code)

    @staticmethod
    def _run(argv: list[str]) -> int:
        defaults = []
        if not any(a == "--url" or a.startswith("--url=") for a in argv):
            defaults += ["--url", connections()[0].url]
        if not any(a == "--ns" or a.startswith("--ns=") for a in argv):
            # The first configured namespace: RSMQ_NAMESPACE="a,b" is two, not one.
            defaults += ["--ns", connections()[0].namespaces[0]]
        return cli.main(defaults + argv)
