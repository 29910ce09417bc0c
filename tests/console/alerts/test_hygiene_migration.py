"""Migration 0024 (alert hygiene): the alerts firing before it were told when they fired,
so the first evaluation after it tells none of them again."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from dashboard.models import Alert, AlertRule

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("dashboard", "0023_flag_acks_expected_idle_job_phase_until")]
AFTER = [("dashboard", "0024_alert_hygiene")]


def test_alerts_firing_before_it_count_as_told_when_they_fired() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    rule = apps.get_model("dashboard", "AlertRule").objects.create(
        name="r", connection="default", namespace="ns", queue="q1", metric="visible"
    )
    old = apps.get_model("dashboard", "Alert")
    for queue, state in (("q1", "firing"), ("q2", "resolved")):
        old.objects.create(rule=rule, connection="default", namespace="ns", queue=queue,
                           state=state, since=1000, changed=2000)  # fmt: skip
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    told = dict(Alert.objects.values_list("queue", "notified"))
    assert told == {"q1": 2000, "q2": None}
    assert AlertRule.objects.get().severity == "high"
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
