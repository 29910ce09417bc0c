"""The shipped Grafana dashboard and Prometheus rules read only what /metrics serves:
every metric name in them is one of its samples, or a series the shipped rules record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from queues import RedisSMQ

pytestmark = pytest.mark.django_db

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
NAME = re.compile(r"\b(rsmq_[A-Za-z0-9_:]+)")


def served_names(client: Client) -> set[str]:
    """The sample names of a scrape, and the gauges it declares with no sample now
    (rsmq_queue_unreadable, while every queue reads)."""
    text = client.get("/metrics").getvalue().decode()
    families = list(text_string_to_metric_families(text))
    gauges = {f.name for f in families if f.type == "gauge"}
    return gauges | {s.name for f in families for s in f.samples}


def recorded() -> set[str]:
    return set(
        re.findall(r"^\s*- record: (\S+)", (DEPLOY / "prometheus/rules.yml").read_text(), re.M)
    )


def dashboard_exprs() -> list[str]:
    board = json.loads((DEPLOY / "grafana/rsmq-console.json").read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in board["templating"]["list"] if v["type"] == "query"]
    return exprs


@pytest.fixture
def served(console, viewer: Client, rsmq: RedisSMQ) -> set[str]:
    rsmq.create_queue("orders")
    rsmq.send_messages("orders", ["a", "b"])
    return served_names(viewer)


def test_every_metric_of_the_grafana_dashboard_is_served_or_recorded(served: set[str]) -> None:
    exprs = dashboard_exprs()
    assert len(exprs) >= 10
    used = {name for e in exprs for name in NAME.findall(e)}
    assert used - served - recorded() == set()
    # Every panel reads something of ours, and the served names it reads are real ones.
    assert all(NAME.search(e) for e in exprs)
    assert {"rsmq_queue_messages", "rsmq_queue_sent_total", "rsmq_up"} <= used & served


def test_every_metric_the_prometheus_rules_read_is_served_or_recorded(served: set[str]) -> None:
    rules = (DEPLOY / "prometheus/rules.yml").read_text()
    exprs = re.findall(r"^\s*expr: (.+(?:\n\s{10,}.+)*)", rules, re.M)
    used = {name for e in exprs for name in NAME.findall(e)}
    assert used - served - recorded() == set()
    assert "rsmq_queue_received_total" in used & served
