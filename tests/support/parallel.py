"""The suite in parallel: ``./run test`` runs it on several pytest-xdist workers
(``--dist loadgroup``), each a process of its own with its own session fixtures (its
redis-server, SQLite and Postgres test databases, Spark session, chromium), temp dirs and
free ports. What they share is the worktree: whatever is installed into it once
(tests/node's npm packages, the lowest redis-py's virtualenv in .pytest_cache) is
installed under ``exclusive``.

``Groups`` says which tests must share a worker: the tests of a module sharing a fixture
of the module's scope (a served console, a chromium, a big queue filled once), made once
rather than once per worker; and every test using Spark (the ``spark`` session or a
standalone cluster), so that one worker starts a JVM, not each."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
#: Where the workers write which test is in which group, for the controller's scheduler
#: (set by the controller before it starts them; an RSMQ_ name, which the served tests'
#: ./run does not inherit).
GROUPS = "RSMQ_TEST_GROUPS"


class Groups:
    """Which tests must share a worker, and the scheduler that keeps them together.

    xdist's own ``--dist loadgroup`` reads an ``xdist_group`` mark from a suffix it writes
    into each test's node id, which pytest 9.2's node ids no longer take (the marks are
    silently ignored: pytest-dev/pytest-xdist#1386). So each worker writes the groups it
    found to a file, and the controller's scheduler (``GroupScheduling``) reads them: a
    test's scope is its group, else itself. Every worker collects the same tests, so any
    one's file will do."""

    def pytest_configure(self, config: pytest.Config) -> None:
        if not hasattr(config, "workerinput") and config.getoption("numprocesses", None):
            folder = Path(tempfile.mkdtemp(prefix="rsmq-test-groups-"))
            os.environ[GROUPS] = str(folder / "groups.json")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if not hasattr(config, "workerinput") and os.environ.get(GROUPS):
            shutil.rmtree(Path(os.environ.pop(GROUPS)).parent, ignore_errors=True)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        where = os.environ.get(GROUPS)
        if not where or not hasattr(config, "workerinput"):
            return
        found = groups(items)
        mine = Path(f"{where}.{os.getpid()}")
        mine.write_text(json.dumps(found))
        mine.replace(where)  # whole or not at all

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") != "loadgroup":
            return None
        from xdist.scheduler import LoadScopeScheduling

        class GroupScheduling(LoadScopeScheduling):
            """LoadScopeScheduling, a test's scope being its group (biggest first)."""

            found: dict[str, str] | None = None

            def _split_scope(self, nodeid: str) -> str:
                if self.found is None:
                    where = Path(os.environ.get(GROUPS, "") or "/nonexistent")
                    if not where.exists():
                        return nodeid  # (not asked before every worker has collected)
                    self.found = json.loads(where.read_text())
                return self.found.get(nodeid, nodeid)

        return GroupScheduling(config, log)


def groups(items: list[pytest.Item]) -> dict[str, str]:
    """Each grouped test's node id → its group: "spark" for every test using Spark, and
    every test of a module where one does; the module for the tests of a module sharing
    one of its module-scoped fixtures."""
    found: dict[str, str] = {}
    spark_modules: set[str] = set()
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)
        if fixtures is None:
            continue
        module = item.nodeid.split("::")[0]
        if SPARK & set(fixtures.name2fixturedefs):
            found[item.nodeid] = "spark"
            spark_modules.add(module)
        elif any(
            defs[-1].scope in ("module", "class") and _ours(defs[-1].func)
            for defs in fixtures.name2fixturedefs.values()
        ):
            found[item.nodeid] = module
    for nodeid in found:
        if nodeid.split("::")[0] in spark_modules:
            found[nodeid] = "spark"
    return found


def _ours(func: object) -> bool:
    code = getattr(func, "__code__", None)
    return code is not None and TESTS in Path(code.co_filename).parents
