"""The queue page's alerts (templates/_queue_alerts.html), loaded by the include itself so
that the queue page's view needs no change."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.models import Alert, AlertEvent

register = template.Library()

EVENTS_SHOWN = 10


@register.inclusion_tag("_queue_alerts.html")
def queue_alerts(conn: str, ns: str, qname: str) -> dict[str, Any]:
    mine = Alert.objects.filter(connection=conn, namespace=ns, queue=qname)
    return {
        "alerts": list(mine.select_related("rule").order_by("state", "-changed")),
        "events": list(
            AlertEvent.objects.filter(alert__in=mine).select_related("alert__rule")[:EVENTS_SHOWN]
        ),
    }
