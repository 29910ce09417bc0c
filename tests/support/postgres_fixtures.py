"""The console's database tests, a second time on a real Postgres.

Debian's ``postgresql`` package (``.ci/run`` installs it) gives initdb and pg_ctl; the run
makes a cluster of its own in a temporary folder, on a free port, at the first test that
needs it, and removes it at the end. The database tests of ``POSTGRES_MODULES`` are
collected twice: as they are (SQLite) and as ``test_x[postgres]`` (or
``test_x[a-postgres]``), the twins last (the switch happens once). A twin runs with
Django's ``default`` connection on Postgres: the same ORM, the same pytest-django
transactions, a test database made by Django's migrations. Without initdb the twins are
collected and skipped, saying why.

``EmbeddedPostgres`` also serves the compose test and ``bench/snapshots.py --postgres``.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _pytest.python import CallSpec

from queues.server import free_port

# The tests that write and read the ORM: audit, logins and their throttling, roles and
# access, snapshots and their retention, the Celery worker's snapshots, the commands,
# pipeline runs, history charts and the API (what Postgres refuses that SQLite takes: NUL,
# a lone surrogate; an audit row written before its action).
POSTGRES_MODULES = {
    "tests/console/access/test_access.py",
    "tests/console/api/test_api.py",
    "tests/console/api/test_api_nul.py",
    "tests/console/api/test_audit_first.py",
    "tests/console/jobs/test_job_caps_at_once.py",
    "tests/console/access/test_bounded_growth.py",
    "tests/console/access/test_audit.py",
    "tests/console/snapshots/test_celery_snapshots.py",
    "tests/console/snapshots/test_charts.py",
    "tests/console/setup/test_management_commands.py",
    "tests/console/setup/test_database_backend.py",
    "tests/console/access/test_login.py",
    "tests/console/setup/test_namespace_commands.py",
    "tests/console/snapshots/test_pipeline_results.py",
    "tests/console/snapshots/test_snapshot_retention.py",
    "tests/console/snapshots/test_snapshots.py",
}
ROOT = Path(__file__).resolve().parents[2]


def postgres_bindir() -> Path | None:
    """Where initdb and pg_ctl are: $RSMQ_POSTGRES_BIN, Debian's newest, or the PATH."""
    if os.environ.get("RSMQ_POSTGRES_BIN"):
        given = Path(os.environ["RSMQ_POSTGRES_BIN"])
        return given if (given / "initdb").exists() else None
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if debian:
        return Path(debian[-1]).parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


class EmbeddedPostgres:
    """A Postgres cluster of its own: ``with EmbeddedPostgres() as pg: pg.url``.

    initdb refuses to run as root (CI runs as root): then the cluster belongs to the
    ``postgres`` user the Debian package makes, and its commands run through runuser.
    ``durable=False`` (tests) turns fsync and synchronous commits off.
    """

    def __init__(
        self, bindir: Path, user: str = "rsmq", dbname: str = "rsmq", durable: bool = False
    ):
        self.bindir, self.user, self.dbname, self.durable = bindir, user, dbname, durable
        self.port = 0
        self.dir = Path()

    @property
    def url(self) -> str:
        return f"postgres://{self.user}@127.0.0.1:{self.port}/{self.dbname}"

    def _run(self, *args: str) -> None:
        owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run(
            [*owner, str(self.bindir / args[0]), *args[1:]], capture_output=True, text=True
        )
        if done.returncode:
            log = self.dir / "postgres.log"
            raise RuntimeError(
                f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout}"
                + (f"\n{log.read_text()[-2000:]}" if log.exists() else "")
            )

    def start(self, port: int | None = None) -> EmbeddedPostgres:
        self.dir = Path(tempfile.mkdtemp(prefix="rsmq-postgres-"))
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        data = self.dir / "data"
        self._run("initdb", "-D", str(data), "-U", self.user, "-A", "trust", "-E", "UTF8",
                  "--locale=C", "--no-sync")  # fmt: skip
        self.port = port or free_port()
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(data), "-l", str(self.dir / "postgres.log"), "-o", options,
                  "-w", "-t", "60", "start")  # fmt: skip
        import psycopg

        with psycopg.connect(self.url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{self.dbname}"')
        return self

    def stop(self) -> None:
        if self.port:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
            self.port = 0
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def django_settings(url: str) -> dict[str, Any]:
    """The console's DATABASES entry for ``url``, as dashboard/settings.py makes it."""
    import dj_database_url

    return dj_database_url.parse(url, conn_max_age=60)


# -- The twins ----------------------------------------------------------------------------


class Backends:
    """Which database Django's ``default`` connection is on, and the switch between the
    SQLite test database pytest-django made and the Postgres one made here."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.server: EmbeddedPostgres | None = None
        self.postgres: Any = None  # its DatabaseWrapper, once its test database exists
        self.sqlite: tuple[dict[str, Any], Any] | None = None
        self.on_postgres = False

    def use_postgres(self) -> None:
        from django.db import connections
        from django.db.utils import load_backend
        from pytest_django.plugin import blocking_manager_key

        if self.on_postgres:
            return
        self.sqlite = (connections.settings["default"], connections["default"])
        if self.postgres is None:
            bindir = postgres_bindir()
            if bindir is None:
                pytest.skip(SKIP_REASON)
            self.server = EmbeddedPostgres(bindir).start()
            entry = connections.configure_settings({"default": django_settings(self.server.url)})
            self.postgres = load_backend(entry["default"]["ENGINE"]).DatabaseWrapper(
                entry["default"], "default"
            )
        self._point_at(self.postgres.settings_dict, self.postgres)
        if self.server is not None and not self.postgres.settings_dict["NAME"].startswith("test_"):
            with self.config.stash[blocking_manager_key].unblock():
                self.postgres.creation.create_test_db(verbosity=0, autoclobber=True)
        self.on_postgres = True

    def use_sqlite(self) -> None:
        if self.on_postgres and self.sqlite is not None:
            self._point_at(*self.sqlite)
            self.on_postgres = False

    @staticmethod
    def _point_at(entry: dict[str, Any], wrapper: Any) -> None:
        # This thread's connection object, and the settings other threads (the in-process
        # Celery worker) make theirs from: the same dict as settings.DATABASES.
        from django.contrib.contenttypes.models import ContentType
        from django.db import connections

        connections.settings["default"] = entry
        connections["default"] = wrapper
        # The content types' cache is by alias ("default" on both): the other database's ids.
        ContentType.objects.clear_cache()

    def stop(self) -> None:
        if self.server is not None:
            if self.postgres is not None:
                self.postgres.close()
            self.server.stop()


def twin(item: pytest.Function) -> pytest.Function:
    """The same test once more, on Postgres: ``test_x[postgres]``, ``test_x[a-postgres]``."""
    spec = getattr(item, "callspec", None) or CallSpec()
    copy = pytest.Function.from_parent(
        item.parent,  # type: ignore[arg-type]
        name=item.originalname,
        callspec=dataclasses.replace(spec, _idlist=[*spec._idlist, "postgres"]),
        callobj=item.obj,
        fixtureinfo=item._fixtureinfo,
        originalname=item.originalname,
    )
    copy.add_marker("postgres")
    return copy


SKIP_REASON = (
    "Postgres is not installed (no initdb): apt-get install postgresql, or set "
    "RSMQ_POSTGRES_BIN to its bin folder"
)


def with_twins(collector: pytest.Collector, made: object) -> object:
    """What pytest made of one test function, and, for POSTGRES_MODULES, its twins."""
    if collector.path.relative_to(ROOT).as_posix() not in POSTGRES_MODULES:
        return made
    if not isinstance(made, list | tuple) and not hasattr(made, "__next__"):
        return made
    items = list(made)  # type: ignore[call-overload]
    return items + [twin(i) for i in items if uses_database(i)]


def uses_database(item: object) -> bool:
    return isinstance(item, pytest.Function) and (
        "_django_db_helper" in item.fixturenames or item.get_closest_marker("django_db") is not None
    )


def twins_last(items: list[pytest.Item]) -> None:
    """The twins after every other test: the switch to Postgres happens once."""
    items.sort(key=lambda item: item.get_closest_marker("postgres") is not None)


def report_header() -> str:
    bindir = postgres_bindir()
    if bindir is None:
        return f"postgres: SKIPPED, the console's database tests run on SQLite only. {SKIP_REASON}"
    return f"postgres: {bindir} (the console's database tests run on SQLite, then on Postgres)"
