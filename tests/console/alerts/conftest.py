"""The alert tests' own fixtures: ``rule_of`` makes a rule of the test namespace (a
webhook receiver that is never reached: nothing here sends)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dashboard.models import AlertRule


@pytest.fixture
def rule_of(console, lake, ns: str) -> Callable[..., AlertRule]:
    def make(**fields: object) -> AlertRule:
        values: dict[str, object] = dict(
            name="backlog", connection="default", namespace=ns, queue="q1",
            metric=AlertRule.Metric.VISIBLE, threshold=5, for_seconds=0,
            webhook_url="http://127.0.0.1:9/hook", webhook_secret="k",
        )  # fmt: skip
        values.update(fields)
        return AlertRule.objects.create(**values)

    return make
