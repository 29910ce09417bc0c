"""The database the console's tests run on: SQLite, and for the Postgres twins
(tests/postgres_fixtures.py) a real Postgres, in this thread and in others."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from dashboard.models import AuditEntry


def expected_vendor(request: pytest.FixtureRequest) -> str:
    return "postgresql" if request.node.get_closest_marker("postgres") else "sqlite"


def test_it_runs_on_the_database_of_its_variant(request, db):
    AuditEntry.objects.create(username="u", action="purge", outcome="ok")
    assert connection.vendor == expected_vendor(request)
    assert AuditEntry.objects.get().action == "purge"


def test_another_thread_reaches_the_same_database(request, transactional_db):
    """The in-process Celery worker writes from its own thread."""
    seen: list[str] = []

    def write() -> None:
        from django.db import connection as theirs

        AuditEntry.objects.create(username="w", action="send", outcome="ok")
        seen.append(theirs.vendor)
        theirs.close()

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    assert seen == [expected_vendor(request)]
    assert AuditEntry.objects.get().username == "w"
