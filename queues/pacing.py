"""Acting on every message a filter matches, in bounded steps: count them first, then act
page by page, paced (a rate cap, messages a second) and, for a move or a redrive, with a
canary. Both the console's background job (dashboard/acting/jobs.py, in Celery) and the CLI
(``rsmq message redrive|move --rate --canary``) run this; no Django here.

* **Count**: a full scan with browse's bounded calls (``count_matches``).
* **Act**: each step reads a page of matches with ``browse`` and hands it to
  ``act_checked``, which acts on a message only if it is still as that page read it
  (same score): a message changed since it was read (received, requeued) is counted as
  changed, never acted on blindly. Never more messages than the count the operator
  confirmed. Visibility changes walk the queue from its end (a message they push later
  lands behind the walk, not ahead of it).
* **Canary** (move / redrive): act on the first ``canary`` messages, watch ``watch``
  seconds, and stop — saying so — if more than ``max_bounce`` % of them **came back**:
  their ids are in the queue they were taken from again (a consumer failed them back to
  the dead-letter queue). Else go on at the cap.
* **Control**: after every step (and while watching or paused) the runner calls
  ``control(progress)``, which answers ``"run"``, ``"pause"`` or ``"cancel"``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from . import validation as v
from .client import RedisSMQ
from .errors import InvalidArgument
from .models import CHECKED_ACTIONS, Cursor

#: messages a counting page asks for
COUNT_PAGE = v.MAX_PAGE
#: messages one browse call looks at, counting or acting (browse's ``step``): well inside
#: the 50 ms a call may hold Redis on a loaded machine (bench/jobs.py)
SCAN_STEP = 200
#: messages an acting step handles at most (one act_checked call)
STEP = 200
#: how often a paused run, or a canary's watch, looks again (s)
POLL = 0.25
RATE_MAX = 100_000
WATCH_MAX = 3600
#: the actions that need the whole queue's admin when the filter does not narrow
ACTIONS = CHECKED_ACTIONS

RUN, PAUSE, CANCEL = "run", "pause", "cancel"
Control = Callable[["Progress"], str]


@dataclass(frozen=True, slots=True)
class Pace:
    """A rate cap (messages a second, None: as fast as the steps go) and a canary."""

    rate: float | None = None
    canary: int = 0
    watch: float = 0.0
    max_bounce: float = 0.0  # percent of the canary that may come back


def checked_pace(
    rate: object = None,
    canary: object = 0,
    watch: object = 0,
    max_bounce: object = 0,
    count: int | None = None,
) -> Pace:
    """A pace from what was typed; InvalidArgument naming the first bad field and its
    range (a canary larger than the count too)."""
    r: float | None = None
    if rate not in (None, ""):
        r = _number("rate", rate, RATE_MAX)
        if r <= 0:
            raise InvalidArgument("rate", f"rate must be more than 0 and at most {RATE_MAX}")
    c = _whole("canary", canary, 0, 2**31)
    if count is not None and c > count:
        raise InvalidArgument(
            "canary", f"canary must be at most the {count} matching messages, not {c}"
        )
    w = _number("watch", watch or 0, WATCH_MAX)
    b = _number("max_bounce", max_bounce or 0, 100)
    if c and not w:
        raise InvalidArgument("watch", f"watch: seconds to watch the canary, 1 to {WATCH_MAX}")
    return Pace(r, c, w, b)


def _number(name: str, value: object, high: float) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidArgument(name, f"{name} must be a number from 0 to {high}") from None
    if not (0 <= x <= high) or math.isnan(x):
        raise InvalidArgument(name, f"{name} must be a number from 0 to {high}")
    return x


def _whole(name: str, value: object, low: int, high: int) -> int:
    if value in (None, ""):
        return 0
    try:
        x = int(str(value))
    except ValueError:
        raise InvalidArgument(name, f"{name} must be a whole number from {low} to {high}") from None
    return v.integer(name, x, low, high)


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do to which messages: ``match`` is a filter's ``browse_kwargs()``."""

    qname: str
    action: str
    match: Mapping[str, Any]
    to: str | None = None
    vt: int | None = None
    keep_counts: bool = False
    pace: Pace = Pace()

    def check(self) -> None:
        if self.action not in ACTIONS:
            raise InvalidArgument("action", f"action must be one of {', '.join(ACTIONS)}")
        v.qname(self.qname)
        if self.action == "move" and not self.to:
            raise InvalidArgument("to", "to: the queue to move the messages to")
        if self.to is not None:
            v.qname(self.to, "to")
            if self.to == self.qname:
                raise InvalidArgument("to", "to must be a different queue from the source")
        if self.action == "visibility":
            v.seconds("vt", self.vt)
        if self.action == "requeue" and self.match.get("state", "all") in ("all", "visible"):
            raise InvalidArgument(
                "state", "requeue: state must be hidden, inflight or delayed (visible ones are)"
            )
        if self.pace.canary and self.action not in ("move", "redrive"):
            raise InvalidArgument("canary", "a canary is for a move or a redrive")


@dataclass
class Progress:
    phase: str = "counting"  # counting, counted, canary, watching, running, paused, done,
    # cancelled, stopped (the canary came back)
    matched: int = 0  # the count (while counting: so far)
    done: int = 0  # messages acted on
    changed: int = 0  # changed since they were read: left alone
    skipped: int = 0  # too large for the destination, or no queue to go back to
    canary_ids: list[str] = field(default_factory=list)
    bounced: int = 0  # canary messages that came back
    note: str = ""  # why it stopped, in words
    steps: int = 0
    until: float = 0.0  # epoch s (wall clock) a timed phase ends at: the canary's watch

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["canary"] = len(d.pop("canary_ids"))
        return d


def count_matches(
    rsmq: RedisSMQ, qname: str, match: Mapping[str, Any], control: Control | None = None
) -> Progress:
    """Every message ``match`` finds, counted with browse's bounded calls; ``control`` is
    told after each page (and may cancel)."""
    p = Progress()
    after: Cursor | None = None
    while True:
        page = rsmq.browse(qname, after=after, limit=COUNT_PAGE, preview=1, step=SCAN_STEP, **match)
        p.matched += len(page.items)
        p.steps += 1
        if page.at_end and page.complete:
            break
        if control is not None and _wait(control, p) == CANCEL:
            p.phase = "cancelled"
            return p
        after = page.resume
        if after is None:
            break
    p.phase = "counted"
    if control is not None:
        control(p)
    return p


def _wait(control: Control, p: Progress) -> str:
    """The control's word; while it says pause, ask again every POLL seconds."""
    said = control(p)
    if said != PAUSE:
        return said
    was = p.phase
    p.phase = "paused"
    while said == PAUSE:
        time.sleep(POLL)
        said = control(p)
    p.phase = was
    return said


#: the actions that remove messages from the queue: what an undo stash can keep
REMOVING = ("delete", "move", "redrive")


def run(
    rsmq: RedisSMQ,
    plan: Plan,
    limit: int,
    control: Control | None = None,
    keep: str | None = None,
) -> Progress:
    """Act on at most ``limit`` matches (the confirmed count), paced; returns how it went.
    ``keep``: an undo token (``open_undo``; a move's with ``to=plan.to``) that keeps what
    every step of a delete, move or redrive removes, in the same call as the removal: one
    stash for the whole run."""
    plan.check()
    if keep is not None and plan.action not in REMOVING:
        raise InvalidArgument("keep", f"keep: {plan.action} removes nothing to keep")
    pace = plan.pace
    ctl: Control = control or (lambda p: RUN)
    p = Progress(phase="canary" if pace.canary else "running", matched=limit)
    backwards = plan.action == "visibility"
    at: Cursor | None = Cursor("", b"") if backwards else None
    step = STEP
    if pace.rate:
        step = max(1, min(STEP, math.ceil(pace.rate / 4)))  # about four steps a second
    started = time.monotonic()
    paced_from = 0  # the rate counts from here (after a canary's watch)
    canary_left = pace.canary
    watched = False

    def ask() -> str:
        """The control's word; time spent paused does not count towards the rate (no
        burst to catch up after a resume)."""
        nonlocal started
        t0 = time.monotonic()
        said = _wait(ctl, p)
        started += time.monotonic() - t0
        return said

    while p.done < limit:
        if pace.rate:
            due = started + (p.done - paced_from) / pace.rate
            while (wait := due - time.monotonic()) > 0:
                time.sleep(min(wait, POLL))
                if ask() == CANCEL:
                    return _end(p, "cancelled")
        want = min(step, limit - p.done)
        if canary_left:
            want = min(want, canary_left)
        kw: dict[str, Any] = {"before": at} if backwards else {"after": at}
        page = rsmq.browse(plan.qname, limit=want, preview=1, step=SCAN_STEP, **kw, **plan.match)
        items = page.items
        acted = rsmq.act_checked(
            plan.qname,
            plan.action,
            [(m.member if m.member is not None else m.id, m.visible_at) for m in items],
            to=plan.to,
            vt=plan.vt,
            keep_counts=plan.keep_counts,
            keep=keep,
        )
        p.steps += 1
        p.done += acted.done
        p.changed += acted.changed
        p.skipped += acted.skipped
        if canary_left:
            p.canary_ids += acted.ids
            canary_left = max(0, canary_left - acted.looked)
        walked_out = False
        if acted.looked < len(items):
            # it stopped early (bytes moved): go on from the last message it got to
            if acted.looked:
                last = items[acted.looked - 1]
                at = Cursor(str(last.visible_at), last.member or last.id.encode())
        else:
            walked_out = page.at_end
            at = page.resume if page.resume is not None else at
        if pace.canary and p.canary_ids and not watched and (not canary_left or walked_out):
            if not _watch(rsmq, plan, p, ctl):
                return p
            watched, canary_left = True, 0
            paced_from, started = p.done, time.monotonic()
        if walked_out:
            break
        if ask() == CANCEL:
            return _end(p, "cancelled")
    return _end(p, "done")


def _watch(rsmq: RedisSMQ, plan: Plan, p: Progress, ctl: Control) -> bool:
    """The canary's watch: False (and the run stopped, saying why) if too many came back."""
    p.phase = "watching"
    p.until = time.time() + plan.pace.watch
    ids = p.canary_ids
    allowed = plan.pace.max_bounce / 100 * len(ids)
    until = time.monotonic() + plan.pace.watch
    while True:
        back = sum(
            rsmq.count_present(plan.qname, ids[k : k + v.MAX_BATCH])
            for k in range(0, len(ids), v.MAX_BATCH)
        )
        p.bounced = back
        if back > allowed:
            watched = plan.pace.watch - max(0.0, until - time.monotonic())
            p.note = (
                f"Stopped: {back} of {len(ids)} canary messages came back to {plan.qname} "
                f"within {watched:.0f} s (more than {plan.pace.max_bounce:g}%). "
                f"{p.done - back} stayed moved; nothing more was moved."
            )
            _end(p, "stopped")
            return False
        if time.monotonic() >= until:
            break
        if _wait(ctl, p) == CANCEL:
            _end(p, "cancelled")
            return False
        time.sleep(min(POLL, max(0.0, until - time.monotonic())))
    p.note = (
        f"Canary: {back} of {len(ids)} came back to {plan.qname} in {plan.pace.watch:g} s "
        f"(at most {plan.pace.max_bounce:g}% allowed): going on."
    )
    p.phase = "running"
    p.until = 0.0
    return True


def _end(p: Progress, phase: str) -> Progress:
    p.phase = phase
    return p
