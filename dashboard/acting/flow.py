"""Pause, throttle and resume a queue's consumers, from the queue page and the API alike
(queues/ops/flow.py keeps the flag in Redis, where the receive script honours it): what
was asked, checked the same way on both surfaces; what is said of it; and who honours the
flag and who bypasses it.

Who honours it: this project's receive script — ``rsmq worker`` (each registered worker
says so: ``WorkerInfo.flow``), the Python client (sync and asyncio) and the console's own
API and fast path. Who does not: Node rsmq and the other ports, which never read the
flag: their receives go on, and show as the queue's ``totalrecv`` moving past what the
flag let through (``Flow.bypassed``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from django.utils import timezone

from dashboard.display.formatting import absolute, duration, epoch_ms, exact, per_second
from dashboard.places.place import Place
from queues import InvalidArgument
from queues import validation as v
from queues.limits import FLOW_RATE_MAX, FLOW_RATE_MIN, FLOW_REASON_MAX, FLOW_SECONDS_MAX
from queues.models import Flow, WorkerInfo

#: the verbs, as the queue page's buttons and the API's routes name them
VERBS = ("pause", "throttle", "resume")


class FlowParams(TypedDict):
    """A flow action's audit params: what was set (``state``: paused, throttled, or
    resumed), its rate, why, for how long (s; None: until resumed) and until when (epoch
    ms of the server's clock; None: until resumed)."""

    state: str
    rate: float | None
    reason: str
    seconds: float | None
    until: int | None


@dataclass(frozen=True, slots=True)
class Asked:
    """A pause, a throttle or a resume as asked, checked."""

    verb: str
    rate: float | None = None
    reason: str = ""
    seconds: float | None = None

    def params(self, flow: Flow | None = None) -> FlowParams:
        state = {"pause": "paused", "throttle": "throttled", "resume": "resumed"}[self.verb]
        return {"state": state, "rate": self.rate, "reason": self.reason,
                "seconds": self.seconds, "until": flow.until if flow else None}  # fmt: skip


def read(verb: str, data: Mapping[str, Any]) -> Asked:
    """What a form or an API body asks: ``rate`` (a throttle's receives a second),
    ``reason``, ``for`` (a duration: 90, 10m, 2h, 1d; empty: until resumed).
    InvalidArgument names the first bad field."""
    if verb not in VERBS:
        raise InvalidArgument("action", f"action must be one of {', '.join(VERBS)}")
    if verb == "resume":
        return Asked(verb)
    reason = data.get("reason") or ""
    if not isinstance(reason, str) or len(reason.strip()) > FLOW_REASON_MAX:
        raise InvalidArgument("reason", f"reason: text of at most {FLOW_REASON_MAX} characters")
    raw = data.get("for")
    seconds: float | None = None
    if raw not in (None, ""):
        seconds = v.duration("for", raw)
        if not 0 < seconds <= FLOW_SECONDS_MAX:
            raise InvalidArgument(
                "for", f"for: more than 0 s, at most {FLOW_SECONDS_MAX // 86400} days"
            )
    rate: float | None = None
    if verb == "throttle":
        raw_rate = data.get("rate")
        rate = float("nan")
        if isinstance(raw_rate, (int, float, str)) and not isinstance(raw_rate, bool):
            try:
                rate = float(raw_rate)
            except ValueError:
                pass
        if not FLOW_RATE_MIN <= rate <= FLOW_RATE_MAX:
            raise InvalidArgument(
                "rate", f"rate: receives a second, {FLOW_RATE_MIN} to {FLOW_RATE_MAX:,}"
            )
    return Asked(verb, rate, reason.strip(), seconds)


def apply(place: Place, qname: str, asked: Asked, by: str) -> tuple[str, Flow | None]:
    """Set (or take away) the flag; what to tell the operator, and the flag now (a resume:
    the one it took away)."""
    rsmq = place.rsmq
    if asked.verb == "resume":
        was = rsmq.resume_queue(qname)
        if was is None:
            return f"{qname} was neither paused nor throttled: nothing to resume.", None
        return f"Resumed {qname}: its consumers receive as usual again.", was
    if asked.verb == "pause":
        flow = rsmq.pause_queue(qname, asked.reason, by, asked.seconds)
    else:
        assert asked.rate is not None
        flow = rsmq.throttle_queue(qname, asked.rate, asked.reason, by, asked.seconds)
    return f"{words(flow).capitalize()}.", flow


def words(flow: Flow) -> str:
    """ "paused until 2026-11-26 14:05 UTC (deploy 42)" / "throttled to 50/s until resumed"."""
    what = flow.state if flow.paused else f"throttled to {per_second(flow.rate)}"
    until = "until resumed" if flow.until is None else f"until {_at(flow.until)}"
    if flow.until is not None and flow.left is not None:
        until += f" (in {duration(flow.left)})"
    return f"{what} {until}" + (f" ({flow.reason})" if flow.reason else "")


def _at(ms: int) -> str:
    at = epoch_ms(ms)
    return absolute(at, timezone.get_current_timezone(), "minutes") if at else "–"


@dataclass(frozen=True, slots=True)
class Consumers:
    """Who the flag holds and who it does not: the live workers of the queue that honour
    it (``honour``) and those that registered without saying so (an older release:
    ``older``), and the receives since it was set that bypassed it."""

    flow: Flow | None
    honour: list[WorkerInfo]
    older: list[WorkerInfo]

    @property
    def bypassed(self) -> int:
        return self.flow.bypassed if self.flow else 0

    @property
    def bypass_text(self) -> str:
        """What the bypassing receives say, in words ("" when there were none)."""
        if not self.flow or not self.bypassed:
            return ""
        n = self.bypassed
        since = duration((self.flow.now - self.flow.since) / 1000)
        verb = "was" if n == 1 else "were"
        return (f"{exact(n)} message{'' if n == 1 else 's'} {verb} received in the {since} "
                f"since it was {self.flow.state} by clients that ignore it (totalrecv moved "
                "past what the flag let through): Node rsmq or another port is consuming "
                "this queue")  # fmt: skip


def consumers(flow: Flow | None, workers: list[WorkerInfo]) -> Consumers:
    return Consumers(flow, [w for w in workers if w.flow], [w for w in workers if not w.flow])


def held_text(flow: Flow) -> str:
    """Why a paused queue's alerts are held (the queue page, the evaluation's log)."""
    since = epoch_ms(flow.since) or dt.datetime.now(dt.UTC)
    who = f" by {flow.by}" if flow.by else ""
    why = f": {flow.reason}" if flow.reason else ""
    return f"paused since {absolute(since, timezone.get_current_timezone(), 'minutes')}{who}{why}"
