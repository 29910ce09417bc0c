"""The core's tests: ``cli``, the ``rsmq`` command line run in-process on the test Redis
and namespace (test_cli.py, test_failures_cli.py, test_dead_letter.py, test_send_at.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from queues.cli import main


@pytest.fixture
def cli(
    redis_url: str, ns: str, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, object, str]]:
    """``cli(*argv)``: queues.cli.main run in-process -> (exit code, JSON out, stderr)."""

    def run(*argv: str) -> tuple[int, object, str]:
        code = main(["--url", redis_url, "--ns", ns, *argv])
        out, err = capsys.readouterr()
        return code, json.loads(out) if out.strip() else None, err

    return run
