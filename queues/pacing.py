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
* **Steps, never sleeps**: ``count_step`` and ``step`` go on from where a ``Progress``
  stands for a bounded time and return; ``step`` says how long until it is due again
  (the rate, the canary's watch). Between two steps nothing is held: the CLI's ``run``
  sleeps there, a console job's Celery task queues its next step with that countdown
  (dashboard/acting/jobs.py), so a job at 0.01 a second or a canary watched for an hour
  never holds a worker. ``Progress.state()`` is JSON: the next step may run elsewhere.
* **Control**: between steps (and while waiting or paused) ``run`` calls
  ``control(progress)``, which answers ``"run"``, ``"pause"`` or ``"cancel"``.
* **Rescheduling** (``deliver``, ``shift``, ``spread``: ``When``): the delayed messages
  due in a window, walked in the queue's order and given new times by ``reschedule``
  (queues/ops/flow.py) — now, shifted by a duration, or spread evenly over another
  window in their order — each only if still as read and never received. A message the
  walk meets again where it put it is passed over. With ``keep`` its Undo puts each
  score back exactly.
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
#: the most canary messages: their ids are kept (a job's row) and looked for while watched
CANARY_MAX = 10_000
#: rescheduling delayed messages (``When``)
RESCHEDULING = ("deliver", "shift", "spread")
#: the actions that need the whole queue's admin when the filter does not narrow
ACTIONS = (*CHECKED_ACTIONS, *RESCHEDULING)

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
    c = _whole("canary", canary, 0, CANARY_MAX)
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
class When:
    """A rescheduling: which delayed messages it takes — those due in [due_from,
    due_until) (epoch ms of the server's clock; None: unbounded) — and their new times:
    ``deliver`` now, ``shift`` by ``shift_ms`` (later if positive), ``spread`` evenly over
    [spread_from, spread_until) in their order."""

    due_from: int | None = None
    due_until: int | None = None
    shift_ms: int = 0
    spread_from: int = 0
    spread_until: int = 0

    def check(self, action: str) -> None:
        for name in ("due_from", "due_until"):
            value = getattr(self, name)
            if value is not None:
                v.integer(name, value, 0, 2**53)
        if self.due_from is not None and self.due_until is not None:
            if self.due_until <= self.due_from:
                raise InvalidArgument("due_until", "due_until must be after due_from")
        if action == "shift":
            most = v.MAX_SECONDS * 1000
            v.integer("shift", self.shift_ms, -most, most)
            if not self.shift_ms:
                raise InvalidArgument("shift", "shift: a duration, earlier (-) or later")
        if action == "spread":
            v.integer("spread_from", self.spread_from, 0, 2**53)
            v.integer("spread_until", self.spread_until, 0, 2**53)
            if self.spread_until <= self.spread_from:
                raise InvalidArgument("spread_until", "spread_until must be after spread_from")

    def holds(self, visible_at: int) -> bool:
        """Whether a message due then is in the window."""
        return (self.due_from is None or visible_at >= self.due_from) and (
            self.due_until is None or visible_at < self.due_until
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do to which messages: ``match`` is a filter's ``browse_kwargs()``; a
    rescheduling's (``RESCHEDULING``) ``when`` says which window and to when."""

    qname: str
    action: str
    match: Mapping[str, Any]
    to: str | None = None
    vt: int | None = None
    keep_counts: bool = False
    pace: Pace = Pace()
    when: When | None = None

    def check(self) -> None:
        if self.action not in ACTIONS:
            raise InvalidArgument("action", f"action must be one of {', '.join(ACTIONS)}")
        v.qname(self.qname)
        if self.action in RESCHEDULING:
            if self.when is None:
                raise InvalidArgument("when", f"{self.action}: which window, and to when")
            if self.match.get("state") != "delayed":
                raise InvalidArgument("state", f"{self.action}: state must be delayed")
            self.when.check(self.action)
        elif self.when is not None:
            raise InvalidArgument("when", f"{self.action} takes no window")
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
    """How a count or a run stands: what the page shows, and — between two steps — all a
    step needs to go on (``state()`` / ``from_state``: JSON, so a job's next step may run
    in another process, long after)."""

    phase: str = "counting"  # counting, counted, canary, watching, running, done,
    # cancelled, stopped (the canary came back); "paused" is the caller's word
    matched: int = 0  # the count (while counting: so far)
    done: int = 0  # messages acted on
    changed: int = 0  # changed since they were read: left alone
    skipped: int = 0  # too large for the destination, or no queue to go back to
    canary_ids: list[str] = field(default_factory=list)
    bounced: int = 0  # canary messages that came back
    note: str = ""  # why it stopped, in words
    steps: int = 0
    #: where the walk goes on: a cursor's (score, member as hex); None: from the start
    at: tuple[str, str] | None = None
    at_end: bool = False  # the walk reached the queue's end
    canary_left: int = 0  # canary messages still to act on
    watched: bool = False  # the canary's watch is over (or there is none)
    watch_until: float = 0.0  # epoch s: the canary's watch ends
    paced_from: int = 0  # the rate counts from this many done ...
    paced_at: float = 0.0  # ... at this time (epoch s)
    walked: int = 0  # a rescheduling's messages given a time so far: a spread's place
    #: a spread's messages put ahead of the walk, by id: their new time (passed over there)
    moved: dict[str, int] = field(default_factory=dict)

    def state(self) -> dict[str, Any]:
        """All of it as JSON values (``from_state`` reads it back)."""
        return asdict(self)

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Progress:
        known = {k: state[k] for k in cls.__dataclass_fields__ if k in state}
        if known.get("at") is not None:
            known["at"] = tuple(known["at"])
        return cls(**known)

    @property
    def ended(self) -> bool:
        return self.phase in ENDED

    def cursor(self) -> Cursor | None:
        return None if self.at is None else Cursor(self.at[0], bytes.fromhex(self.at[1]))

    def go_on_from(self, c: Cursor | None) -> None:
        self.at = None if c is None else (c.score, c.member.hex())

    def resumed(self, now: float | None = None) -> None:
        """After a pause: the rate counts from now (no burst to catch up)."""
        self.paced_from, self.paced_at = self.done, time.time() if now is None else now


#: the phases a run ends in
ENDED = ("counted", "done", "cancelled", "stopped")
#: how long one step may go on acting (s): a job's Celery task is one step, so the tasks
#: queued behind it (a snapshot) wait at most about this long
STEP_SECONDS = 0.5
#: how often a canary's watch looks at the canary (s)
WATCH_POLL = 1.0


def count_step(
    rsmq: RedisSMQ, qname: str, match: Mapping[str, Any], p: Progress,
    budget: float = STEP_SECONDS, when: When | None = None,
) -> bool:  # fmt: skip
    """Count on, with browse's bounded calls, for about ``budget`` seconds from where
    ``p`` stands (only those due in ``when``'s window, if given); True when every match
    is counted (``p.phase`` "counted")."""
    until = time.monotonic() + budget
    if p.at is None and when is not None and when.due_from is not None:
        p.go_on_from(Cursor.at_time(when.due_from))
    while True:
        page = rsmq.browse(qname, after=p.cursor(), limit=COUNT_PAGE, preview=1,
                           step=SCAN_STEP, **match)  # fmt: skip
        inside = [m for m in page.items if when is None or when.holds(m.visible_at)]
        p.matched += len(inside)
        p.steps += 1
        if (page.at_end and page.complete) or page.resume is None or len(inside) < len(page.items):
            p.phase = "counted"
            return True
        p.go_on_from(page.resume)
        if time.monotonic() >= until:
            return False


def count_matches(
    rsmq: RedisSMQ,
    qname: str,
    match: Mapping[str, Any],
    control: Control | None = None,
    when: When | None = None,
) -> Progress:
    """Every message ``match`` finds (due in ``when``'s window, if given), counted with
    browse's bounded calls; ``control`` is told after each page (and may cancel)."""
    p = Progress()
    while not count_step(rsmq, qname, match, p, budget=0, when=when):
        if control is not None and _wait(control, p) == CANCEL:
            p.phase = "cancelled"
            return p
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
    p.resumed()
    return said


#: the actions that remove messages from the queue: what an undo stash can keep
REMOVING = ("delete", "move", "redrive")
#: the actions whose Undo puts messages back (or their times)
KEEPING = (*REMOVING, *RESCHEDULING)


def begin(plan: Plan, limit: int, now: float | None = None) -> Progress:
    """A run's first state: at most ``limit`` matches (the confirmed count)."""
    plan.check()
    p = Progress(phase="canary" if plan.pace.canary else "running", matched=limit)
    p.canary_left = plan.pace.canary
    p.watched = not plan.pace.canary
    if plan.action == "visibility":
        p.at = ("", "")  # walked from the end: a message pushed later lands behind the walk
    when = plan.when
    if when is not None:
        # a later shift walks the window from its end, the others from its start, so what
        # it moves mostly lands behind the walk
        if plan.action == "shift" and when.shift_ms > 0:
            p.go_on_from(Cursor.at_time(when.due_until) if when.due_until is not None
                         else Cursor("", b""))  # fmt: skip
        elif when.due_from is not None:
            p.go_on_from(Cursor.at_time(when.due_from))
    p.resumed(now)
    return p


def step(
    rsmq: RedisSMQ,
    plan: Plan,
    p: Progress,
    keep: str | None = None,
    budget: float = STEP_SECONDS,
) -> float | None:
    """Go on with the run ``p`` (``begin``) for about ``budget`` seconds: act on pages of
    matches as the rate allows, watch the canary. Returns the seconds until it should be
    called again (0: at once), or None once it ended (``p.phase``: done, or stopped by
    its canary). Never sleeps: a caller that waits (the CLI's ``run``) or re-schedules
    itself (a job's Celery task) does, between steps, holding nothing.

    ``keep``: an undo token (``open_undo``; a move's with ``to=plan.to``) that keeps what
    every step of a delete, move or redrive removes (a rescheduling's: the times it
    changes), in the same call as the change."""
    if keep is not None and plan.action not in KEEPING:
        raise InvalidArgument("keep", f"keep: {plan.action} removes nothing to keep")
    if p.ended:
        return None
    if plan.action in RESCHEDULING:
        return _reschedule(rsmq, plan, p, keep, budget)
    pace = plan.pace
    size = STEP
    if pace.rate:
        size = max(1, min(STEP, math.ceil(pace.rate / 4)))  # about four steps a second
    until = time.monotonic() + budget
    backwards = plan.action == "visibility"
    while True:
        if p.phase == "watching":
            wait = _watch(rsmq, plan, p)
            if wait is None or wait > 0:
                return wait
        if p.done >= p.matched or p.at_end:
            p.phase = "done"
            return None
        if pace.rate:
            due = p.paced_at + (p.done - p.paced_from) / pace.rate
            if (wait := due - time.time()) > 0:
                return wait
        want = min(size, p.matched - p.done)
        if p.canary_left:
            want = min(want, p.canary_left)
        at = p.cursor()
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
        if p.canary_left:
            p.canary_ids += acted.ids
            p.canary_left = max(0, p.canary_left - acted.looked)
        if acted.looked < len(items):
            # it stopped early (bytes moved): go on from the last message it got to
            if acted.looked:
                last = items[acted.looked - 1]
                p.go_on_from(Cursor(str(last.visible_at), last.member or last.id.encode()))
        else:
            p.at_end = page.at_end
            if page.resume is not None:
                p.go_on_from(page.resume)
        if not p.watched and p.canary_ids and (not p.canary_left or p.at_end):
            # the canary is out (or nothing is left after it: the watch still decides)
            p.phase, p.canary_left = "watching", 0
            p.watch_until = time.time() + pace.watch
            continue
        if p.at_end:
            p.phase = "done"
            return None
        if time.monotonic() >= until:
            return 0.0


def _reschedule(
    rsmq: RedisSMQ, plan: Plan, p: Progress, keep: str | None, budget: float
) -> float | None:
    """``step`` for a rescheduling (``When``): the window walked from where ``begin`` put
    the cursor, each page's messages given their new times by ``reschedule``. Only a
    spread can put a message ahead of the walk; it is remembered until the walk has
    passed its new time, and passed over if met there."""
    when = plan.when
    assert when is not None
    backwards = plan.action == "shift" and when.shift_ms > 0
    size = STEP
    if plan.pace.rate:
        size = max(1, min(STEP, math.ceil(plan.pace.rate / 4)))
    span = when.spread_until - when.spread_from
    until = time.monotonic() + budget
    while p.walked < p.matched:
        if plan.pace.rate:
            due = p.paced_at + (p.done - p.paced_from) / plan.pace.rate
            if (wait := due - time.time()) > 0:
                return wait
        at = p.cursor()
        kw: dict[str, Any] = {"before": at} if backwards else {"after": at}
        page = rsmq.browse(plan.qname, limit=size, preview=1, step=SCAN_STEP, **kw, **plan.match)
        inside = [m for m in page.items if when.holds(m.visible_at)]
        walked_out = page.at_end or len(inside) < len(page.items)
        fresh = [m for m in inside if p.moved.get(m.id) != m.visible_at]
        fresh = fresh[: p.matched - p.walked]
        triples: list[tuple[str | bytes, int, int | None]] = []
        ahead: dict[str, int] = {}
        for m in fresh:
            to: int | None = None
            if plan.action == "shift":
                to = max(0, m.visible_at + when.shift_ms)
            elif plan.action == "spread":
                to = when.spread_from + span * p.walked // p.matched
                if to > m.visible_at and when.holds(to):
                    ahead[m.id] = to
            p.walked += 1
            triples.append((m.member if m.member is not None else m.id, m.visible_at, to))
        acted = rsmq.reschedule(plan.qname, triples, keep=keep)
        changed = set(acted.ids)
        p.moved.update({i: t for i, t in ahead.items() if i in changed})
        p.steps += 1
        p.done += acted.done
        p.changed += acted.changed
        if page.resume is not None:
            p.go_on_from(page.resume)
        if p.moved and p.at is not None and p.at[0]:
            passed = float(p.at[0])
            p.moved = {i: t for i, t in p.moved.items() if t >= passed}
        if walked_out:
            break
        if time.monotonic() >= until:
            return 0.0
    p.phase = "done"
    return None


def run(
    rsmq: RedisSMQ,
    plan: Plan,
    limit: int,
    control: Control | None = None,
    keep: str | None = None,
) -> Progress:
    """Act on at most ``limit`` matches (the confirmed count), paced, in this thread: the
    steps of ``step`` with the waits between them; returns how it went. ``control`` is
    asked after every step and while waiting (time paused does not count towards the
    rate)."""
    ctl: Control = control or (lambda p: RUN)
    p = begin(plan, limit)
    while True:
        wait = step(rsmq, plan, p, keep, budget=0)  # one page a step: control asked after each
        if wait is None:
            return p
        until = time.monotonic() + wait
        while True:
            if _wait(ctl, p) == CANCEL:
                return _end(p, "cancelled")
            left = until - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, POLL))


def _watch(rsmq: RedisSMQ, plan: Plan, p: Progress) -> float | None:
    """The canary's watch, looked at once: None (and the run stopped, saying why) if too
    many came back; 0 once the watch is over (the run goes on at the cap); else the
    seconds until it looks again."""
    ids = p.canary_ids
    allowed = plan.pace.max_bounce / 100 * len(ids)
    back = sum(
        rsmq.count_present(plan.qname, ids[k : k + v.MAX_BATCH])
        for k in range(0, len(ids), v.MAX_BATCH)
    )
    p.bounced = back
    now = time.time()
    if back > allowed:
        watched = plan.pace.watch - max(0.0, p.watch_until - now)
        p.note = (
            f"Stopped: {back} of {len(ids)} canary messages came back to {plan.qname} "
            f"within {watched:.0f} s (more than {plan.pace.max_bounce:g}%). "
            f"{p.done - back} stayed moved; nothing more was moved."
        )
        _end(p, "stopped")
        return None
    if now < p.watch_until:
        return min(WATCH_POLL, p.watch_until - now)
    p.note = (
        f"Canary: {back} of {len(ids)} came back to {plan.qname} in {plan.pace.watch:g} s "
        f"(at most {plan.pace.max_bounce:g}% allowed): going on."
    )
    p.phase, p.watched = "running", True
    p.resumed(now)
    return 0.0


def _end(p: Progress, phase: str) -> Progress:
    p.phase = phase
    return p
