"""Sending the outbox (Notification rows): a JSON webhook signed with HMAC-SHA256, a
Slack incoming webhook, or e-mail through Django's e-mail backend. A row is claimed
before it is sent (two workers never send it both), marked sent once its receiver took
it, and otherwise tried again later, each wait twice the one before (up to
``MAX_BACKOFF``): a receiver that is down gets everything once it is back.

The webhook's headers: ``X-RSMQ-Signature: sha256=<hex HMAC-SHA256 of the body, keyed
with the rule's secret>``, ``X-RSMQ-Delivery: <the notification's id>`` (the same on every
retry: a receiver that answered but whose answer was lost can drop the repeat).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from celery import shared_task
from django.conf import settings
from django.core.mail import send_mail
from django.db.models import Q
from django.utils import timezone

from ..celery import SWEEP_SECONDS
from ..models import Notification

log = logging.getLogger(__name__)

TIMEOUT = 3.0  # s, per request: a receiver should answer at once (Slack's do)
BUDGET = 3.0  # s of sending per task, then the task comes back for the rest
CLAIM = dt.timedelta(seconds=60)  # longer than one send can take
BATCH = 200
MAX_BACKOFF = 3600.0  # s
SIGNATURE = "X-RSMQ-Signature"
DELIVERY = "X-RSMQ-Delivery"


def first_backoff() -> float:
    return float(getattr(settings, "RSMQ_ALERT_RETRY_SECONDS", 10.0))


def backoff(attempts: int) -> float:
    """Seconds to wait after the ``attempts``-th failure."""
    return min(MAX_BACKOFF, first_backoff() * 2 ** (attempts - 1))


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class Sent:
    sent: int = 0
    failed: int = 0
    retry_in: float | None = None  # s until the next row is due, if any waits
    errors: list[str] = field(default_factory=list)


def send_due() -> Sent:
    """The rows that are due now, each at most once, for at most BUDGET seconds (the
    worker also takes the snapshots: the task comes back at once for the rest). A
    receiver that failed is not tried again in the same call: one that hangs costs a
    call one TIMEOUT, not one per notification."""
    now = timezone.now()
    deadline = time.monotonic() + BUDGET
    result = Sent()
    down: set[str] = set()
    due = Notification.objects.filter(sent__isnull=True, next_attempt__lte=now).filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    )
    for pk, target in due.order_by("next_attempt", "pk").values_list("pk", "target")[:BATCH]:
        if time.monotonic() > deadline:
            result.retry_in = 0.0
            return result
        if target in down:
            continue
        outcome = send_one(pk)
        if outcome is True:
            result.sent += 1
        elif isinstance(outcome, str):
            result.failed += 1
            result.errors.append(outcome)
            down.add(target)
    waiting = (
        Notification.objects.filter(sent__isnull=True)
        .exclude(target__in=down, next_attempt__lte=now)  # left for their own backoff
        .order_by("next_attempt")
        .values_list("next_attempt", flat=True)
        .first()
    )
    if waiting is not None:
        result.retry_in = max(0.0, (waiting - timezone.now()).total_seconds())
    return result


def send_one(pk: int) -> bool | str | None:
    """True: sent; an error's text: it failed (tried again later); None: another worker
    has it, or it went already."""
    now = timezone.now()
    claimed = (
        Notification.objects.filter(pk=pk, sent__isnull=True)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + CLAIM)
    )
    if not claimed:
        return None
    n = Notification.objects.get(pk=pk)
    try:
        SENDERS[n.channel](n)
    except Exception as e:  # noqa: BLE001 - whatever the receiver did, it is tried again
        n.attempts += 1
        error = f"{type(e).__name__}: {e}"[:2000]
        wait = backoff(n.attempts)
        log.warning(
            "alert notification %s to %s failed (attempt %d, again in %.0f s): %s",
            n.pk, n.channel, n.attempts, wait, error,
        )  # fmt: skip
        Notification.objects.filter(pk=pk).update(
            attempts=n.attempts, last_error=error, claimed_until=None,
            next_attempt=timezone.now() + dt.timedelta(seconds=wait),
        )  # fmt: skip
        return error
    Notification.objects.filter(pk=pk).update(
        attempts=n.attempts + 1, sent=timezone.now(), claimed_until=None, last_error=""
    )
    return True


def _post(url: str, body: bytes, headers: dict[str, str]) -> None:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310 - admins' URLs
        if not 200 <= response.status < 300:
            raise urllib.error.HTTPError(url, response.status, "not a 2xx", response.headers, None)


def _webhook(n: Notification) -> None:
    body = json.dumps(n.payload, sort_keys=True, separators=(",", ":")).encode()
    _post(
        n.target,
        body,
        {
            "Content-Type": "application/json",
            "User-Agent": "rsmq-console-alerts",
            SIGNATURE: sign(n.secret, body),
            DELIVERY: n.payload["id"],
        },
    )


def lines(payload: dict[str, Any]) -> list[str]:
    rule = payload["rule"]
    where = f"{rule['connection']}/{rule['namespace']}"
    out = []
    for a in payload["alerts"]:
        value = "" if a["value"] is None else f" (value {a['value']:g})"
        out.append(f"{a['state'].upper()}: {rule['name']} on {where}/{a['queue']}{value}")
    return out


def subject(payload: dict[str, Any]) -> str:
    return (
        f"[RSMQ] {payload['rule']['name']}: {payload['firing']} firing,"
        f" {payload['resolved']} resolved"
    )


def _slack(n: Notification) -> None:
    text = "\n".join([f"*{subject(n.payload)}*", *lines(n.payload)])
    body = json.dumps({"text": text}).encode()
    _post(n.target, body, {"Content-Type": "application/json"})


def _email(n: Notification) -> None:
    rule = n.payload["rule"]
    text = "\n".join(
        [*lines(n.payload), "", f"Rule: {rule['condition']}, for {rule['for_seconds']} s",
         f"Evaluated at {n.payload['evaluated_at']}"]
    )  # fmt: skip
    recipients = [a.strip() for a in n.target.split(",") if a.strip()]
    send_mail(subject(n.payload), text, None, recipients, fail_silently=False)


SENDERS: dict[str, Callable[[Notification], None]] = {
    Notification.Channel.WEBHOOK: _webhook,
    Notification.Channel.SLACK: _slack,
    Notification.Channel.EMAIL: _email,
}


def send_notifications_soon() -> None:
    try:
        send_notifications.apply_async(retry=False)
    except Exception:  # noqa: BLE001 - the outbox keeps them: the periodic sweep sends them
        log.exception("alert notifications not started")


@shared_task(name="dashboard.tasks.send_notifications", ignore_result=True)
def send_notifications() -> dict[str, Any]:
    """The outbox's due notifications; what failed is tried again with backoff (this task
    comes back when the first is due; the beat's sweep as well, should it be lost)."""
    result = send_due()
    if result.retry_in is not None and result.retry_in < SWEEP_SECONDS:
        send_notifications.apply_async(countdown=result.retry_in + 0.1, retry=False)
    return {"sent": result.sent, "failed": result.failed, "retry_in": result.retry_in}
