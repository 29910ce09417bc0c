"""The suite in parallel: ``./run test`` runs it on several pytest-xdist workers
(``--dist loadgroup``), each a process of its own with its own session fixtures (its
redis-server, SQLite and Postgres test databases, Spark session, chromium), temp dirs and
free ports. What they share is the worktree: whatever is installed into it once
(tests/node's npm packages, the lowest redis-py's virtualenv in .pytest_cache) is
installed under ``exclusive``.

``Groups`` says which tests must share a worker (an ``xdist_group`` mark): the tests of a
module sharing a fixture of the module's scope (a served console, a chromium, a big queue
filled once), made once rather than once per worker; and every test using Spark (the
``spark`` session or a standalone cluster), so that one worker starts a JVM, not each."""

from __future__ import annotations

import fcntl
import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


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


SPARK = {"spark", "spark_cluster"}
TESTS = Path(__file__).resolve().parents[1]


class Groups:
    """The ``xdist_group`` of each test that must share a worker (see above); the groups
    first, biggest first, so that a long one never starts last and runs alone."""

    @pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which names items by group
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        groups: dict[pytest.Item, str] = {}
        spark_modules: set[str] = set()
        for item in items:
            fixtures = getattr(item, "_fixtureinfo", None)
            if fixtures is None:
                continue
            module = item.nodeid.split("::")[0]
            if SPARK & set(fixtures.name2fixturedefs):
                groups[item] = "spark"
                spark_modules.add(module)
            elif any(
                defs[-1].scope in ("module", "class") and _ours(defs[-1].func)
                for defs in fixtures.name2fixturedefs.values()
            ):
                groups[item] = module
        for item, group in groups.items():
            module = item.nodeid.split("::")[0]
            name = "spark" if module in spark_modules else group
            item.add_marker(pytest.mark.xdist_group(name))
        sizes: dict[str, int] = {}
        for item in items:
            name = _group(item)
            if name:
                sizes[name] = sizes.get(name, 0) + 1
        items.sort(key=lambda item: -sizes.get(_group(item) or "", 0))


def _ours(func: object) -> bool:
    code = getattr(func, "__code__", None)
    return code is not None and TESTS in Path(code.co_filename).parents


def _group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    return str(mark.args[0]) if mark else None
