"""`rsmq worker MODULE:WORKER`: run a Worker, in one process or several."""

from __future__ import annotations

import argparse
import importlib
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from .server import default_redis_url
from .worker import JsonFormatter, TextFormatter, Worker


def load(target: str) -> Worker:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise SystemExit(f"rsmq: error: worker target must be MODULE:ATTRIBUTE, not {target!r}")
    sys.path.insert(0, os.getcwd())
    try:
        worker = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise SystemExit(f"rsmq: error: cannot load {target}: {e}") from None
    if not isinstance(worker, Worker):
        raise SystemExit(f"rsmq: error: {target} is a {type(worker).__name__}, not a Worker")
    return worker


def _logging(fmt: str, level: str) -> None:
    handler = logging.StreamHandler()
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            TextFormatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
        )
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def _child(target: str, url: str | None, ns: str | None, fmt: str, level: str) -> None:
    _logging(fmt, level)
    worker = load(target)
    try:
        worker.configure(url, ns)
    except RuntimeError:
        raise SystemExit(
            f"rsmq: error: {target} was made with its own RSMQ client: drop --url / --ns"
        ) from None
    worker.run()
    # Handlers given up on (timed out, or still running after the grace period) were
    # released: their messages are visible again. Don't wait for their threads.
    logging.shutdown()
    os._exit(0)


def run_workers(args: argparse.Namespace) -> int:
    if args.processes < 1:
        print("rsmq: error: --processes must be at least 1", file=sys.stderr)
        return 1
    worker = load(args.target)  # fail fast, in the parent, on a bad target
    if worker.client is not None and (args.url or args.ns):
        print(
            f"rsmq: error: {args.target} was made with its own RSMQ client: drop --url / --ns",
            file=sys.stderr,
        )
        return 1
    if worker.client is None and not (args.url or worker.url):  # the children inherit it
        os.environ["RSMQ_REDIS_URL"] = default_redis_url()
    spec = (args.target, args.url, args.ns, args.log_format, args.log_level)
    if args.processes == 1:
        _child(*spec)
        return 0
    ctx = multiprocessing.get_context("spawn")
    children = [
        ctx.Process(target=_child, args=spec, name=f"rsmq-worker-{i}")
        for i in range(args.processes)
    ]

    stopping: list[int] = []

    def forward(signum: int, _frame: Any) -> None:
        stopping.append(signum)
        for child in children:
            if child.pid is not None and child.is_alive():
                try:
                    os.kill(child.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass  # it ended between the check and the signal

    for child in children:
        child.start()
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for child in children:
        child.join()
    return exit_code([c.exitcode for c in children], stopped_by=stopping)


def exit_code(codes: list[int | None], stopped_by: Sequence[int] = ()) -> int:
    """0 if every child exited 0; else the first failure, a signal N as 128 + N (as shells do).

    A child ended by the very signal the parent forwarded (``stopped_by``) was stopped
    before it set its own handlers — still starting, so it had received nothing: that is
    a clean stop, not a failure."""
    for code in codes:
        if code is not None and code < 0 and -code in stopped_by:
            continue
        if code:
            return 128 - code if code < 0 else code
    return 0
