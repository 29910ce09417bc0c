"""`rsmq worker MODULE:WORKER`: run a Worker, in one process or several."""

from __future__ import annotations

import argparse
import importlib
import logging
import multiprocessing
import os
import signal
import sys
from typing import Any

from .worker import JsonFormatter, Worker


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
            logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
        )
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)


def _child(target: str, url: str, ns: str, fmt: str, level: str) -> None:
    _logging(fmt, level)
    worker = load(target)
    if worker._rsmq is None:
        worker.configure(url, ns)
    worker.run()
    # Handlers given up on (timed out, or still running after the grace period) were
    # released: their messages are visible again. Don't wait for their threads.
    logging.shutdown()
    os._exit(0)


def run_workers(args: argparse.Namespace) -> int:
    if args.processes < 1:
        print("rsmq: error: --processes must be at least 1", file=sys.stderr)
        return 1
    load(args.target)  # fail fast, in the parent, on a bad target
    spec = (args.target, args.url, args.ns, args.log_format, args.log_level)
    if args.processes == 1:
        _child(*spec)
        return 0
    ctx = multiprocessing.get_context("spawn")
    children = [
        ctx.Process(target=_child, args=spec, name=f"rsmq-worker-{i}")
        for i in range(args.processes)
    ]

    def forward(signum: int, _frame: Any) -> None:
        for child in children:
            if child.pid:
                os.kill(child.pid, signal.SIGTERM)

    for child in children:
        child.start()
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    for child in children:
        child.join()
    return max((c.exitcode or 0) for c in children)
