"""The jobs' Celery worker: a real one, in this process (celery.contrib.testing), on the
test Redis's broker database, writing to the test database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker

from dashboard.celery import app


@pytest.fixture
def worker(settings, broker_url: str) -> Iterator[None]:
    settings.CELERY_BROKER_URL = broker_url
    before = app.conf.broker_url
    app.conf.broker_url = broker_url
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    finally:
        app.conf.broker_url = before
