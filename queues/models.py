"""Typed, frozen results of the RSMQ core."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

State = Literal["visible", "inflight", "delayed"]
LIST_STATES: tuple[str, ...] = ("all", "visible", "hidden", "inflight", "delayed")


@dataclass(frozen=True, slots=True)
class QueueAttributes:
    vt: int
    delay: int
    maxsize: int
    totalrecv: int
    totalsent: int
    created: int  # epoch s
    modified: int  # epoch s
    msgs: int
    hiddenmsgs: int


@dataclass(frozen=True, slots=True)
class Message:
    """A received message, as the original's receiveMessage returns it."""

    id: str
    message: str
    rc: int
    fr: int  # epoch ms of the first receive
    sent: float | None  # epoch ms, from the id; None: unknown (an id with no time in it)


@dataclass(frozen=True, slots=True)
class MessageInfo:
    """A message as browsing sees it; reading it never changes rc, fr or totalrecv."""

    id: str
    message: str  # the body, or its first ``preview`` bytes when listing
    size: int  # the body's full length in bytes
    rc: int
    fr: int | None  # epoch ms of the first receive, None if never received
    sent: float | None  # epoch ms, from the id; None: unknown (an id with no time in it)
    visible_at: int  # epoch ms: the zset score
    state: State
    read_at: int = 0  # the Redis server's time (epoch ms) this was read at
    # What of it could not be read as RSMQ data (another client wrote it), else None;
    # the fields it names hold safe stand-ins (0, None).
    note: str | None = None
    # The exact zset member when ``id`` is not an RSMQ id (``id`` then shows it, invalid
    # UTF-8 escaped): what deleting it takes (``delete_members``).
    member: bytes | None = None

    @property
    def truncated(self) -> bool:
        return len(self.message.encode()) < self.size


@dataclass(frozen=True, slots=True)
class Page:
    items: list[MessageInfo]
    total: int  # messages in this state (an estimate when ``exact`` is False)
    offset: int
    limit: int
    exact: bool = True
    now: int = 0  # the Redis server's time (epoch ms) the page was read at

    @property
    def has_next(self) -> bool:
        return self.offset + len(self.items) < self.total


@dataclass(frozen=True, slots=True)
class Cursor:
    """A place in a queue's order, between messages: a zset score (as Redis wrote it)
    and a member. Keyset browsing goes on after (or before) it, whatever came or went."""

    score: str
    member: bytes

    def encode(self) -> str:
        """For a URL: ``<score>~<member as hex>``."""
        return f"{self.score}~{self.member.hex()}"

    @classmethod
    def decode(cls, text: str) -> Cursor:
        """The inverse of ``encode``; ValueError for anything else (a URL is anyone's)."""
        score, sep, member = text.partition("~")
        if not sep or len(text) > 1000 or math.isnan(float(score)):
            raise ValueError(f"not a cursor: {text[:40]!r}")
        return cls(repr(float(score)) if "e" in score.lower() else score, bytes.fromhex(member))

    @classmethod
    def at_time(cls, ms: int) -> Cursor:
        """Just before every message that becomes visible at ``ms`` or later."""
        return cls(str(ms), b"")


@dataclass(frozen=True, slots=True)
class Browse:
    """A keyset page of a state (or a filter's matches), and where its reading stopped.

    ``complete``: the page has ``limit`` items, or the state's end was reached; else the
    time budget ran out first and ``resume`` goes on from the last message looked at.
    """

    items: list[MessageInfo]  # in queue order
    looked: int  # messages looked at (filters and in flight / delayed look at more than they show)
    at_end: bool  # the reading reached the state's end in its direction
    complete: bool
    resume: Cursor | None  # the last message looked at, None if none was
    state_size: int  # messages in the state's rank range (hidden for in flight / delayed)
    position: int | None  # the first item's 0-based place in the state (all / visible / hidden)
    now: int = 0
    calls: int = 0  # script calls it took
    first: Cursor | None = None  # the first item's place (for Previous)
    last: Cursor | None = None  # the last item's place (for Next)


@dataclass(frozen=True, slots=True)
class Slice:
    """Messages of consecutive ranks of one queue, column by column (the census)."""

    read_at: int  # the Redis server's TIME, epoch ms
    ids: list[str]
    sent: list[int | None]  # epoch ms, from the id; None: unknown (no time in the id)
    visible_at: list[int]  # epoch ms: the zset score
    rc: list[int]
    fr: list[int | None]  # epoch ms of the first receive; None: never received
    size: list[int]  # body bytes
    body: list[str] | None  # None unless asked for

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, slots=True)
class DeadLetterPolicy:
    dlq: str
    maxrc: int
    deadlettered: int = 0


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue's counters, read in the same pipelined round trip as every other queue's."""

    qname: str
    vt: int
    delay: int
    maxsize: int
    totalsent: int
    totalrecv: int
    created: int
    modified: int
    msgs: int
    visible: int
    hidden: int
    inflight: int  # hidden and received at least once
    delayed: int  # hidden and never received
    oldest_sent: float | None  # epoch ms of the head visible message, None when none is visible
    now: int  # the Redis server's time (epoch ms) of the reading
    exact: bool = True  # False when in flight / delayed were estimated from a sample
    dlq: str | None = None  # the dead-letter policy: where messages go ...
    maxrc: int | None = None  # ... once received this many times
    deadlettered: int = 0  # messages this queue has sent to its dead-letter queue
    # What of the queue's record can't be read (another client wrote it), e.g. "vt is
    # 'abc', not a number", else None. The fields it names read 0; a queue whose keys
    # can't be read at all, or whose name is not an RSMQ name, reads 0 everywhere.
    unreadable: str | None = None

    @classmethod
    def of_unreadable(cls, qname: str, why: str, now: int = 0) -> QueueStats:
        """A queue nothing could be read of: zeros, and why."""
        return cls(
            qname=qname, vt=0, delay=0, maxsize=0, totalsent=0, totalrecv=0, created=0,
            modified=0, msgs=0, visible=0, hidden=0, inflight=0, delayed=0, oldest_sent=None,
            now=now, unreadable=why,
        )  # fmt: skip

    @property
    def oldest_age(self) -> float | None:
        """Seconds since the head visible message was sent."""
        if self.oldest_sent is None:
            return None
        return max(0.0, (self.now - self.oldest_sent) / 1000)

    def as_dict(self) -> dict[str, Any]:
        """The one plain projection of a queue's stats, for the API, the CLI, ``/metrics``
        and snapshots alike: every field under its own name, plus ``oldest_age`` (s)."""
        return {
            "name": self.qname, "vt": self.vt, "delay": self.delay, "maxsize": self.maxsize,
            "created": self.created, "modified": self.modified, "msgs": self.msgs,
            "visible": self.visible, "hidden": self.hidden, "inflight": self.inflight,
            "delayed": self.delayed, "exact": self.exact, "totalsent": self.totalsent,
            "totalrecv": self.totalrecv, "oldest_sent": self.oldest_sent,
            "oldest_age": self.oldest_age, "dlq": self.dlq, "maxrc": self.maxrc,
            "deadlettered": self.deadlettered, "now": self.now, "unreadable": self.unreadable,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt at a message, as ``record_failure`` stored it."""

    at: int  # epoch ms, the Redis server's time of the record (0: unknown)
    attempt: int  # the message's rc then: which receive of it failed
    type: str  # the exception's type, e.g. "ValueError" or "myapp.errors.Timeout"
    message: str  # str() of the exception, cut to a bound
    trace: tuple[str, ...]  # the first lines of its traceback
    # What of the stored record could not be read (another client wrote it), else None.
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at, "attempt": self.attempt, "type": self.type,
            "message": self.message, "trace": list(self.trace), "note": self.note,
        }  # fmt: skip


FailureState = Literal["retry", "dead"]


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """Messages whose last failure was of one type: waiting for a retry in the queue
    itself (``retry``) or dead-lettered (``dead``: in a dead-letter queue ``where``, the
    queue's own or, read on a dead-letter queue, that one)."""

    type: str
    state: FailureState
    where: str  # the queue the messages are in
    count: int
    examples: tuple[str, ...]  # a few of their ids
    first: int = 0  # epoch ms of the group's first recorded failure (0: unknown)
    last: int = 0  # ... and of its last one
    # its most frequent error lines (each message's last), with how many messages each
    texts: tuple[tuple[str, int], ...] = ()
    other_texts: int = 0  # messages with an error line that is none of those

    def as_dict(self) -> dict[str, Any]:
        return {
            "type": self.type, "state": self.state, "queue": self.where,
            "count": self.count, "examples": list(self.examples),
            "first_seen": self.first or None, "last_seen": self.last or None,
            "texts": [{"text": t, "count": n} for t, n in self.texts],
            "other_texts": self.other_texts,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class FailureGroups:
    """A queue's failing messages grouped by error type, biggest groups first."""

    qname: str
    dlq: str | None  # its dead-letter queue, whose ``dead`` groups are read too
    groups: list[FailureGroup]
    complete: bool  # False: the read stopped at its bound, counts are a lower bound
    now: int  # the Redis server's time (epoch ms) of the reading

    def of_state(self, state: FailureState) -> list[FailureGroup]:
        return [g for g in self.groups if g.state == state]


@dataclass(frozen=True, slots=True)
class ImportRecord:
    """One message to import (a line of an export, ``queues.transfer``): its body, when it
    becomes visible (ms from the import), and — kept only with ``keep_ids`` — its id, rc
    and fr. ``line``: where it was read, for reports."""

    body: str
    delay_ms: int = 0
    id: str | None = None
    rc: int = 0
    fr: int | None = None
    line: int = 0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """A live ``rsmq worker`` process, as its own heartbeat registered it."""

    id: str
    host: str
    pid: int
    queues: dict[str, int]  # queue -> concurrency (handler threads)
    started: int  # epoch ms (the Redis server's clock)
    beat: int  # epoch ms of its last heartbeat
    # whether it honours a queue's pause and throttle (queues/ops/flow.py): a worker of a
    # release before them registers without saying so
    flow: bool = False

    @property
    def concurrency(self) -> int:
        return sum(self.queues.values())


@dataclass(frozen=True, slots=True)
class Orphans:
    """A queue hash's orphaned message fields: ``fields`` None when the hash has more
    than ORPHAN_FIELDS_MAX fields (not listed: it would hold Redis too long)."""

    fields: int | None
    bytes: int


@dataclass(frozen=True, slots=True)
class Leftovers:
    """Queue hashes with no name in the namespace's queue set (and no messages);
    ``complete`` False when the look stopped after LEFTOVER_SCAN_STEPS SCAN steps."""

    names: list[str]
    complete: bool


@dataclass(frozen=True, slots=True)
class TimingRecord:
    """One message the project's worker deleted, as it recorded it (queues/worker.py)."""

    recorded: int  # epoch ms, the Redis server's time of the delete
    fr: int  # epoch ms of the message's first receive
    wait: float  # ms from its send to its first receive
    processing: float  # ms from its first receive to its delete


@dataclass(frozen=True, slots=True)
class WaitReading:
    """What one queue says about its wait times since ``since`` (``wait_readings``)."""

    qname: str
    now: int  # the Redis server's time (epoch ms) of the reading
    since: int  # epoch ms
    #: ms from send to first receive of the messages first received in (since, now]
    #: that are still in the queue (of those looked at: see ``sampled``)
    waits: list[float]
    scored: int  # messages scored after ``since``: the candidates
    looked: int  # ... of which this many were looked at
    #: the worker's records, newest first (at most TIMINGS_MAX: older ones are gone)
    records: list[TimingRecord]

    @property
    def sampled(self) -> bool:
        """Whether ``waits`` come from a sample of the candidates, not all of them."""
        return self.looked < self.scored


#: what ``act_checked`` does to each message (queues/ops/messages.py)
CHECKED_ACTIONS = ("delete", "requeue", "visibility", "move", "redrive")


@dataclass(frozen=True, slots=True)
class Acted:
    """What one ``act_checked`` call did: messages acted on (``ids``), those changed since
    they were read (left alone), those it could not move (too large for the destination,
    or no queue to go back to), and the pairs it got to (fewer when it stopped early:
    the rest go again)."""

    done: int
    changed: int
    skipped: int
    looked: int
    ids: list[str]


@dataclass(frozen=True, slots=True)
class UndoInfo:
    """An undo stash's record (queues/ops/undo.py): what action kept it, on which queue
    (``to``: where a move sent its messages), how many messages and body bytes it holds,
    when it expires (epoch ms, the server's clock), and — once undone — when and what
    came of it."""

    token: str
    action: str
    qname: str
    to: str
    kind: str
    count: int
    bytes: int
    created_ms: int
    expires_ms: int
    done_ms: int | None
    restored: int
    present: int
    gone: int
    taken: int
    recreated: bool


@dataclass(frozen=True, slots=True)
class Restored:
    """What an undo did: ``restored`` messages put back exactly; skipped ones counted and
    the first ``UNDO_SKIPPED_IDS`` of each named — ``present`` (the id is in the queue
    again), ``gone`` (moved elsewhere and no longer there, or deleted since), ``taken``
    (moved elsewhere and received there since), ``foreign`` (an id no RSMQ client makes,
    such as a queue field's name another client wrote as a member: putting it back would
    break the queue again). ``already``: it had been undone before
    (nothing done now); ``whole_queue``: a deleted queue came back whole (attributes and
    totals as they were); ``recreated``: the deleted queue had been created again, so its
    new attributes stay and the messages went into it; ``missing``: the queue is gone
    (nothing done: create it and undo again)."""

    token: str
    restored: int = 0
    present: int = 0
    gone: int = 0
    taken: int = 0
    present_ids: tuple[str, ...] = ()
    gone_ids: tuple[str, ...] = ()
    taken_ids: tuple[str, ...] = ()
    foreign: int = 0
    foreign_ids: tuple[str, ...] = ()
    already: bool = False
    whole_queue: bool = False
    recreated: bool = False
    missing: bool = False

    @property
    def skipped(self) -> int:
        return self.present + self.gone + self.taken + self.foreign


#: a queue's flow flag (queues/ops/flow.py)
FLOW_STATES = ("paused", "throttled")


@dataclass(frozen=True, slots=True)
class Flow:
    """A queue's flow flag (queues/ops/flow.py): ``paused`` (the clients that honour it
    receive nothing) or ``throttled`` to ``rate`` receives a second across all of them;
    why, by whom, since when and until when (None: until resumed). Times are epoch ms of
    the Redis server's clock; ``now`` is the reading's.

    ``received``: receives the queue's ``totalrecv`` counted since it was set, by every
    client; ``granted``: those the receive script let through under the flag (0 while
    paused); the rest (``bypassed``) were made by clients that ignore it (Node rsmq and
    the other ports). ``held``: receive calls that got nothing because of it, the last at
    ``last_held``: the honouring consumers still asking."""

    qname: str
    state: str
    rate: float | None
    reason: str
    by: str
    since: int
    until: int | None
    now: int
    received: int = 0
    granted: int = 0
    held: int = 0
    last_held: int | None = None

    @property
    def paused(self) -> bool:
        return self.state == "paused"

    @property
    def bypassed(self) -> int:
        """Receives since it was set by clients that do not honour it."""
        return max(0, self.received - self.granted)

    @property
    def left(self) -> float | None:
        """Seconds until it resumes by itself (None: until resumed)."""
        return None if self.until is None else max(0.0, (self.until - self.now) / 1000)

    def as_dict(self) -> dict[str, Any]:
        return {
            "queue": self.qname, "state": self.state, "rate": self.rate, "reason": self.reason,
            "by": self.by, "since": self.since, "until": self.until, "now": self.now,
            "received": self.received, "granted": self.granted, "bypassed": self.bypassed,
            "held": self.held, "last_held": self.last_held,
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Receipt:
    """A receive that says why it got fewer than asked (``receive_flow``): ``held`` is
    "paused" or "throttled" when the queue's flag held it back (else ""), and ``wait``
    the seconds until a throttle lets the next receive through (0: now)."""

    messages: list[Message]
    held: str = ""
    wait: float = 0.0


@dataclass(frozen=True, slots=True)
class DueBucket:
    """Hidden messages that become visible in [start, end) (epoch ms)."""

    start: int
    end: int
    count: int


@dataclass(frozen=True, slots=True)
class Due:
    """When a queue's hidden messages become visible (``due``): ``buckets`` of one scale
    ahead of ``now`` (the first starts at now, the others on the scale's UTC boundaries),
    ``later`` past the last one, ``visible`` already due; ``peak``: the busiest aligned
    five-minute window (DUE_PEAK) found inside the busiest bucket (None: nothing due in
    the view). Hidden messages include those in flight (received, their vt running): a
    delayed one is hidden and never received."""

    qname: str
    scale: str
    now: int
    visible: int
    hidden: int
    buckets: list[DueBucket]
    later: int
    peak: DueBucket | None

    @property
    def ahead(self) -> int:
        """Messages due within the view."""
        return sum(b.count for b in self.buckets)

    @property
    def busiest(self) -> DueBucket | None:
        best = max(self.buckets, key=lambda b: b.count, default=None)
        return best if best is not None and best.count else None


@dataclass(frozen=True, slots=True)
class FlowView:
    """A queue's flow as its page shows it (``flow_view``): its flag (None: it runs
    freely), the live workers that handle it, what is coming due."""

    flow: Flow | None
    workers: list[WorkerInfo]
    due: Due


@dataclass(frozen=True, slots=True)
class DuePeak:
    """A queue's peak of what is coming due as the console's snapshot task found it
    (``found``: when, epoch ms of the server's clock)."""

    peak: DueBucket
    found: int


@dataclass(frozen=True, slots=True)
class Flagged:
    """An overview page's read (``queue_stats_flagged``): its queues' stats, the
    namespace's flagged queues, and the peaks the snapshot task last stored."""

    stats: list[QueueStats]
    flows: dict[str, Flow]
    peaks: dict[str, DuePeak]
