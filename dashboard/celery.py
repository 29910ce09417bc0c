"""The console's Celery app: `celery -A dashboard worker` (beat's: dashboard/beat.py).

Configured from the Django settings named CELERY_* (broker: the queues' Redis, a database
of its own); the tasks are in dashboard/tasks.py, scheduled by CELERY_BEAT_SCHEDULE.
"""

from __future__ import annotations

import os

from celery import Celery

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
