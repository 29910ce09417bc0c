"""/healthz, /readyz and the banner when snapshots stopped (dashboard/probes/health.py)."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from dashboard.models import Snapshot
from dashboard.probes import health
from queues.server import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "_cache", (0.0, None))


def snapshot(console, age_s: float) -> None:
    Snapshot.objects.create(
        connection="default", namespace=console.ns, queue="q1",
        taken_at=int((time.time() - age_s) * 1000), msgs=0, hiddenmsgs=0, inflight=0,
        delayed=0, totalsent=0, totalrecv=0, created=int(time.time()),
    )  # fmt: skip


def test_healthz_answers_without_a_login(anon: Client) -> None:
    response = anon.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_readyz_reports_each_redis_the_database_and_the_snapshot_age(console, anon: Client) -> None:
    snapshot(console, 12)
    response = anon.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["redis:default"] == "ok" and body["database"] == "ok"
    assert 11 <= body["snapshot_age_s"] <= 20 and body["snapshots_stale"] is False
    assert body["snapshot_interval_s"] == 10 and body["snapshots_behind"] is False


def test_readyz_says_when_snapshots_fall_two_intervals_behind(console, anon: Client) -> None:
    snapshot(console, 25)  # past two intervals of 10 s, not yet three: no banner yet
    body = anon.get("/readyz").json()
    assert (body["snapshots_behind"], body["snapshots_stale"]) == (True, False)
    assert anon.get("/readyz").status_code == 200  # the web server serves all the same


def test_readyz_is_503_when_a_redis_does_not_answer(console, settings, anon: Client) -> None:
    dead = {"name": "gone", "url": f"redis://127.0.0.1:{free_port()}/0", "namespaces": ["x"]}
    settings.RSMQ_CONNECTIONS = [*settings.RSMQ_CONNECTIONS, dead]
    response = anon.get("/readyz")
    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["status"] == "unavailable" and body["redis:gone"] == "ConnectionError"
    assert "127.0.0.1" not in response.content.decode()  # no URLs for anonymous probes


def test_pages_show_a_banner_when_snapshots_stopped(console, viewer: Client, settings) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 10
    snapshot(console, 240)
    page = viewer.get(console.overview()).content.decode()
    assert "Snapshots stopped 4 min ago — is the Celery worker running?" in page


def test_no_banner_while_snapshots_come(console, viewer: Client, settings) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 10
    snapshot(console, 5)
    assert "snapshot-warning" not in viewer.get(console.overview()).content.decode()


def test_no_snapshot_ever_is_news_after_three_intervals(
    console, viewer: Client, settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.RSMQ_SNAPSHOT_INTERVAL = 10
    monkeypatch.setattr(health, "STARTED", time.time() - 5)
    assert "snapshot-warning" not in viewer.get(console.overview()).content.decode()
    monkeypatch.setattr(health, "STARTED", time.time() - 60)
    monkeypatch.setattr(health, "_cache", (0.0, None))
    page = viewer.get(console.overview()).content.decode()
    assert "No snapshots yet — is the Celery worker running?" in page


def test_health_is_never_redirected_to_https(anon: Client, settings) -> None:
    settings.SECURE_SSL_REDIRECT = True
    assert anon.get("/healthz").status_code == 200
    assert anon.get("/login/").status_code == 301
