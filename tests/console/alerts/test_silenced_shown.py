"""What is silenced, shown: the overview says which silences are on and how many firing
alerts they keep quiet; /metrics has rsmq_alert_silences and rsmq_alert_silenced."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from dashboard.alerting.evaluate import evaluate
from dashboard.models import Silence

pytestmark = pytest.mark.django_db


@pytest.fixture
def silenced(rule_of, add_snapshot, redis_now, ns: str) -> Silence:
    rule_of()
    s = Silence.objects.create(
        connection="default", namespace=ns, pattern="q*", reason="db migration",
        created_by="otto", ends=timezone.now() + dt.timedelta(hours=1),
    )  # fmt: skip
    add_snapshot("q1", redis_now(), msgs=10)
    evaluate()
    return s


def test_the_overview_says_what_is_silenced(silenced, viewer, console) -> None:
    page = viewer.get(console.overview()).content.decode()
    assert 'data-silenced="1"' in page
    assert "q* — db migration (otto, until" in page
    assert "1 firing alert notifies nobody" in page


def test_the_overview_says_nothing_without_a_silence(viewer, console) -> None:
    assert "data-silenced" not in viewer.get(console.overview()).content.decode()


def scrape(token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.getvalue().decode())
        for s in family.samples
    }


def test_metrics_show_the_silences_and_the_silenced_alerts(silenced, console, token) -> None:
    place = (("connection", "default"), ("namespace", console.ns))
    samples = scrape(token)
    assert samples[("rsmq_alert_silences", place)] == 1
    alert = (*place, ("queue", "q1"), ("rule", "backlog"))
    assert samples[("rsmq_alert_silenced", tuple(sorted(alert)))] == 1
    Silence.objects.update(ends=timezone.now())
    assert scrape(token)[("rsmq_alert_silences", place)] == 0
