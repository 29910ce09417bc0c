"""Flow and time, for machines: pause, throttle and resume a queue's consumers (the same
actions as the queue page's, dashboard/acting/flow.py: the operator's, audited), read its
flag with who honours it and who bypasses it, and what is coming due.

    POST /api/queues/<q>/pause/      {"reason": "deploy 42", "duration": "1h"}
    POST /api/queues/<q>/throttle/   {"rate": 50, "reason": "...", "duration": "10m"}
    POST /api/queues/<q>/resume/
    GET  /api/queues/<q>/flow/       the flag (null: it runs freely), its counts, workers
    GET  /api/queues/<q>/due/?scale=minute|hour|day

Its routes are on native's router (api/native.py ``both``), in the one route table."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from ninja import Schema
from pydantic import Field

from dashboard.access.callers import caller
from dashboard.acting import flow as flows
from dashboard.acting.actions import QUEUE_ACTIONS
from dashboard.api.bodies import Known
from dashboard.api.calls import BadInput, queue_in_url, run
from dashboard.api.native import ERRORS, both
from dashboard.display.formatting import iso
from dashboard.places import place as places
from dashboard.places.place import Place
from dashboard.snapshots.history import queue_rate
from dashboard.triage import due as dues
from queues import InvalidArgument
from queues.limits import DUE_SCALES, FLOW_RATE_MAX, FLOW_RATE_MIN, FLOW_REASON_MAX
from queues.models import Flow

PAUSE, THROTTLE, RESUME = (QUEUE_ACTIONS[k] for k in ("pause", "throttle", "resume"))
ISO = "ISO 8601 UTC, ms"


class PauseIn(Known):
    reason: str = Field("", description=f"why: at most {FLOW_REASON_MAX} characters, audited")
    duration: str | float | None = Field(
        None, description="resume by itself after this long: seconds, or 90s, 10m, 2h, 1d; "
        "none: until resumed",
    )  # fmt: skip


class ThrottleIn(PauseIn):
    rate: float = Field(
        description=f"receives a second, across every consumer that honours it: "
        f"{FLOW_RATE_MIN} to {FLOW_RATE_MAX:,}"
    )


class FlowOut(Schema):
    queue: str
    state: str = Field(description="paused, or throttled")
    rate: float | None = Field(description="a throttle's receives a second")
    reason: str
    by: str = Field(description="who set it (a user, or an API token's name)")
    since: str | None = Field(description=ISO)
    until: str | None = Field(description=f"{ISO}; null: until resumed")
    received: int = Field(description="receives totalrecv counted since it was set")
    granted: int = Field(description="of them, those the flag let through")
    bypassed: int = Field(description="of them, by clients that ignore it (Node rsmq, ports)")
    held: int = Field(description="receive calls it held back")
    last_held: str | None = Field(description=f"the last of them, {ISO}")


class ResumedOut(Schema):
    resumed: bool = Field(description="false: it was neither paused nor throttled")
    was: FlowOut | None


class WorkerOut(Schema):
    id: str
    host: str
    pid: int
    honours: bool = Field(description="false: a worker of a release before pause and throttle")


class FlowRead(Schema):
    flow: FlowOut | None = Field(description="null: it runs freely")
    workers: list[WorkerOut] = Field(description="the live rsmq workers of the queue")
    honoured_by: str = Field(description="who the flag holds, in words")
    bypassed_by: str = Field(description="who it does not, in words")


class BucketOut(Schema):
    start: str | None = Field(description=ISO)
    end: str | None = Field(description=ISO)
    count: int


class DueOut(Schema):
    queue: str
    scale: str = Field(description=f"one of {', '.join(DUE_SCALES)}")
    now: str | None = Field(description=f"the Redis server's time of the reading, {ISO}")
    visible: int
    hidden: int = Field(description="in flight (received, vt running) and delayed")
    later: int = Field(description="hidden messages due past the last bucket")
    buckets: list[BucketOut]
    peak: BucketOut | None = Field(description="the busiest five minutes of the busiest bucket")
    peak_text: str = Field(description='"38,412 due 03:00–03:05 UTC"')
    backlog_text: str = Field(description="what the peak makes at the current receive rate")
    receive_rate: float | None = Field(description="messages/s now (null: not known yet)")


HONOURED = (
    "rsmq worker, this console's API (its fast path too) and every client of this project "
    "(queues: receive, receive_messages, pop)"
)
BYPASSED = "Node rsmq and the other ports (PyRSMQ, go-rsmq, ...): they never read the flag"


def flow_json(flow: Flow | None) -> dict[str, Any] | None:
    if flow is None:
        return None
    return {
        "queue": flow.qname, "state": flow.state, "rate": flow.rate, "reason": flow.reason,
        "by": flow.by, "since": iso(flow.since), "until": iso(flow.until) if flow.until else None,
        "received": flow.received, "granted": flow.granted, "bypassed": flow.bypassed,
        "held": flow.held, "last_held": iso(flow.last_held) if flow.last_held else None,
    }  # fmt: skip


def _set(request: HttpRequest, place: Place, qname: str, verb: str, body: Any) -> Any:
    """Pause, throttle or resume, checked as the page checks it, audited as the page's."""
    queue_in_url(qname)
    who = caller(request)
    data = {} if body is None else {**body.model_dump(), "for": body.duration}
    try:
        asked = flows.read(verb, data)
    except InvalidArgument as e:  # refused (and audited) by run, naming the field
        refusal = e

        def refused() -> tuple[None, None]:
            raise refusal

        return run(who, place, qname, refused)
    params: dict[str, Any] = dict(asked.params())

    def work() -> tuple[Flow | None, None]:
        _, flag = flows.apply(place, qname, asked, who.actor)
        params.update(asked.params(flag))
        return flag, None

    return run(who, place, qname, work, params=params)


@both("POST", "/queues/{qname}/pause/", PAUSE, "pause_queue", response={200: FlowOut, **ERRORS})
def pause_queue(
    request: HttpRequest,
    qname: str,
    body: PauseIn | None = None,
    conn: str | None = None,
    ns: str | None = None,
) -> dict[str, Any] | None:
    """Pause the queue's consumers (operator): this project's receive script — rsmq
    worker, this API, every client of this project — hands out nothing until it resumes
    (``duration``: by itself, after that long). Node rsmq and the other ports ignore it."""
    body = body or PauseIn(reason="", duration=None)
    return flow_json(_set(request, places.resolve(conn, ns), qname, "pause", body))


@both("POST", "/queues/{qname}/throttle/", THROTTLE, "throttle_queue",
      response={200: FlowOut, **ERRORS})  # fmt: skip
def throttle_queue(
    request: HttpRequest,
    qname: str,
    body: ThrottleIn,
    conn: str | None = None,
    ns: str | None = None,
) -> dict[str, Any] | None:
    """Throttle the queue's consumers (operator) to ``rate`` receives a second, together:
    a token bucket in the receive script, on the Redis server's clock."""
    return flow_json(_set(request, places.resolve(conn, ns), qname, "throttle", body))


@both("POST", "/queues/{qname}/resume/", RESUME, "resume_queue",
      response={200: ResumedOut, **ERRORS})  # fmt: skip
def resume_queue(
    request: HttpRequest, qname: str, conn: str | None = None, ns: str | None = None
) -> dict[str, Any]:
    """Take a pause or a throttle away (operator); ``was``: the flag it had."""
    was = _set(request, places.resolve(conn, ns), qname, "resume", None)
    return {"resumed": was is not None, "was": flow_json(was)}


@both(["GET", "HEAD"], "/queues/{qname}/flow/", None, "queue_flow", tags=["read"],
      response={200: FlowRead, **ERRORS})  # fmt: skip
def queue_flow(
    request: HttpRequest, qname: str, conn: str | None = None, ns: str | None = None
) -> JsonResponse:
    """The queue's pause or throttle (null: it runs freely) with its counts — receives it
    let through, held back, and those that bypassed it — and the live rsmq workers of the
    queue, each saying whether it honours it."""
    place = places.resolve(conn, ns)
    places.queue_stats(place, qname)
    view = place.rsmq.flow_view(qname)
    workers = [{"id": w.id, "host": w.host, "pid": w.pid, "honours": w.flow} for w in view.workers]
    return JsonResponse({"flow": flow_json(view.flow), "workers": workers,
                         "honoured_by": HONOURED, "bypassed_by": BYPASSED})  # fmt: skip


@both(["GET", "HEAD"], "/queues/{qname}/due/", None, "queue_due", tags=["read"],
      response={200: DueOut, **ERRORS})  # fmt: skip
def queue_due(
    request: HttpRequest,
    qname: str,
    scale: str = "hour",
    conn: str | None = None,
    ns: str | None = None,
) -> JsonResponse:
    """When the queue's hidden messages come due: ``scale`` minute (the next hour), hour
    (48 hours) or day (30 days); the peak, and the backlog it makes at the current
    receive rate."""
    if scale not in DUE_SCALES:
        raise BadInput(f"scale must be one of {', '.join(DUE_SCALES)}")
    place = places.resolve(conn, ns)
    s = places.queue_stats(place, qname)
    view = place.rsmq.flow_view(qname, scale)
    rate = queue_rate(place.conn.name, place.ns, qname, s.now)
    o = dues.outlook(view.due, rate.receive_rate if rate else None, view.flow)
    d = o.due

    def bucket(b: Any) -> dict[str, Any]:
        return {"start": iso(b.start), "end": iso(b.end), "count": b.count}

    return JsonResponse({
        "queue": qname, "scale": scale, "now": iso(d.now), "visible": d.visible,
        "hidden": d.hidden, "later": d.later, "buckets": [bucket(b) for b in d.buckets],
        "peak": bucket(d.peak) if d.peak else None, "peak_text": o.peak_text,
        "backlog_text": o.backlog_text, "receive_rate": o.rate,
    })  # fmt: skip
