"""What an operator says of a queue beside acting on its messages: its open anomaly flags
acknowledged (while they stay open) or snoozed (for a while), or that taken back; the
queue expected idle (nothing consumes it by design: never an incident), or not. Each is
an action of the action table (dashboard/acting/actions.py), audited; the page it was
posted from is shown again (htmx follows the redirect and takes its ``#content``)."""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from dashboard.acting.actions import TRIAGE_ACTIONS
from dashboard.models import AnomalyFlag, FlagAck, QueueExpectation
from dashboard.triage import flags
from dashboard.views.actions import DONE, Handlers, Posted, Result, plural, posted
from dashboard.views.common import back
from dashboard.web.htmx import HtmxHttpRequest

Kind = AnomalyFlag.Kind


@login_required
@require_POST
def queue_triage(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    post, handler = posted(request, TRIAGE_ACTIONS, TRIAGE_HANDLERS, conn, ns, qname)
    handler(post)
    return redirect(back(request, post.place.url("rsmq-queue", qname)))


def _kinds(post: Posted) -> list[str]:
    """The open flags' kinds the form names (none named: every open one of the queue)."""
    asked = [k for k in post.data.getlist("kind") if k in Kind.values]
    open_ = AnomalyFlag.objects.filter(
        connection=post.place.conn.name, namespace=post.place.ns, queue=post.qname,
        end__isnull=True,
    ).values_list("kind", flat=True)  # fmt: skip
    kinds = sorted(set(open_))
    return [k for k in kinds if k in asked] if asked else kinds


def _words(kinds: list[str]) -> str:
    return ", ".join(Kind(k).label for k in kinds)


def _ack(post: Posted, until: int | None, verb: str, how: str) -> Result:
    kinds = _kinds(post)
    if not kinds:
        word = "snooze" if until is not None else "acknowledge"
        return post.refuse(f"{post.qname} has no open flag to {word}.")
    now = round(time.time() * 1000)
    where: dict[str, Any] = {
        "connection": post.place.conn.name,
        "namespace": post.place.ns,
        "queue": post.qname,
    }

    def work() -> tuple[str, int | None]:
        for kind in kinds:
            FlagAck.objects.update_or_create(
                **where, kind=kind,
                defaults={"at": now, "until": until, "by": post.request.user.get_username()},
            )  # fmt: skip
        text = f"{verb} {plural(len(kinds), 'flag')} of {post.qname} {how}: {_words(kinds)}."
        return text, len(kinds)

    post.act(work, params={"kinds": kinds, "until": until})
    return DONE


def acknowledge(post: Posted) -> Result:
    return _ack(post, None, "Acknowledged", "while they stay open")


def snooze(post: Posted) -> Result:
    span = post.data.get("for", "")
    if span not in flags.SNOOZES:
        return post.refuse(f"Snooze for one of {', '.join(flags.SNOOZES)}.")
    until = round(time.time() * 1000) + flags.SNOOZES[span] * 1000
    return _ack(post, until, "Snoozed", f"for {span}")


def unacknowledge(post: Posted) -> Result:
    kinds = _kinds(post) or [k for k in post.data.getlist("kind") if k in Kind.values]
    rows = FlagAck.objects.filter(
        connection=post.place.conn.name, namespace=post.place.ns, queue=post.qname,
        kind__in=kinds,
    )  # fmt: skip

    def work() -> tuple[str, int | None]:
        n, _ = rows.delete()
        return f"{plural(n, 'flag')} of {post.qname} back to news: {_words(kinds)}.", n

    post.act(work, params={"kinds": kinds})
    return DONE


EXPECT = {"idle": True, "consumed": False, "default": None}


def expect(post: Posted) -> Result:
    said = post.data.get("idle", "")
    if said not in EXPECT:
        return post.refuse(f"Expected: one of {', '.join(EXPECT)}.")
    idle = EXPECT[said]
    where: dict[str, Any] = {
        "connection": post.place.conn.name,
        "namespace": post.place.ns,
        "queue": post.qname,
    }

    def work() -> tuple[str, int | None]:
        if idle is None:
            QueueExpectation.objects.filter(**where).delete()
            text = f"{post.qname}: judged by its counters again"
            text += " (a dead-letter queue is expected idle)."
        else:
            QueueExpectation.objects.update_or_create(
                **where, defaults={"idle": idle, "by": post.request.user.get_username()}
            )
            text = (
                f"{post.qname} is expected idle: nothing consumes it by design."
                if idle
                else (
                    f"{post.qname} must be consumed: no consumer is an incident, even for a"
                    " dead-letter queue."
                )
            )
        return text + " The order changes with the next snapshot.", None

    post.act(work, params={"idle": idle})
    return DONE


# The button's value → its handler (its role and audit name: dashboard/acting/actions.py).
TRIAGE_HANDLERS: Handlers = {
    "ack": acknowledge,
    "snooze": snooze,
    "unack": unacknowledge,
    "expect": expect,
}
