"""Celery beat's app: `celery --app dashboard.beat beat`. The console's schedule
(CELERY_BEAT_SCHEDULE, and the outbox's sweep) sent by task name, as the worker's app
(dashboard/celery.py) knows them, without importing the tasks' code: beat only sends."""

from __future__ import annotations

import os

from celery import Celery

from dashboard.celery import alert_sweep

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.on_after_configure.connect(alert_sweep)
