"""The daily digest of low-severity alerts: a rule of severity "low" notifies nobody at
once (its alerts still show on the pages); once a day (beat, at ``RSMQ_ALERT_DIGEST_HOUR``
UTC) each receiver of such rules gets one notification of their alerts that fired in the
last 24 hours, per connection and namespace, each alert with its rule's name and its
state now. Silenced alerts are left out; the digest of a day is written once (its key)."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections import defaultdict

from django.db import transaction
from django.utils import timezone

from dashboard.acting import silences
from dashboard.alerting import delivery
from dashboard.alerting.evaluate import Receiver, iso, receivers
from dashboard.models import Alert, AlertEvent, AlertRule, Notification
from dashboard.triage.owners import Owners

PERIOD = dt.timedelta(hours=24)


def send_digest(now: dt.datetime | None = None) -> int:
    """The digest notifications of the 24 hours before ``now``; how many were written."""
    now = now or timezone.now()
    end = round(now.timestamp() * 1000)
    start = end - round(PERIOD.total_seconds() * 1000)
    fired = (
        AlertEvent.objects.filter(
            at__gt=start,
            at__lte=end,
            state=Alert.State.FIRING,
            alert__rule__severity=AlertRule.Severity.LOW,
            alert__rule__enabled=True,
        )  # fmt: skip
        .values_list("alert_id", flat=True)
        .distinct()
    )
    alerts = Alert.objects.filter(pk__in=list(fired)).select_related("rule").order_by("queue")
    per: dict[tuple[Receiver, str, str], list[Alert]] = defaultdict(list)
    quiet: dict[tuple[str, str], list] = {}
    for a in alerts:
        place = (a.connection, a.namespace)
        if place not in quiet:
            quiet[place] = silences.on_now(*place)
        if silences.silencing(quiet[place], a.rule_id, a.queue) is not None:
            continue
        for receiver in receivers(a.rule):
            per[receiver, a.connection, a.namespace].append(a)
    made = 0
    with transaction.atomic():
        for ((channel, target, secret), conn, ns), told in per.items():
            body = payload(conn, ns, told, end)
            key = f"digest|{now.date().isoformat()}|{channel}|{target}|{conn}|{ns}"
            key = hashlib.sha256(key.encode()).hexdigest()
            _, created = Notification.objects.get_or_create(
                key=key,
                defaults={
                    "rule": told[0].rule, "channel": channel, "target": target,
                    "secret": secret, "payload": {"id": key, **body},
                    "next_attempt": timezone.now(),
                },
            )  # fmt: skip
            made += created
        if made:
            transaction.on_commit(delivery.send_notifications_soon)
    return made


def payload(conn: str, ns: str, told: list[Alert], now: int) -> delivery.Payload:
    owners = Owners(conn, ns)
    alerts: list[delivery.AlertInfo] = []
    for a in told:
        o = owners.of(a.queue) if a.queue else None
        alerts.append(
            {
                "queue": a.queue, "state": a.state, "value": a.value, "since": iso(a.since),
                "changed": iso(a.changed), "owner": o.as_dict() if o else None,
                "rule": a.rule.name,
            }
        )  # fmt: skip
    names = sorted({a.rule.name for a in told})
    return {
        "rule": {
            "id": told[0].rule_id, "name": f"daily digest: {len(told)} low-severity alerts",
            "condition": ", ".join(names), "for_seconds": 0, "connection": conn,
            "namespace": ns, "queues": "",
        },
        "digest": True,
        "evaluated_at": iso(now),
        "firing": sum(a["state"] == Alert.State.FIRING for a in alerts),
        "resolved": sum(a["state"] == Alert.State.RESOLVED for a in alerts),
        "alerts": alerts,
    }  # fmt: skip
