"""The console's Celery app: `celery -A dashboard worker` (beat's: dashboard/beat.py).

Configured from the Django settings named CELERY_* (broker: the queues' Redis, a database
of its own); the tasks are in dashboard/tasks.py, scheduled by CELERY_BEAT_SCHEDULE. With
RSMQ_WORKER_BEAT on (./run), beat runs as a thread of the worker rather than a process of
its own: one console needs one beat, and a thread costs no second copy of Django.
"""

from __future__ import annotations

import os
import threading
from typing import Protocol

from celery import Celery, signals
from celery.beat import EmbeddedService
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

SWEEP_SECONDS = 30.0  # the outbox's sweep (alert notifications)


@app.on_after_configure.connect
def alert_sweep(sender: Celery, **kwargs: object) -> None:
    """The outbox's sweep: a notification whose task was lost (a worker restarted, the
    broker down) is sent by the next one."""
    sender.add_periodic_task(
        SWEEP_SECONDS,
        sender.signature("dashboard.tasks.send_notifications"),
        name="alert-notifications",
        expires=SWEEP_SECONDS,
    )


class Service(Protocol):
    """Beat's embedded service (celery.beat.EmbeddedService: a thread here)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...


_beat: list[Service] = []


@signals.worker_ready.connect
def start_beat(**kwargs: object) -> None:
    if settings.RSMQ_WORKER_BEAT and not _beat:
        # A thread, not Celery's ``--beat`` (a forked process): the worker's solo pool runs
        # one task at a time, and beat only sends, so the schedule keeps time beside it.
        service = EmbeddedService(app, thread=True)
        assert isinstance(service, threading.Thread)  # what thread=True makes
        _beat.append(service)
        service.start()


@signals.worker_shutdown.connect
def stop_beat(**kwargs: object) -> None:
    while _beat:
        _beat.pop().stop()
