"""The charts of the queue page and the overview's sparklines and rates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.safestring import SafeString

from dashboard.acting import jobs
from dashboard.acting.actions import CHANGES
from dashboard.display import charts
from dashboard.snapshots.history import History, Trend, sparkline_bucket_ms
from dashboard.triage import timeline

register = template.Library()


@register.simple_tag
def backlog_chart(history: History, markers: list[charts.Marker] | None = None) -> SafeString:
    return charts.backlog_chart(history, markers or ())


@register.simple_tag
def rate_chart(history: History, markers: list[charts.Marker] | None = None) -> SafeString:
    return charts.rate_chart(history, markers or ())


#: the operator actions the charts mark: what changed messages or queues, jobs included
CHART_ACTIONS = CHANGES | set(jobs.AUDIT.values())


@register.simple_tag
def chart_markers(conn: str, ns: str, qname: str, history: History) -> list[charts.Marker]:
    """The queue's timeline over the charts' range (dashboard/triage/timeline.py), as markers:
    ``{% chart_markers connection.name namespace qname history as markers %}``: what bears on
    an incident (changes, alerts, flags, annotations; one marker a job)."""
    return [
        charts.Marker(e.at, e.kind, f"{e.text}{f' — {e.who}' if e.who else ''}")
        for e in timeline.markers(
            conn, ns, qname, history.start, history.end, actions=CHART_ACTIONS
        )
    ]


@register.simple_tag
def time_chart(history: History) -> SafeString:
    return charts.time_chart(history)


@register.filter
def seconds(value: float | None) -> str:
    """A wait or processing time: 0.012 s, 1.5 s, 340 s; – for none."""
    return "–" if value is None else charts.seconds(value)


@register.simple_tag
def sparkline(trend: Trend | None) -> SafeString:
    # Points are per-minute peaks: neighbours are a bucket apart, not a snapshot interval
    # (3 × the interval as the gap would join no two points, and draw nothing).
    return charts.sparkline(trend, 3 * sparkline_bucket_ms())


@register.filter
def item(mapping: Mapping[str, Any], key: str) -> Any:
    return mapping.get(key)
