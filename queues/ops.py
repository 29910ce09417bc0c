"""Every RSMQ operation, written once for the sync and the asyncio client.

An operation is a generator: it validates its arguments, yields the Redis work it needs
(a `Call` of a Lua script, a `Batch` of read-only script calls in one pipeline, or a
plain `Command`) and returns the parsed result. The clients only differ in how they
carry that work to Redis: `RedisSMQ` runs it on a thread's own redis-py connection,
`AsyncRedisSMQ` awaits redis.asyncio. Keys, validation, arguments and parsing live here
and nowhere else.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import time
import traceback
from collections.abc import Iterable
from typing import Any, Generic, NamedTuple, TypeVar

from redis.exceptions import ResponseError

from . import scripts as S
from . import validation as v
from .driver import Batch, Call, Command, Endpoint, Op, operation
from .errors import (
    ApiRefused,
    InvalidArgument,
    MessageNotString,
    NoAttributeSupplied,
    QueueNotFound,
    RsmqError,
)
from .ids import random_suffixes, sent_ms
from .models import (
    Browse,
    Cursor,
    DeadLetterPolicy,
    Failure,
    FailureGroup,
    FailureGroups,
    FailureState,
    Message,
    MessageInfo,
    Page,
    QueueAttributes,
    QueueStats,
    SearchResult,
    Slice,
    State,
)
from .urls import MAX_WAIT_REPLICAS, MAX_WAIT_TIMEOUT

#: messages one purge / move / redrive / bulk step handles: small enough that a step
#: never holds Redis for long (a few ms), large enough that a million take ~1000 steps
CHUNK = 1000
#: queues per stats script call, so a 10,000-queue read is many short scripts in one
#: pipeline, not one long script
STATS_CHUNK = 200
#: queues per stats call in a read of more than STATS_CHUNK_BIG_AFTER queues: 200 took
#: over 5 ms a call on a busy 2-core machine (SLOWLOG); a big namespace's read is many
#: back-to-back calls, each one a wait for every other client of Redis
STATS_CHUNK_BIG = 50
STATS_CHUNK_BIG_AFTER = 1000
STATS_ROW = 17
#: past this many queues a namespace's names are read in SSCAN steps of SCAN_COUNT, not
#: one SMEMBERS: SMEMBERS of 100,000 names holds Redis for over 20 ms, an SSCAN step ~1 ms
SMEMBERS_MAX = 10_000
SCAN_COUNT = 1000
#: hidden messages a stats call looks at to split in flight from delayed (more: an
#: estimate, said so): 1,000 held Redis 5.5 ms a call on a queue of 200,000 messages
#: (80,000 hidden), 400 2.2 ms (INFO commandstats, same run); a page's calls stay under 5 ms
DEFAULT_SAMPLE = 400
DEFAULT_SCAN_BUDGET = 10_000
#: messages one census_range reads at most
MAX_CENSUS_COUNT = 10_000
#: what one census script call reads before it stops (after at least one message):
#: its bodies' bytes, and CENSUS_MESSAGE_BYTES for each message besides. Redis spends
#: ~0.8 ms per MB of bodies copied into a reply and ~4 µs looking up one message, so a
#: call holds it well under 1 ms on a quiet machine, however large the bodies.
CENSUS_BYTES = 512 * 1024
CENSUS_MESSAGE_BYTES = 2048
MAX_MAXRC = 1000
#: members one browse script call looks at, at most: 1,000 took a median 4.5 ms of
#: Redis (the rc test of each; `bench/dashboard.py --calls` with 1,000, load average 6-8
#: on the 2 cores): too near the 5 ms a call may hold it; 500, half that
BROWSE_STEP = 500
#: bodies' bytes one browse call reads for a text search before it stops
BROWSE_BYTES = 128 * 1024
#: a browse's time budget (s): it makes calls until its page is full, the state ends
#: or this is spent, then says where it stopped
BROWSE_BUDGET = 0.04
#: "Why did it fail?": a queue's failure histories live in one extension key next to its
#: own, {ns}:{qname}:x:failures (same prefix, so the same Redis Cluster slot with a hash
#: tag in ns; no RSMQ queue name holds a ':', and the original never reads it). Bounds:
FAILURES_SUFFIX = ":x:failures"
FAILURE_HISTORY = 5  # failures kept per message (the last ones) ...
FAILURE_BYTES = 16 * 1024  # ... fewer when its history is longer than this
FAILURE_MESSAGES = 5000  # messages with a history per queue (more: one is forgotten)
FAILURE_TTL = 7 * 24 * 3600  # s: the key expires this long after its last failure
FAILURE_TYPE_MAX = 200  # characters of an exception's type
FAILURE_MESSAGE_MAX = 2000  # bytes of its message
FAILURE_TRACE_LINES = 20  # first lines of its traceback ...
FAILURE_TRACE_MAX = 8000  # ... and at most this many bytes of them
#: HSCAN steps of a failure_groups read of one key: a step ~1 ms, the read bounded
FAILURE_SCAN_COUNT = 1000
FAILURE_SCAN_STEPS = 30
FAILURE_EXAMPLES = 5
#: the console API's audit stream of a namespace ({ns}:$console:audit) and how many of
#: its records one read takes; the scripts an audited call may run, and how each one's
#: reply is kept in its record (scripts/_audited.lua)
AUDIT_SUFFIX = "$console:audit"
AUDIT_READ = 1000
AUDITED_MODES = {
    "send_message": "ids", "send_messages": "ids", "receive_message": "recv",
    "receive_messages": "recv", "delete_message": "n", "delete_messages": "n",
    "change_message_visibility": "n",
}  # fmt: skip
#: the console API's token counters and generation: one hash tag, one Cluster slot
API_KEY = "{rsmq-console:api}"


class ApiRate(NamedTuple):
    """An API token's call to count in an audited call's script (``Operations.audited``):
    its digest, its limit a window, the window (s), the tokens' generation the caller
    read it at."""

    token: str
    per_minute: int
    window: int
    generation: str


def _str(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _member(raw: bytes | str) -> bytes:
    return raw if isinstance(raw, bytes) else raw.encode()


def _decode(raw: bytes | str) -> str:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


# Data any client may have written (queue names, message ids, policy fields) is read
# without trusting it: invalid UTF-8 shows as \x escapes, a value that is not what RSMQ
# writes is reported as such, and nothing of it ever raises.


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw


def _shown(raw: bytes | str) -> str:
    text = _text(raw)
    return "'" + (text[:40] + "…" if len(text) > 40 else text) + "'"


def _sent(mid: str) -> float | None:
    """``sent`` from an RSMQ id; None for a member that does not start with base 36."""
    try:
        return sent_ms(mid)
    except ValueError:
        return None


def _pairs(flat: list[Any]) -> list[tuple[Any, Any]]:
    """A stream entry's fields, as Redis sends them (name, value, name, value, …)."""
    return list(zip(flat[::2], flat[1::2], strict=True))


def _whole(raw: Any) -> int | None:
    """A stored integer (rc, fr), or None when it is not one."""
    if isinstance(raw, int):
        return raw
    try:
        return int(_text(raw))
    except (TypeError, ValueError):
        return None


def _score(raw: Any) -> int | None:
    """A zset score as epoch ms, or None when it is not a time (±inf, 1e300, nan)."""
    try:
        score = float(raw)
    except (TypeError, ValueError):
        return None
    return int(score) if 0 <= score < 2**53 else None


def _message(r: list[Any], i: int) -> Message:
    mid = _text(r[i])
    body = r[i + 1]
    return Message(
        id=mid,
        message=_decode(body) if body is not None else "",
        rc=r[i + 2],
        fr=_whole(r[i + 3] or 0) or 0,
        sent=_sent(mid) or 0.0,
    )


def _info(f: list[Any], now: int) -> MessageInfo:
    mid = _text(f[0])
    notes = []
    member = None
    if not v.ID_RE.fullmatch(mid):
        notes.append("not an RSMQ message id")
        member = f[0] if isinstance(f[0], bytes) else f[0].encode()
    sent = _sent(mid)
    score = _score(f[1])
    if score is None:
        notes.append(f"its score is {_shown(f[1])}, not a time")
    rc = _whole(f[4])
    if rc is None:
        notes.append(f"rc is {_shown(f[4])}, not a number")
    fr = _whole(f[5]) if f[5] else None
    if fr is not None and not 0 <= fr < 2**53:
        fr = None
    if f[5] and fr is None:
        notes.append(f"fr is {_shown(f[5])}, not a time")
    hidden = float(f[1]) > now if score is None else score > now
    state: State
    if not hidden:
        state = "visible"
    else:
        # in flight: its rc field is there (the scripts' own test), even if unreadable
        state = "inflight" if rc is None or rc >= 1 else "delayed"
    return MessageInfo(
        id=mid, message=_decode(f[3]), size=f[2], rc=rc or 0, fr=fr,
        sent=sent or 0.0, visible_at=score or 0, state=state, read_at=now,
        note="; ".join(notes) or None, member=member,
    )  # fmt: skip


def _attributes(a: list[int]) -> QueueAttributes:
    return QueueAttributes(
        vt=a[0], delay=a[1], maxsize=a[2], totalrecv=a[3], totalsent=a[4],
        created=a[5], modified=a[6], msgs=a[7], hiddenmsgs=a[8],
    )  # fmt: skip


def _queue_name(raw: bytes | str) -> str | None:
    """A queue name read from Redis, or None when it is not an RSMQ name."""
    name = _text(raw)
    try:
        return v.qname(name)
    except InvalidArgument:
        return None


NOT_A_QUEUE = "not an RSMQ queue name"


def _stats(qname: str, row: list[Any], now: int) -> QueueStats:
    head, dlq, maxrc = row[12], row[14], row[15]
    why = None if row[0] == 1 else _text(row[0])
    policy = _queue_name(dlq) if dlq else None
    if dlq and policy is None:
        bad = f"x:dlq is {_shown(dlq)}, not a queue name"
        why = f"{why}; {bad}" if why else bad
    return QueueStats(
        qname=qname, vt=row[1], delay=row[2], maxsize=row[3], totalsent=row[4],
        totalrecv=row[5], created=row[6], modified=row[7], msgs=row[8],
        visible=row[8] - row[9], hidden=row[9], inflight=row[10], delayed=row[11],
        oldest_sent=_sent(_text(head)) if head else None, now=now, exact=row[13] == 1,
        dlq=policy, maxrc=maxrc or None, deadlettered=row[16], unreadable=why,
    )  # fmt: skip


def _stats_chunk(names: list[str]) -> int:
    return STATS_CHUNK_BIG if len(names) > STATS_CHUNK_BIG_AFTER else STATS_CHUNK


def _cut(text: str, limit: int) -> str:
    """At most ``limit`` bytes of ``text`` in UTF-8, never half a character."""
    raw = text.encode("utf-8", "replace")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore") + "…"


def _trace_lines(trace: str | Iterable[str]) -> list[str]:
    text = trace if isinstance(trace, str) else "".join(trace)
    lines = text.splitlines()
    if len(lines) > FAILURE_TRACE_LINES:
        more = len(lines) - FAILURE_TRACE_LINES
        lines = [*lines[:FAILURE_TRACE_LINES], f"… {more} more line{'s' if more > 1 else ''}"]
    return lines


def _failure(entry: Any) -> Failure:
    """One stored failure; what is not as record_failure writes it becomes a note."""
    if not isinstance(entry, dict):
        return Failure(0, 0, "?", "", (), f"an entry is {_shown(repr(entry))}, not a failure")
    notes = []
    at, attempt = entry.get("t"), entry.get("rc")
    if not isinstance(at, (int, float)) or not 0 <= at < 2**53:
        notes.append(f"its time is {_shown(repr(at))}")
        at = 0
    if not isinstance(attempt, (int, float)) or not 0 <= attempt < 2**53:
        notes.append(f"its attempt is {_shown(repr(attempt))}")
        attempt = 0
    fields = []
    for name in ("type", "msg", "trace"):
        value = entry.get(name)
        if not isinstance(value, str):
            notes.append(f"its {name} is {_shown(repr(value))}")
            value = ""
        fields.append(value)
    return Failure(
        at=int(at), attempt=int(attempt), type=fields[0] or "?", message=fields[1],
        trace=tuple(fields[2].splitlines()), note="; ".join(notes) or None,
    )  # fmt: skip


def _failures(raw: bytes | str | None) -> list[Failure]:
    """A stored history, newest first; one that can't be read is one Failure saying so."""
    if raw is None:
        return []
    try:
        entries = json.loads(_decode(raw))
    except ValueError:
        entries = None
    if not isinstance(entries, list):
        why = f"the failure record is {_shown(raw)}, not a failure history"
        return [Failure(0, 0, "?", "", (), why)]
    return [_failure(e) for e in reversed(entries)]


def _epoch_ms(when: dt.datetime | float | int) -> int:
    if isinstance(when, dt.datetime):
        if when.tzinfo is None:
            raise InvalidArgument("when", "when must be a timezone-aware datetime")
        return math.ceil(when.timestamp() * 1000)
    if (
        isinstance(when, bool)
        or not isinstance(when, (int, float))
        or not math.isfinite(when)
        or when < 0
    ):
        raise InvalidArgument("when", "when must be a datetime or finite epoch seconds")
    return math.ceil(when * 1000)


#: the redis-py client a driver runs on (redis.Redis or redis.asyncio.Redis)
R = TypeVar("R")


class Operations(Generic[R]):
    """The RSMQ API. A subclass is a driver (queues/driver.py): it supplies ``_drive``,
    and ``_open`` to set up the redis-py client ``R`` it runs on."""

    ns: str
    realtime: bool
    redis: R

    def __init__(
        self,
        url: str | None = None,
        ns: str = "rsmq",
        realtime: bool = False,
        client: R | None = None,
        host: str = "127.0.0.1",
        port: int = 6379,
        db: int = 0,
        password: str | None = None,
        socket_timeout: float | None = None,
        wait_replicas: int = 0,
        wait_timeout: int = 1000,
    ) -> None:
        """Use ``client``, or make one for ``url`` (else host, port, db, password).

        ``wait_replicas``: a send returns only once that many replicas have it (``WAIT``,
        at most ``wait_timeout`` ms, else `NotReplicated`); also ``?wait_replicas=`` in
        the URL."""
        if not isinstance(ns, str) or not ns:
            raise InvalidArgument("ns", "ns must be a non-empty string")
        self.ns = ns
        self.realtime = realtime
        self._prefix = ns + ":"
        self._keys: dict[str, tuple[str, str]] = {}
        self._fkeys: dict[str, tuple[str, str, str]] = {}
        # The namespace's queue names as the last queue_stats() of all saw them: the
        # next one reads them and their counters in the same round trip.
        self._known_names: list[str] = []
        # How many queues the namespace held when last listed (None: not yet known).
        self._count_hint: int | None = None
        v.integer("wait_replicas", wait_replicas, 0, MAX_WAIT_REPLICAS)
        v.integer("wait_timeout", wait_timeout, 0, MAX_WAIT_TIMEOUT)
        endpoint = Endpoint(
            url, host, port, db, password, socket_timeout, wait_replicas, wait_timeout
        )
        self.redis = self._open(client, endpoint)

    def _open(self, client: R | None, endpoint: Endpoint) -> R:
        """Set up the driver; return ``client``, or the redis-py client it makes."""
        raise NotImplementedError

    # -- keys: the only place Redis key names are made ------------------------------

    @property
    def queues_key(self) -> str:
        return self._prefix + "QUEUES"

    def _queue_keys(self, qname: str) -> tuple[str, str]:
        """(zset, hash) of a queue, validating the name once per client."""
        keys = self._keys.get(qname)
        if keys is None:
            v.qname(qname)
            if len(self._keys) > 10_000:
                self._keys.clear()
            z = self._prefix + qname
            keys = self._keys[qname] = (z, z + ":Q")
        return keys

    def _failures_key(self, qname: str) -> str:
        """The queue's failure histories (see FAILURES_SUFFIX)."""
        return self._queue_keys(qname)[0] + FAILURES_SUFFIX

    def _with_failures(self, qname: str) -> tuple[str, str, str]:
        """(zset, hash, failure key) of a queue: what every delete path's script takes."""
        keys = self._fkeys.get(qname)
        if keys is None:
            z, h = self._queue_keys(qname)
            if len(self._fkeys) > 10_000:
                self._fkeys.clear()
            keys = self._fkeys[qname] = (z, h, z + FAILURES_SUFFIX)
        return keys

    def _channel(self, qname: str) -> str:
        return f"{self._prefix}rt:{qname}" if self.realtime else ""

    def realtime_channel(self, qname: str) -> str:
        """The pub/sub channel a realtime send publishes the queue's size on."""
        v.qname(qname)
        return f"{self._prefix}rt:{qname}"

    # -- queues --------------------------------------------------------------------

    @operation
    def create_queue(
        self, qname: str, vt: int = 30, delay: int = 0, maxsize: int = 65536
    ) -> Op[None]:
        hkey = self._queue_keys(qname)[1]
        args = (qname, v.seconds("vt", vt), v.seconds("delay", delay), v.maxsize(maxsize))
        yield Call(S.CREATE_QUEUE, (hkey, self.queues_key), args, qname)

    @operation
    def list_queues(self) -> Op[list[str]]:
        return (yield from self._names())

    def _names(self) -> Op[list[str]]:
        """Every queue name, sorted: one SMEMBERS in a namespace known to hold at most
        SMEMBERS_MAX queues, else (a big one, or not read yet) SSCAN steps."""
        if self._count_hint is not None and self._count_hint <= SMEMBERS_MAX:
            members = yield Command(("SMEMBERS", self.queues_key))
        else:
            members, cursor = [], b"0"
            while True:
                cursor, got = yield Command(("SSCAN", self.queues_key, cursor, "COUNT", SCAN_COUNT))
                members += got
                if int(cursor) == 0:
                    break
        names = sorted({_text(m) for m in members})  # SSCAN may return a name twice
        self._count_hint = len(names)
        return names

    @operation
    def delete_queue(self, qname: str) -> Op[None]:
        z, h, f = self._with_failures(qname)
        yield Call(S.DELETE_QUEUE, (h, z, self.queues_key, z + ":purge", f), (qname,), qname)

    @operation
    def get_queue_attributes(self, qname: str) -> Op[QueueAttributes]:
        keys = self._queue_keys(qname)
        return _attributes((yield Call(S.GET_QUEUE_ATTRIBUTES, keys, (), qname)))

    @operation
    def set_queue_attributes(
        self,
        qname: str,
        vt: int | None = None,
        delay: int | None = None,
        maxsize: int | None = None,
    ) -> Op[QueueAttributes]:
        keys = self._queue_keys(qname)
        args: list[Any] = []
        if vt is not None:
            args += ("vt", v.seconds("vt", vt))
        if delay is not None:
            args += ("delay", v.seconds("delay", delay))
        if maxsize is not None:
            args += ("maxsize", v.maxsize(maxsize))
        if not args:
            raise NoAttributeSupplied()
        return _attributes((yield Call(S.SET_QUEUE_ATTRIBUTES, keys, args, qname)))

    # -- dead-letter policy ----------------------------------------------------------

    @operation
    def set_dead_letter_policy(self, qname: str, dlq: str, maxrc: int) -> Op[None]:
        """Messages received ``maxrc`` times go to queue ``dlq`` instead of a further receive.

        Stored in extension fields of the queue's hash (x:dlq, x:maxrc): original RSMQ
        clients ignore them and keep working on the queue.
        """
        keys = self._queue_keys(qname)
        dlq_keys = self._queue_keys(v.qname(dlq, "dlq"))
        if dlq == qname:
            raise InvalidArgument("dlq", "dlq must be a different queue from qname")
        v.integer("maxrc", maxrc, 1, MAX_MAXRC)
        yield Call(S.POLICY, (keys[1], dlq_keys[1]), (dlq, maxrc), (qname, dlq))

    @operation
    def clear_dead_letter_policy(self, qname: str) -> Op[None]:
        keys = self._queue_keys(qname)
        yield Call(S.POLICY, (keys[1], keys[1]), ("", 0), qname)

    @operation
    def get_dead_letter_policy(self, qname: str) -> Op[DeadLetterPolicy | None]:
        stats = yield from self._stats_of([qname])
        if not stats:
            raise QueueNotFound(qname)
        s = stats[0]
        if s.dlq is None or s.maxrc is None:
            return None
        return DeadLetterPolicy(dlq=s.dlq, maxrc=s.maxrc, deadlettered=s.deadlettered)

    @operation
    def dead_letter_sources(self, dlq: str) -> Op[list[str]]:
        """The queues whose dead-letter policy sends to ``dlq``, sorted."""
        return (yield from self._names_and_sources(dlq))[1]

    @operation
    def queue_names_and_sources(self, dlq: str) -> Op[tuple[list[str], list[str]]]:
        """The namespace's queue names, and those of them whose dead-letter policy sends to
        ``dlq`` (a queue page's "move to" suggestions and its redrive, read together)."""
        return (yield from self._names_and_sources(dlq))

    def _names_and_sources(self, dlq: str) -> Op[tuple[list[str], list[str]]]:
        # One round trip, like queue_stats(): the queue set, and the policies of the
        # queues it held last time; queues created since cost one more.
        v.qname(dlq, "dlq")
        known = [n for n in self._known_names if v.QNAME_RE.fullmatch(n)]
        members, replies = yield Batch(
            self._sources_calls(known, dlq), first=("SMEMBERS", self.queues_key)
        )
        # A name that is not an RSMQ name (written by some other client) names no queue.
        text = (m.decode(errors="replace") if isinstance(m, bytes) else m for m in members)
        names = sorted(n for n in text if v.QNAME_RE.fullmatch(n))
        current, seen = set(names), set(known)
        sources = [q for q in self._sources_of(known, replies) if q in current]
        new = [n for n in names if n not in seen]
        if new:
            sources += self._sources_of(new, (yield Batch(self._sources_calls(new, dlq))))
        self._known_names = names
        return names, sorted(sources)

    def _sources_calls(self, names: list[str], dlq: str) -> list[Call]:
        return [
            Call(S.DLQ_SOURCES, [self._queue_keys(q)[1] for q in names[k : k + STATS_CHUNK]],
                 (dlq,))
            for k in range(0, len(names), STATS_CHUNK)
        ]  # fmt: skip

    @staticmethod
    def _sources_of(names: list[str], replies: list[Any]) -> list[str]:
        starts = range(0, len(names), STATS_CHUNK)
        return [names[k + i - 1] for k, found in zip(starts, replies, strict=True) for i in found]

    @operation
    def redrive(self, dlq: str, to: str | None = None, limit: int | None = None) -> Op[int]:
        """Move dead-lettered messages back to the queue each came from (or to ``to``).

        Only visible messages move: one in flight (a consumer holds it) or delayed stays,
        or it would be delivered twice. They start over (rc and fr dropped: the policy
        would dead-letter them again at once) and are visible at once; bounded batches
        of ``CHUNK``; at most ``limit`` messages. Returns how many were moved; a message
        whose source is gone stays in ``dlq``.
        """
        keys = self._with_failures(dlq)
        if to is not None:
            self._queue_keys(v.qname(to, "to"))
            if to == dlq:
                raise InvalidArgument("to", "to must be a different queue from dlq")
        if limit is not None:
            v.integer("limit", limit, 1, 2**53)
        moved = skipped = 0
        while limit is None or moved < limit:
            chunk = CHUNK if limit is None else min(CHUNK, limit - moved)
            m, s, seen = yield Call(
                S.REDRIVE,
                keys,
                (self._prefix, to or "", skipped, chunk, FAILURES_SUFFIX),
                (dlq, to or ""),
            )
            moved += m
            skipped += s
            if seen < chunk:
                break
        return moved

    # -- messages ------------------------------------------------------------------

    @operation
    def send_message(self, qname: str, message: str | bytes, delay: int | None = None) -> Op[str]:
        keys = self._queue_keys(qname)
        body = message if type(message) is str else v.body(message)
        d = "" if delay is None else v.seconds("delay", delay)
        try:
            ids = yield Call(
                S.SEND, keys, (d, self._channel(qname), random_suffixes(), body), qname
            )
        except UnicodeEncodeError as e:
            # Nothing was sent: the command is encoded whole before it is written.
            raise MessageNotString(
                f"Message must be a string of valid Unicode: {e.reason} at position {e.start}"
            ) from None
        return _str(ids[0])

    @operation
    def send_at(self, qname: str, message: str | bytes, when: dt.datetime | float | int) -> Op[str]:
        """Send a message that becomes visible at ``when`` (an aware datetime or epoch
        seconds), by the Redis server's clock; a time already past means now."""
        keys = self._queue_keys(qname)
        body = v.body(message)
        at = f"@{_epoch_ms(when)}"
        ids = yield Call(S.SEND, keys, (at, self._channel(qname), random_suffixes(), body), qname)
        return _str(ids[0])

    @operation
    def send_messages(
        self, qname: str, messages: Iterable[str | bytes], delay: int | None = None
    ) -> Op[list[str]]:
        """Send many in one atomic round trip: one invalid message and nothing is written."""
        keys = self._queue_keys(qname)
        bodies = [v.body(m) for m in messages]
        if len(bodies) > v.MAX_SEND_BATCH:
            raise InvalidArgument(
                "messages", f"messages: at most {v.MAX_SEND_BATCH} per batch, not {len(bodies)}"
            )
        d = "" if delay is None else v.seconds("delay", delay)
        args = (d, self._channel(qname), random_suffixes(len(bodies)), *bodies)
        ids = yield Call(S.SEND, keys, args, qname)
        return [_str(i) for i in ids]

    def _receive(self, qname: str, n: int, vt: int | None, pop: bool = False) -> Op[list[Any]]:
        keys = self._with_failures(qname)
        t = "" if vt is None else v.seconds("vt", vt)
        args = (n, t, self._prefix, qname, "pop" if pop else "", FAILURES_SUFFIX)
        r: list[Any] = yield Call(S.RECEIVE, keys, args, qname)
        return r

    @operation
    def receive_message(self, qname: str, vt: int | None = None) -> Op[Message | None]:
        r = yield from self._receive(qname, 1, vt)
        return _message(r, 0) if r else None

    @operation
    def receive_messages(self, qname: str, n: int, vt: int | None = None) -> Op[list[Message]]:
        """Receive up to n visible messages, FIFO, in one atomic round trip."""
        v.integer("n", n, 1, v.MAX_BATCH)
        r = yield from self._receive(qname, n, vt)
        return [_message(r, i) for i in range(0, len(r), 4)]

    @operation
    def pop_message(self, qname: str) -> Op[Message | None]:
        """Receive and delete in one step (the dead-letter policy applies, as to a receive)."""
        r = yield from self._receive(qname, 1, None, pop=True)
        return _message(r, 0) if r else None

    @operation
    def pop_messages(self, qname: str, n: int) -> Op[list[Message]]:
        v.integer("n", n, 1, v.MAX_BATCH)
        r = yield from self._receive(qname, n, None, pop=True)
        return [_message(r, i) for i in range(0, len(r), 4)]

    @operation
    def change_message_visibility(self, qname: str, id: str, vt: int) -> Op[bool]:
        keys = self._queue_keys(qname)
        args = (v.message_id(id), v.seconds("vt", vt))
        changed: int = yield Call(S.CHANGE_VISIBILITY, keys, args, qname)
        return changed == 1

    @operation
    def delete_message(self, qname: str, id: str) -> Op[bool]:
        keys = self._with_failures(qname)
        deleted: int = yield Call(S.DELETE, keys, (v.message_id(id),), qname)
        return deleted == 1

    @operation
    def delete_members(self, qname: str, members: Iterable[bytes | str]) -> Op[int]:
        """Delete messages by their exact zset member, RSMQ id or not: how a message some
        other client wrote under an id no RSMQ client would (``MessageInfo.member``, as
        browsing lists it) is deleted. Returns how many were in the queue."""
        keys = self._with_failures(qname)
        checked = list(members)
        if not all(isinstance(m, (bytes, str)) for m in checked):
            raise InvalidArgument("members", "members must be strings or bytes")
        if not checked:
            return 0
        deleted: int = yield Call(S.DELETE_MEMBERS, keys, checked, qname)
        return deleted

    @operation
    def delete_messages(self, qname: str, ids: Iterable[str]) -> Op[int]:
        """Delete many in one atomic round trip; returns how many were in the queue."""
        keys = self._with_failures(qname)
        checked = [v.message_id(i) for i in ids]
        deleted: int = yield Call(S.DELETE, keys, checked, qname)
        return deleted

    # -- the console's HTTP API: audited calls, token rates (keys made here too) ------

    @property
    def audit_key(self) -> str:
        """The namespace's audit stream: the records of the API's audited calls, until the
        console moves them into its database. ``$`` is in no RSMQ queue name, so no queue's
        key is ever this one, and other RSMQ clients never list it."""
        return self._prefix + AUDIT_SUFFIX

    @operation
    def audited(
        self, head: str, rate: ApiRate | None, name: str, *args: Any, **kwargs: Any
    ) -> Op[Any]:
        """Operation ``name`` (one of AUDITED_MODES: send, receive, delete, change
        visibility) with its audit record written by its own script, in the same round
        trip and atomically: the record's ``head`` (the caller's JSON: who, what, where)
        and what came of it. An error the script met is recorded too, and the exception
        raised for it carries ``audited = True``.

        ``rate``: the API token's call is counted by the same script first (as
        `api_rate`, in this client's Redis); refused (`ApiRefused`) with nothing changed
        or recorded when its window is spent or the tokens' generation is not
        ``rate.generation``."""
        mode = AUDITED_MODES[name]
        op: Op[Any] = getattr(type(self), name).__wrapped__(self, *args, **kwargs)
        keys: tuple[str, ...] = (self.audit_key,)
        extra: tuple[Any, ...] = (head, mode)
        if rate is not None:
            v.integer("per_minute", rate.per_minute, 0, 2**31)
            slot = int(time.time() // rate.window)
            keys += (f"{API_KEY}:rate:{rate.token}:{slot}", f"{API_KEY}:generation")
            extra += (rate.per_minute, rate.window + 5, rate.generation, "1")
        else:
            extra += ("",)
        try:
            step = next(op)
            while True:
                if isinstance(step, Call):
                    script = S.AUDITED[step.script.name]
                    step = Call(script, (*step.keys, *keys), (*step.args, *extra), step.names)
                try:
                    reply = yield step
                except ResponseError as e:
                    text = str(e)
                    if text.startswith("apiRefused "):
                        raise ApiRefused(*text.split()[1:3]) from None
                    e.audited = True  # type: ignore[attr-defined]  # the script ran: recorded
                    step = op.throw(e)
                except RsmqError as e:
                    e.audited = True  # type: ignore[attr-defined]  # the script ran: recorded
                    step = op.throw(e)
                except Exception as e:
                    step = op.throw(e)
                else:
                    step = op.send(reply)
        except StopIteration as stop:
            return stop.value

    @operation
    def audit_records(self, count: int = AUDIT_READ) -> Op[list[tuple[str, dict[str, str]]]]:
        """The oldest ``count`` records of the audit stream (not removed: audit_ack)."""
        v.integer("count", count, 1, AUDIT_READ)
        raw = yield Command(("XRANGE", self.audit_key, "-", "+", "COUNT", count))
        return [
            (_text(rid), {_text(k): _decode(val) for k, val in _pairs(fields)})
            for rid, fields in raw
        ]

    @operation
    def audit_ack(self, ids: list[str]) -> Op[int]:
        """Remove records that are safely elsewhere (the console's database); the stream
        too once it is empty."""
        if not ids:
            return 0
        if len(ids) > AUDIT_READ:
            raise InvalidArgument("ids", f"ids: at most {AUDIT_READ} at once")
        removed: int = yield Call(S.AUDIT_ACK, (self.audit_key,), ids)
        return removed

    @operation
    def audit_pending(self) -> Op[int]:
        """Records not yet moved into the console's database."""
        n: int = yield Command(("XLEN", self.audit_key))
        return n

    @operation
    def api_rate(self, token: str, per_minute: int, window: int = 60) -> Op[tuple[bool, int, str]]:
        """Count one call of API token ``token`` (its digest) in this ``window`` (s), at
        most ``per_minute``: (admitted, calls counted, the tokens' generation). One round
        trip, one counter for every web process; a refused call is not counted."""
        v.integer("per_minute", per_minute, 0, 2**31)
        v.integer("window", window, 1, 3600)
        slot = int(time.time() // window)
        keys = (f"{API_KEY}:rate:{token}:{slot}", f"{API_KEY}:generation")
        used, admitted, generation = yield Call(S.API_RATE, keys, (per_minute, window + 5))
        return bool(admitted), int(used), _text(generation)

    @operation
    def api_generation(self) -> Op[str]:
        """The tokens' generation now (`api_rate`)."""
        raw = yield Command(("GET", f"{API_KEY}:generation"))
        return "0" if raw is None else _text(raw)

    @operation
    def api_generation_bump(self) -> Op[str]:
        """A token was revoked or changed: every process's cache of tokens is stale."""
        n = yield Command(("INCR", f"{API_KEY}:generation"))
        return str(n)

    # -- operations: none of them changes rc, fr, totalsent or totalrecv -------------

    @operation
    def queue_stats(
        self, qnames: Iterable[str] | None = None, sample: int = DEFAULT_SAMPLE
    ) -> Op[list[QueueStats]]:
        """Counters of the given queues (default: all), in one pipelined round trip
        (all queues: one more, for their names, read in SSCAN steps the first time and
        past SMEMBERS_MAX queues). Queues that don't exist are left out.

        Nothing another client wrote makes it fail: a queue whose record can't be read
        and a name that is not an RSMQ name (the queue set may hold any) come back as
        rows with ``unreadable`` saying why, and every other queue is read as usual.
        No key is made of a name that is not an RSMQ name."""
        if qnames is not None:
            names = list(qnames)
            for q in names:
                if not isinstance(q, str):
                    v.qname(q)  # raises: only text can be a listed name
            return (yield from self._stats_of(names, sample))
        v.integer("sample", sample, 1, 100_000)
        if self._count_hint is None or self._count_hint > SMEMBERS_MAX:
            names = yield from self._names()
            stats = yield from self._stats_of(names, sample)
            self._remember(names, stats)
            return stats
        # One round trip: the queue set and the counters of the queues it held last time.
        # Queues created since cost one more; deleted ones come back absent and drop out.
        known = self._known_names
        calls, _ = self._stats_calls(known, sample)
        members, results = yield Batch(calls, first=("SMEMBERS", self.queues_key))
        names = sorted(_text(m) for m in members)
        current = set(names)
        stats = [s for s in self._parse_stats(known, results) if s.qname in current]
        seen = set(known)
        new = [n for n in names if n not in seen]
        if new:
            now = results[0][0] if results else 0
            stats += yield from self._stats_of(new, sample, now)
            stats.sort(key=lambda s: s.qname)
        self._remember(names, stats)
        return stats

    def _remember(self, names: list[str], stats: list[QueueStats]) -> None:
        """The queue names the next queue_stats() of all reads with the queue set, in
        the same round trip: the RSMQ names of a namespace SMEMBERS may read whole."""
        self._count_hint = len(names)
        if len(names) > SMEMBERS_MAX:
            self._known_names = []
            return
        foreign = {s.qname for s in stats if s.unreadable == NOT_A_QUEUE}
        self._known_names = [n for n in names if n not in foreign] if foreign else names

    def _stats_of(
        self, names: list[str], sample: int = DEFAULT_SAMPLE, now: int = 0
    ) -> Op[list[QueueStats]]:
        v.integer("sample", sample, 1, 100_000)
        calls, readable = self._stats_calls(names, sample)
        stats = self._parse_stats(readable, (yield Batch(calls))) if calls else []
        if len(readable) == len(names):
            return stats
        # Names that are not RSMQ names (written by some other client): listed, never read.
        now = stats[0].now if stats else now
        by_name = {s.qname: s for s in stats}
        return [
            by_name[n] if n in by_name else QueueStats.of_unreadable(n, NOT_A_QUEUE, now)
            for n in names
            if n in by_name or n not in readable
        ]

    def _stats_calls(self, names: list[str], sample: int) -> tuple[list[Call], list[str]]:
        """The stats script calls for ``names``, and the names they read: those that are
        RSMQ queue names (no key is made of any other)."""
        keys: list[str] = []
        readable: list[str] = []
        for q in names:
            try:
                keys += self._queue_keys(q)
            except InvalidArgument:
                continue
            readable.append(q)
        step = 2 * _stats_chunk(readable)
        calls = [
            Call(S.STATS, keys[k : k + step], (sample, random.random()))
            for k in range(0, len(keys), step)
        ]
        return calls, readable

    @staticmethod
    def _parse_stats(names: list[str], results: list[Any]) -> list[QueueStats]:
        stats: list[QueueStats] = []
        n = _stats_chunk(names)
        for k, r in zip(range(0, len(names), n), results, strict=True):
            now = r[0]
            for j, q in enumerate(names[k : k + n]):
                row = r[1 + STATS_ROW * j : 1 + STATS_ROW * (j + 1)]
                if row[0] != 0:
                    stats.append(_stats(q, row, now))
        return stats

    @operation
    def list_messages(
        self,
        qname: str,
        state: str = "all",
        offset: int = 0,
        limit: int = 50,
        preview: int = 0,
        scan_budget: int = DEFAULT_SCAN_BUDGET,
    ) -> Op[Page]:
        """A page of messages in a state, in queue order, costing O(log n + limit).

        ``preview`` > 0 cuts each body to that many bytes (``MessageInfo.size`` keeps the
        full size). ``inflight`` and ``delayed`` look at no more than ``scan_budget`` hidden
        messages; past that ``Page.exact`` is False and ``total`` is an estimate.
        """
        keys = self._queue_keys(qname)
        v.state(state)
        v.integer("offset", offset, 0, 2**53)
        v.integer("limit", limit, 1, v.MAX_PAGE)
        v.integer("preview", preview, 0, 2**31)
        v.integer("scan_budget", scan_budget, 1, 10**9)
        r = yield Call(S.LIST, keys, (state, offset, limit, preview, scan_budget), qname)
        now, total, exact = r[0], r[1], r[2] == 1
        items = [_info(r[i : i + 6], now) for i in range(3, len(r), 6)]
        return Page(items=items, total=total, offset=offset, limit=limit, exact=exact, now=now)

    @operation
    def search_messages(
        self,
        qname: str,
        contains: str = "",
        min_rc: int = 0,
        state: str = "all",
        cursor: int = 0,
        limit: int = 50,
        scan_limit: int = DEFAULT_SCAN_BUDGET,
        preview: int = 0,
    ) -> Op[SearchResult]:
        """Messages whose body contains a text and/or received at least ``min_rc`` times.

        Bounded: looks at no more than ``scan_limit`` messages of the state, in queue order,
        from ``cursor`` on; ``SearchResult.next_cursor`` continues where it stopped.
        Read-only, like every browse.
        """
        keys = self._queue_keys(qname)
        v.state(state)
        if not isinstance(contains, str):
            raise InvalidArgument("contains", "contains must be a string")
        v.integer("min_rc", min_rc, 0, 2**31)
        v.integer("cursor", cursor, 0, 2**53)
        v.integer("limit", limit, 1, v.MAX_PAGE)
        v.integer("scan_limit", scan_limit, 1, 10**7)
        v.integer("preview", preview, 0, 2**31)
        args = (state, cursor, scan_limit, limit, min_rc, contains, preview)
        r = yield Call(S.SEARCH, keys, args, qname)
        now, scanned, nxt = r[0], r[1], r[2]
        items = [_info(r[i : i + 6], now) for i in range(3, len(r), 6)]
        return SearchResult(items, scanned, None if nxt < 0 else nxt, now)

    @operation
    def browse(
        self,
        qname: str,
        state: str = "all",
        after: Cursor | None = None,
        before: Cursor | None = None,
        rank: int | None = None,
        limit: int = 50,
        preview: int = 0,
        min_rc: int = 0,
        contains: str = "",
        budget: float = BROWSE_BUDGET,
        step: int = BROWSE_STEP,
        patience: float = 0.0,
    ) -> Op[Browse]:
        """A keyset page of a state over (score, member), the queue's order, optionally
        only messages received at least ``min_rc`` times and/or whose body contains a text.

        From the state's start, or ``after`` a cursor, or backwards ``before`` one (a
        ``Cursor`` with an empty score: from the end), or from the ``rank``-th message of
        an unfiltered state. Each script call looks at ``step`` messages at most (a few
        ms of Redis); calls go on until the page is full, the state ends or ``budget``
        seconds are spent (``patience`` seconds more while nothing was found), and
        ``Browse.resume`` says where to go on. Read-only.
        """
        keys = self._queue_keys(qname)
        v.state(state)
        v.integer("limit", limit, 1, v.MAX_PAGE)
        v.integer("preview", preview, 0, 2**31)
        v.integer("min_rc", min_rc, 0, 2**31)
        v.integer("step", step, 1, 10_000)
        if not isinstance(contains, str):
            raise InvalidArgument("contains", "contains must be a string")
        if sum(x is not None for x in (after, before, rank)) > 1:
            raise InvalidArgument("cursor", "after, before and rank exclude each other")
        if rank is not None:
            v.integer("rank", rank, 0, 2**53)
            if min_rc or contains or state in ("inflight", "delayed"):
                raise InvalidArgument("rank", "a rank is a place in all / visible / hidden")
        direction, at = "next", after
        if before is not None:
            direction, at = "prev", before
        score, member = (at.score, at.member) if at else ("", b"")
        if rank is not None:
            direction, score = "rank", str(rank)
        found: list[Any] = []
        looked = calls = 0
        position: int | None = None
        start = time.monotonic()
        while True:
            # one more than the page: whether anything follows it is then known
            args = (state, direction, score, member, limit + 1 - len(found) // 6, preview,
                    step, min_rc, contains, BROWSE_BYTES)  # fmt: skip
            r: list[Any] = yield Call(S.BROWSE, keys, args, qname)
            calls += 1
            now, at_end, first, last = r[0], r[2] == 1, r[5], r[6]
            looked += r[1]
            rows = r[9:]
            found += rows  # in the order met: backwards for "prev", reversed below
            if rows and direction == "prev":
                position = r[8] - first
            elif rows and position is None:
                position = r[7] - first
            if r[4] is not None:
                score, member = _str(r[3]), _member(r[4])
                if direction == "rank":
                    direction = "next"
            spent = time.monotonic() - start
            if at_end or len(found) // 6 > limit or spent >= budget + (0 if found else patience):
                break
        items = [_info(found[i : i + 6], now) for i in range(0, len(found), 6)]
        places = [Cursor(_str(found[i + 1]), _member(found[i])) for i in range(0, len(found), 6)]
        if len(items) > limit:  # the one past the page: more follow, go on from the page's end
            items, places = items[:limit], places[:limit]
            score, member = places[-1].score, places[-1].member
            at_end = False
            if direction == "prev" and position is not None:
                position += 1  # the one dropped was the rank before the page
        if direction == "prev":
            items.reverse()
            places.reverse()
        return Browse(
            items=items, looked=looked, at_end=at_end, complete=at_end or len(items) >= limit,
            resume=Cursor(score, member) if looked else at, state_size=max(0, last - first + 1),
            position=None if min_rc or contains or state in ("inflight", "delayed") else position,
            now=now, calls=calls, first=places[0] if places else None,
            last=places[-1] if places else None,
        )  # fmt: skip

    @operation
    def census_range(self, qname: str, first: int, count: int, body: bool = False) -> Op[Slice]:
        """The messages at ranks ``first`` .. ``first + count - 1`` of a queue (fewer at
        its end), in queue order, without changing anything (no rc, fr or totalrecv bump).

        One script call per ``CENSUS_BYTES`` read, so no call holds Redis long however
        large the bodies or the range; a queue that changes between calls may shift ranks
        under the read, as between any two census reads.
        """
        keys = self._queue_keys(qname)
        v.integer("first", first, 0, 2**53)
        v.integer("count", count, 0, MAX_CENSUS_COUNT)
        stride = 6 if body else 5
        read_at: int | None = None
        rows: list[Any] = []
        while True:
            got = len(rows) // stride
            args = (first + got, count - got, int(body), CENSUS_BYTES, CENSUS_MESSAGE_BYTES)
            r: list[Any] = yield Call(S.CENSUS, keys, args, qname)
            read_at = r[0] if read_at is None else read_at
            rows += r[2:]
            if r[1] == 0:  # not cut short by the byte budget: the range, or the queue, ended
                break
        ids = [_text(i) for i in rows[0::stride]]
        return Slice(
            read_at=read_at,
            ids=ids,
            # 0: a member that is no RSMQ id, a score that is no time (another client's)
            sent=[int(_sent(i) or 0) for i in ids],
            visible_at=[_score(s) or 0 for s in rows[1::stride]],
            rc=rows[2::stride],
            fr=rows[3::stride],
            size=rows[4::stride],
            body=[_decode(b) for b in rows[5::stride]] if body else None,
        )

    @operation
    def get_message(self, qname: str, id: str) -> Op[MessageInfo | None]:
        """One message with its full body, or None if it is not in the queue."""
        keys = self._queue_keys(qname)
        r = yield Call(S.GET_MESSAGE, keys, (v.message_id(id),), qname)
        if r is None:
            return None
        return _info([id, *r[1:]], r[0])

    @operation
    def requeue(self, qname: str, ids: Iterable[str]) -> Op[int]:
        """Make messages visible now (rc and fr kept); returns how many were in the queue."""
        keys = self._queue_keys(qname)
        checked = [v.message_id(i) for i in ids]
        requeued: int = yield Call(S.REQUEUE, keys, checked, qname)
        return requeued

    @operation
    def requeue_state(self, qname: str, state: str) -> Op[int]:
        """Make every hidden / in-flight / delayed message visible now, in chunks."""
        if state not in ("hidden", "inflight", "delayed"):
            raise InvalidArgument("state", "requeue all: state must be hidden, inflight or delayed")
        return (yield from self._bulk(qname, "requeue", state))

    @operation
    def delete_state(self, qname: str, state: str) -> Op[int]:
        """Delete every message in a state, in chunks; returns how many were deleted."""
        return (yield from self._bulk(qname, "delete", v.state(state)))

    def _bulk(self, qname: str, action: str, state: str) -> Op[int]:
        keys = self._with_failures(qname)
        total = skip = 0
        # Bounded even while producers keep adding: no more rounds than the queue had
        # messages when it started (each round handles or skips a whole chunk). Read as
        # stats: a queue whose counters another client spoiled can still be cleaned up.
        stats = yield from self._stats_of([qname], 1)
        if not stats:
            raise QueueNotFound(qname)
        for _ in range(stats[0].msgs // CHUNK + 2):
            done, skipped, seen = yield Call(S.BULK, keys, (action, state, skip, CHUNK), qname)
            total += done
            skip += skipped
            if seen < CHUNK:
                break
        return total

    @operation
    def purge_queue(self, qname: str) -> Op[int]:
        """Delete every message, keeping the queue's attributes and totals.

        The messages leave the queue at once; their bodies are then deleted in chunks of
        ``CHUNK``, so Redis is never held for more than a few milliseconds at a time.
        Returns how many messages were purged.
        """
        z, h, f = self._with_failures(qname)
        purge_key = z + ":purge"
        while True:
            n: int = yield Call(S.PURGE_DETACH, (z, h, purge_key, f), (), qname)
            if n >= 0:
                break
            yield from self._drain(purge_key, h)  # an interrupted purge left some
        yield from self._drain(purge_key, h)
        return n

    def _drain(self, purge_key: str, hkey: str) -> Op[None]:
        while (yield Call(S.PURGE_DRAIN, (purge_key, hkey), (CHUNK,))) == CHUNK:
            pass

    @operation
    def move_messages(self, src: str, dst: str, ids: Iterable[str] | None = None) -> Op[int]:
        """Move messages (default: all) to another queue, visible there at once.

        Each keeps its id, body, rc and fr; no queue's totals change. Moving all goes in
        chunks of ``CHUNK``; a message larger than ``dst``'s maxsize stays in ``src``.
        Returns how many were moved.
        """
        src_keys = self._queue_keys(src)
        dst_keys = self._queue_keys(dst)
        if src == dst:
            raise InvalidArgument("dst", "dst must be a different queue from src")
        keys = (*src_keys, *dst_keys, self._failures_key(src), self._failures_key(dst))
        if ids is not None:
            checked = [v.message_id(i) for i in ids]
            if not checked:
                return 0
            m: int
            m, _ = yield Call(S.MOVE, keys, (0, CHUNK, *checked), (src, dst))
            return m
        moved = skipped = 0
        while True:
            m, s = yield Call(S.MOVE, keys, (skipped, CHUNK), (src, dst))
            moved += m
            skipped += s
            if m + s < CHUNK:
                return moved

    # -- why it failed ----------------------------------------------------------------

    @operation
    def record_failure(
        self,
        qname: str,
        id: str,
        error: BaseException | None = None,
        *,
        error_type: str | None = None,
        message: str | None = None,
        trace: str | Iterable[str] | None = None,
        vt: int | None = None,
    ) -> Op[bool]:
        """Record that handling message ``id`` failed: ``error`` (its type, message and the
        first lines of its traceback), or ``error_type`` / ``message`` / ``trace`` given
        as text (each overrides what ``error`` says). The attempt is the message's rc.

        Kept in the queue's failure key (FAILURES_SUFFIX), bounded (FAILURE_HISTORY last
        failures, FAILURE_BYTES per message, FAILURE_MESSAGES messages per queue), expiring
        FAILURE_TTL s after the queue's last failure, deleted with the message and moved
        with it (dead-lettered, moved, redriven). With ``vt`` the message's visibility
        changes in the same call, as ``change_message_visibility`` would (what the worker
        does on each failure: no extra round trip). Returns False when the message is
        not in the queue (nothing is recorded).
        """
        keys = self._with_failures(qname)
        v.message_id(id)
        if error is not None and not isinstance(error, BaseException):
            raise InvalidArgument("error", "error must be an exception")
        for name, value in (("error_type", error_type), ("message", message)):
            if value is not None and not isinstance(value, str):
                raise InvalidArgument(name, f"{name} must be a string")
        if trace is not None and not isinstance(trace, str):
            trace = list(trace)
            if not all(isinstance(line, str) for line in trace):
                raise InvalidArgument("trace", "trace must be a string or lines of text")
        t = "" if vt is None else v.seconds("vt", vt)
        if error is not None:
            cls = type(error)
            module = "" if cls.__module__ == "builtins" else cls.__module__ + "."
            error_type = error_type or (module + cls.__qualname__)[:FAILURE_TYPE_MAX]
            if message is None:
                try:
                    message = str(error)
                except Exception:  # an exception whose __str__ raises is still recorded
                    message = f"<{cls.__qualname__}: str() failed>"
            if trace is None:
                trace = traceback.format_exception(error)
        error_type = (error_type or "").strip()
        if not error_type:
            raise InvalidArgument("error_type", "error_type (or error) must name the failure")
        if len(error_type) > FAILURE_TYPE_MAX:
            raise InvalidArgument(
                "error_type", f"error_type must be at most {FAILURE_TYPE_MAX} characters"
            )
        lines = _trace_lines(trace or "")
        args = (
            id, t, error_type, _cut(message or "", FAILURE_MESSAGE_MAX),
            _cut("\n".join(lines), FAILURE_TRACE_MAX), FAILURE_HISTORY, FAILURE_BYTES,
            FAILURE_MESSAGES, FAILURE_TTL,
        )  # fmt: skip
        recorded: int = yield Call(S.RECORD_FAILURE, keys, args, qname)
        return recorded == 1

    @operation
    def failures(self, qname: str, id: str) -> Op[list[Failure]]:
        """A message's recorded failures, newest first ([] when none are recorded)."""
        key = self._failures_key(qname)
        raw = yield Call(S.FAILURE_HISTORY, (key,), (v.message_id(id),), qname)
        return self._history(raw)

    @operation
    def message_and_failures(
        self, qname: str, id: str
    ) -> Op[tuple[MessageInfo | None, list[Failure]]]:
        """``get_message`` and ``failures`` in one round trip (the console's message page)."""
        keys = self._queue_keys(qname)
        v.message_id(id)
        r, raw = yield Batch(
            [
                Call(S.GET_MESSAGE, keys, (id,), qname),
                Call(S.FAILURE_HISTORY, (self._failures_key(qname),), (id,), qname),
            ]
        )
        return (None if r is None else _info([id, *r[1:]], r[0])), self._history(raw)

    @staticmethod
    def _history(raw: Any) -> list[Failure]:
        if isinstance(raw, list):
            return [Failure(0, 0, "?", "", (), f"the failure key is a {_text(raw[1])}, not a hash")]
        return _failures(raw)

    @operation
    def failure_groups(self, qname: str) -> Op[FailureGroups]:
        """The queue's failing messages grouped by their last failure's type: ``retry``,
        those still in the queue with a recorded failure; ``dead``, those its dead-letter
        policy moved to its dead-letter queue (and still there). Bounded: at most
        FAILURE_SCAN_STEPS steps of FAILURE_SCAN_COUNT per key (each ~1 ms); past that
        ``complete`` is False and the counts are what was read."""
        stats = yield from self._stats_of([qname], 1)
        if not stats:
            raise QueueNotFound(qname)
        dlq = stats[0].dlq
        groups: list[FailureGroup] = []
        now, complete = stats[0].now, True
        parts: list[tuple[str, FailureState, str]] = [(qname, "retry", "")]
        if dlq is not None:
            parts.append((dlq, "dead", qname))
        for where, state, source in parts:
            z, h, f = self._with_failures(where)
            by_type: dict[str, list[str]] = {}
            seen: set[str] = set()
            cursor: bytes | str = "0"
            for _ in range(FAILURE_SCAN_STEPS):
                r = yield Call(S.FAILURE_SCAN, (f, z, h), (cursor, FAILURE_SCAN_COUNT, source))
                cursor, now = r[0], r[1]
                for i in range(2, len(r), 3):
                    mid = _text(r[i])
                    if mid not in seen:  # HSCAN may return a field twice
                        seen.add(mid)
                        by_type.setdefault(_text(r[i + 1]) or "?", []).append(mid)
                if int(cursor) == 0:
                    break
            else:
                complete = False
            groups += [
                FailureGroup(t, state, where, len(ids), tuple(sorted(ids)[:FAILURE_EXAMPLES]))
                for t, ids in by_type.items()
            ]
        groups.sort(key=lambda g: (g.state != "retry", -g.count, g.type))
        return FailureGroups(qname, dlq, groups, complete, now)

    @operation
    def ping(self) -> Op[bool]:
        return bool((yield Command(("PING",))))
