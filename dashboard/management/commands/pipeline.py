from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dashboard.analytics import runs as pipeline_runs


class Command(BaseCommand):
    help = (
        "Run a Spark pipeline job and load its results for the console: `rollups` (the "
        "snapshot lake into hourly rollups and anomaly flags) or `census` (every message "
        "of the configured namespaces, read from Redis without changing them)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("job", choices=pipeline_runs.JOBS)
        parser.add_argument(
            "--master", help="Spark master URL (default RSMQ_SPARK_MASTER, local[*])"
        )
        parser.add_argument(
            "--full", action="store_true", help="rollups: roll the whole lake up again"
        )
        parser.add_argument("--connection", help="census: only this configured connection")
        parser.add_argument("--namespace", help="census: only this namespace")
        parser.add_argument(
            "--queue", action="append", default=[], help="census: only this queue (repeatable)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["job"] == "rollups":
                result = pipeline_runs.run_rollups(options["master"], full=options["full"])
            else:
                result = pipeline_runs.run_census(
                    options["master"], options["connection"], options["namespace"],
                    options["queue"],
                )  # fmt: skip
        except pipeline_runs.PipelineError as e:
            raise CommandError(str(e)) from None
        self.stdout.write(json.dumps(result))
