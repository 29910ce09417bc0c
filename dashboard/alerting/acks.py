"""Acknowledging a firing alert: an operator says someone is on it. An acknowledged
alert is not told again (re-notify, evaluate.again) until it resolves and fires anew (a
new firing clears it). From the alerts page, or from the link a notification carries:
``ack_url``, a token signed with the console's SECRET_KEY (django.core.signing) naming
the alert and its firing (``since``), good for ``MAX_AGE`` and once — a firing
acknowledged already refuses it. The link lands on a confirm page; only its POST acts
(views/alerts.py, audited as ``alert_ack``)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core import signing
from django.urls import reverse

from dashboard.models import Alert

SALT = "rsmq-console.alert-ack"
MAX_AGE = 7 * 24 * 3600  # s: a week-old notification's link no longer acknowledges


def token(alert: Alert) -> str:
    return signing.dumps({"a": alert.pk, "s": alert.since}, salt=SALT, compress=False)


def url(alert: Alert) -> str:
    """The acknowledge link: absolute when RSMQ_CONSOLE_URL says where the console is."""
    base = str(getattr(settings, "RSMQ_CONSOLE_URL", "") or "").rstrip("/")
    return base + _path().replace(PLACEHOLDER, token(alert))


PLACEHOLDER = "TOKEN"


@cache
def _path() -> str:
    # Reversed once: a notification of 1,000 alerts would spend most of its time in
    # reverse() otherwise.
    return reverse("rsmq-alert-ack-link", args=[PLACEHOLDER])


class Refused(Exception):
    """A link that can't acknowledge (its text says why)."""


@dataclass(frozen=True)
class Link:
    alert: Alert


def read(value: str) -> Link:
    """The alert a link names, still firing the firing it was made for, not acknowledged
    yet; Refused else."""
    try:
        data = signing.loads(value, salt=SALT, max_age=MAX_AGE)
    except signing.SignatureExpired:
        raise Refused(
            "This link is more than a week old: acknowledge on the alerts page."
        ) from None
    except signing.BadSignature:
        raise Refused("This is not an acknowledge link the console made.") from None
    alert = Alert.objects.select_related("rule").filter(pk=data.get("a")).first()
    if alert is None:
        raise Refused("Its alert is gone (its rule was deleted).")
    if alert.since != data.get("s") or alert.state != Alert.State.FIRING:
        raise Refused("The firing this link was sent for is over.")
    if alert.acked is not None:
        raise Refused(f"Used already: {alert.acked_by} acknowledged this firing.")
    return Link(alert)


def acknowledge(alert: Alert, by: str) -> bool:
    """Acknowledge a firing alert (once: False if it is not firing or was already)."""
    now = round(time.time() * 1000)
    done = Alert.objects.filter(
        pk=alert.pk, state=Alert.State.FIRING, since=alert.since, acked__isnull=True
    ).update(acked=now, acked_by=by)
    if done:
        alert.acked, alert.acked_by = now, by
    return bool(done)
