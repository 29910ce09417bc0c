"""The suite in parallel: ``./run test`` runs it on several pytest-xdist workers, each a
process of its own with its own session fixtures (its redis-server, SQLite and Postgres
test databases, Spark session, chromium), temp dirs and free ports. What they share is
the worktree: whatever is installed into it once (tests/node's npm packages, the lowest
redis-py's virtualenv in .pytest_cache) is installed under ``exclusive``."""

from __future__ import annotations

import fcntl
import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(what: Path) -> Iterator[None]:
    """Held by one process at a time for ``what`` (a folder being installed): the other
    workers wait, then find it installed. The lock file is in the temp dir, named for the
    folder's path, so that an install can remove and remake the folder itself."""
    name = hashlib.sha256(str(what.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"rsmq-tests-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
