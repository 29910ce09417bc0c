"""The caps on live jobs hold when many are asked for at the same moment: job creations
take turns (dashboard/acting/jobs.py ``_one_at_a_time``), so two can't both find the last
place under a cap — on SQLite and, as its twin, on Postgres."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client

from dashboard.models import AuditEntry, BulkJob
from queues import RedisSMQ

pytestmark = pytest.mark.django_db(transaction=True)

ASKED = 8


def test_eight_creations_at_once_under_a_cap_of_two_make_two_jobs(
    console, settings, operator: Client, rsmq: RedisSMQ
) -> None:
    settings.RSMQ_JOBS_PER_USER = 2
    rsmq.create_queue("q1")
    rsmq.send_messages("q1", ["m"] * 10)
    session = operator.cookies
    ready = threading.Barrier(ASKED)
    statuses: list[int] = []

    def ask() -> None:
        client = Client()
        client.cookies = session  # the operator's session, a client of its own
        try:
            ready.wait(10)
            r = client.post(console.queue("q1", "jobs/"), {"kind": "delete", "search": "m"})
            statuses.append(r.status_code)
        finally:
            connection.close()  # this thread's own database connection

    threads = [threading.Thread(target=ask) for _ in range(ASKED)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(statuses) == [302] * 2 + [409] * (ASKED - 2)
    assert BulkJob.objects.count() == 2
    refused = AuditEntry.objects.filter(detail__contains="RSMQ_JOBS_PER_USER").count()
    assert refused == ASKED - 2
