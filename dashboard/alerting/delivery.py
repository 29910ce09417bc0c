"""Sending the outbox (Notification rows): a JSON webhook signed with HMAC-SHA256, a
Slack incoming webhook, or e-mail through Django's e-mail backend. A row is claimed
before it is sent (two workers never send it both), marked sent once its receiver took
it, and otherwise tried again later, each wait twice the one before (up to
``MAX_BACKOFF``): a receiver that is down gets everything once it is back. An error that
can never go away (a target outbound.py refuses, a 3xx or a 4xx other than 408/425/429, an
address the mail server refuses, a header that can't be sent) ends the retries at once;
a transient one (down, timed out, a 5xx, a 429) ends them after ``max_attempts()``
failures. Either way the row keeps ``gave_up`` and its error for the admins' /alerts/.

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
import smtplib
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from celery import shared_task
from django.conf import settings
from django.core.mail import BadHeaderError, send_mail
from django.db.models import Q
from django.utils import timezone

from dashboard.alerting import outbound
from dashboard.celery import SWEEP_SECONDS
from dashboard.models import Notification

log = logging.getLogger(__name__)

TIMEOUT = 3.0  # s, per request: a receiver should answer at once (Slack's do)
BUDGET = 3.0  # s of sending per task, then the task comes back for the rest
CLAIM = dt.timedelta(seconds=60)  # longer than one send can take
BATCH = 200
MAX_BACKOFF = 3600.0  # s
SIGNATURE = "X-RSMQ-Signature"
DELIVERY = "X-RSMQ-Delivery"


def max_attempts() -> int:
    """Failures of a transient kind before a notification is given up (the waits between
    them add up to about 3.5 hours with the defaults)."""
    return max(1, int(getattr(settings, "RSMQ_ALERT_MAX_ATTEMPTS", 12)))


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
    due = Notification.objects.filter(
        sent__isnull=True, gave_up__isnull=True, held="", next_attempt__lte=now
    ).filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
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
        Notification.objects.filter(sent__isnull=True, gave_up__isnull=True, held="")
        .exclude(target__in=down, next_attempt__lte=now)  # left for their own backoff
        .order_by("next_attempt")
        .values_list("next_attempt", flat=True)
        .first()
    )
    if waiting is not None:
        result.retry_in = max(0.0, (waiting - timezone.now()).total_seconds())
    return result


def send_one(pk: int) -> bool | str | None:
    """True: sent; an error's text: it failed (tried again later, or given up); None:
    another worker has it, or it went already."""
    now = timezone.now()
    claimed = (
        Notification.objects.filter(pk=pk, sent__isnull=True, gave_up__isnull=True, held="")
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now))
        .update(claimed_until=now + CLAIM)
    )
    if not claimed:
        return None
    n = Notification.objects.get(pk=pk)
    try:
        SENDERS[n.channel](n)
    except Exception as e:  # noqa: BLE001 - whatever the receiver did, it is told
        n.attempts += 1
        error, final = describe(e)
        if not final and n.attempts >= max_attempts():
            error, final = f"{error} (gave up after {n.attempts} attempts)", True
        elif final:
            error = f"{error} (gave up: this can't succeed as it is)"
        error = error[:2000]
        wait = backoff(n.attempts)
        log.warning(
            "alert notification %s to %s failed (attempt %d, %s): %s",
            n.pk, n.channel, n.attempts, "given up" if final else f"again in {wait:.0f} s", error,
        )  # fmt: skip
        Notification.objects.filter(pk=pk).update(
            attempts=n.attempts, last_error=error, claimed_until=None,
            next_attempt=timezone.now() + dt.timedelta(seconds=wait),
            gave_up=timezone.now() if final else None,
        )  # fmt: skip
        return error
    Notification.objects.filter(pk=pk).update(
        attempts=n.attempts + 1, sent=timezone.now(), claimed_until=None, last_error=""
    )
    return True


def describe(e: Exception) -> tuple[str, bool]:
    """A failure in words for the admins' /alerts/, and whether it is permanent (trying
    again can't help)."""
    if isinstance(e, outbound.Refused):
        return str(e), True
    if isinstance(e, outbound.Answered):
        return str(e), e.permanent
    if isinstance(e, outbound.Unresolved):
        return str(e), False
    if isinstance(e, smtplib.SMTPRecipientsRefused):
        codes = {code for code, _ in e.recipients.values()}
        told = "; ".join(f"{a}: {c} {_text(m)}" for a, (c, m) in sorted(e.recipients.items()))
        # 5xx: the address is refused for good; 4xx: try again later.
        return f"the mail server refused every recipient ({told})", min(codes, default=500) >= 500
    if isinstance(e, smtplib.SMTPSenderRefused):
        return f"the mail server refused the sender {e.sender}: {_text(e.smtp_error)}", True
    if isinstance(e, smtplib.SMTPResponseException) and 500 <= e.smtp_code < 600:
        return f"the mail server answered {e.smtp_code}: {_text(e.smtp_error)}", True
    if isinstance(e, ssl.SSLCertVerificationError):  # a ValueError too: before those
        return f"the receiver's TLS certificate was refused: {e.verify_message}", False
    if isinstance(e, ssl.SSLError):
        return f"the TLS handshake with the receiver failed: {e.reason or e}", False
    if isinstance(e, (BadHeaderError, UnicodeError, KeyError, TypeError, ValueError)):
        return f"the notification can't be sent as it is: {type(e).__name__}: {e}", True
    if isinstance(e, TimeoutError):
        return "could not reach the receiver: timed out", False
    if isinstance(e, OSError):
        reason = e.strerror or str(e) or type(e).__name__
        return f"could not reach the receiver: {reason}", False
    return f"{type(e).__name__}: {e}", False


def _text(said: bytes | str) -> str:
    return said.decode("utf-8", "replace") if isinstance(said, bytes) else said


def _post(url: str, body: bytes, headers: dict[str, str]) -> None:
    outbound.post(url, body, headers, TIMEOUT)


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


class RuleInfo(TypedDict):
    """The rule a notification tells of."""

    id: int
    name: str
    condition: str
    for_seconds: int
    connection: str
    namespace: str
    queues: str


class AlertInfo(TypedDict):
    """One alert that moved: its queue ("": the connection's Redis), its new state, the
    value it was judged on, when it started and last changed (ISO 8601), and who owns its
    queue (Ownership.as_dict: owner, oncall, runbook_url, matched), if anyone."""

    queue: str
    state: str
    value: float | None
    since: str
    changed: str
    owner: dict[str, str] | None
    ack_url: NotRequired[str]  # a firing alert's acknowledge link (alerting/acks.py)
    rule: NotRequired[str]  # its rule's name, in a notification of several rules


class Payload(TypedDict):
    """What every receiver is told (evaluate.payload): the generic webhook's body, and
    what Slack's and e-mail's text are made from. Stored on its Notification with ``id``,
    the notification's key (the webhook's X-RSMQ-Delivery)."""

    id: NotRequired[str]
    rule: RuleInfo
    group: NotRequired[str]  # one queue's alerts of several rules (evaluate.group_payload)
    digest: NotRequired[bool]  # the daily digest of low-severity alerts (alerting/digest.py)
    evaluated_at: str
    firing: int
    resolved: int
    alerts: list[AlertInfo]


def lines(payload: Payload) -> list[str]:
    rule = payload["rule"]
    where = f"{rule['connection']}/{rule['namespace']}"
    out = []
    for a in payload["alerts"]:
        value = "" if a["value"] is None else f" (value {a['value']:g})"
        what = f"{where}/{a['queue']}" if a["queue"] else f"the Redis of {rule['connection']}"
        name = a.get("rule") or rule["name"]
        # A link only where the console said where it is (RSMQ_CONSOLE_URL): a path alone
        # leads nowhere from a chat or a mailbox.
        link = a.get("ack_url", "")
        ack = f" — acknowledge: {link}" if link.startswith(("http://", "https://")) else ""
        out.append(f"{a['state'].upper()}: {name} on {what}{value}{owned(a)}{ack}")
    return out


def owned(alert: AlertInfo) -> str:
    """Who owns the alert's queue, for a message's line ("" if nobody is recorded)."""
    o = alert.get("owner")
    if not o:
        return ""
    parts = [f"owner {o['owner']}"]
    if o.get("oncall"):
        parts.append(f"on call {o['oncall']}")
    if o.get("runbook_url"):
        parts.append(f"runbook {o['runbook_url']}")
    # Typed by an admin: a line break in it must not start a line of its own.
    return " — " + one_line(", ".join(parts))


def one_line(text: str) -> str:
    """``text`` with its line breaks (any str.splitlines takes) as spaces: a rule saved
    before names had to be one line can't break an e-mail's subject."""
    return " ".join(text.splitlines())


def subject(payload: Payload) -> str:
    return one_line(
        f"[RSMQ] {payload['rule']['name']}: {payload['firing']} firing,"
        f" {payload['resolved']} resolved"
    )


def slack_escape(text: str) -> str:
    """Slack's own escapes (its "formatting text" rules): ``<!channel>`` and
    ``<http://…|click here>`` in a rule's name arrive as text, not a mention or a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack(n: Notification) -> None:
    text = "\n".join(slack_escape(line) for line in [f"*{subject(n.payload)}*", *lines(n.payload)])
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
