"""The database the console's tests run on: SQLite, and for the Postgres twins
(tests/support/postgres_fixtures.py) a real Postgres, in this thread and in others."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client

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


def test_an_overlong_login_is_refused_and_counted_without_a_500(db, settings):
    """Every posted text that reaches a row is cut to its column: Postgres refuses what is
    longer (SQLite keeps it), and django-axes writes the user name of each failed try."""
    settings.AXES_FAILURE_LIMIT = 2
    client = Client()
    name = "u" * 5000
    answers = [
        client.post("/login/", {"username": name, "password": "wrong"}).status_code
        for _ in range(2)
    ]
    assert answers == [200, 429]  # the form again, then locked out at the second failure
    # the failed try, and the lockout: each row names the user cut to its column
    rows = {(row.action, row.username) for row in AuditEntry.objects.all()}
    assert rows == {("login_failed", name[:150]), ("login", name[:150])}
