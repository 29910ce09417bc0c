"""The queue page's alerts (templates/_queue_alerts.html), loaded by the include itself so
that the queue page's view needs no change."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.acting import silences
from dashboard.display.formatting import duration, exact, per_second
from dashboard.models import Alert, AlertEvent, AlertRule

register = template.Library()

Metric = AlertRule.Metric
#: metrics whose value is a yes / no (1 / 0): an anomaly flag, a consumer state, a risk
YES_NO = ("flag:", "state:", Metric.REDIS_AT_RISK)


@register.filter
def alert_value(value: float | None, metric: str) -> str:
    """An alert's value as its metric reads: 178,177 messages, "2 d" of age, 3.5/s,
    82% of maxmemory, yes / no; "—" for none."""
    if value is None:
        return "—"
    if metric == Metric.OLDEST_AGE:
        return duration(value)
    if metric in (Metric.SEND_RATE, Metric.RECEIVE_RATE):
        return per_second(value)
    if metric == Metric.REDIS_MEMORY_SHARE:
        return f"{value:.0%}"
    if metric.startswith("burn:"):
        return f"burn ×{value:,.1f}"
    if metric.startswith(YES_NO):
        return "yes" if value else "no"
    return exact(value)


EVENTS_SHOWN = 10


@register.inclusion_tag("_queue_alerts.html")
def queue_alerts(conn: str, ns: str, qname: str) -> dict[str, Any]:
    mine = Alert.objects.filter(connection=conn, namespace=ns, queue=qname)
    return {
        "conn": conn,
        "ns": ns,
        "qname": qname,
        "alerts": list(mine.select_related("rule").order_by("state", "-changed")),
        "events": list(
            AlertEvent.objects.filter(alert__in=mine).select_related("alert__rule")[:EVENTS_SHOWN]
        ),
    }


@register.inclusion_tag("_silences_note.html")
def silences_note(conn: str, ns: str) -> dict[str, Any]:
    """The overview's word on what is silenced in the namespace now: its silences and
    maintenance windows on now, and the firing alerts whose notifications they held."""
    on = silences.on_now(conn, ns)
    held = Alert.objects.filter(
        connection=conn, namespace=ns, state=Alert.State.FIRING, held=True
    ).count()
    return {"silences": on, "held": held}
