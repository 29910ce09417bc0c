"""How many web processes and Django threads ./run serves with by default (``./run
--workers/--threads``; bench/api.py measures the same): no Django here, so a benchmark
can read them without setting Django up."""

from __future__ import annotations

import os


def default_workers() -> int:
    """The web server's processes: one event loop a core (the API's plain calls are
    answered in it: bench/RESULTS.md, "HTTP API vs rest-rsmq"), at least 2 (one killed,
    the other answers meanwhile), at most 8."""
    return max(2, min(os.cpu_count() or 1, 8))


def default_threads(workers: int) -> int:
    """Django threads a process: 8 in all for the pages, at least 2 a process (a streamed
    export holds one: dashboard/acting/exports.py)."""
    return max(2, -(-8 // workers))
