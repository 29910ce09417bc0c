"""Reply parsing: Redis replies (bytes, flat lists) into queues/models.py dataclasses,
and the small argument conversions the operations share. Pure functions, no I/O."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterable
from typing import Any

from . import validation as v
from .errors import InvalidArgument
from .ids import sent_ms
from .limits import (
    FAILURE_TRACE_LINES,
    STATS_CHUNK,
    STATS_CHUNK_BIG,
    STATS_CHUNK_BIG_AFTER,
)
from .models import (
    Failure,
    Message,
    MessageInfo,
    QueueAttributes,
    QueueStats,
    State,
)


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


#: an id with a time in it: 10 base-36 digits of the server's epoch µs (the original,
#: PyRSMQ, this client), then 22 characters. go-rsmq's ids are 22 random characters:
#: no time is in them, and none is made up.
_TIMED_ID = re.compile(r"[0-9a-z]{10}[a-zA-Z0-9:]{22}")


def _sent(mid: str) -> float | None:
    """``sent`` from an RSMQ id; None (unknown) for an id with no time in it."""
    if not _TIMED_ID.fullmatch(mid):
        return None
    return sent_ms(mid)


def _pairs(flat: list[Any]) -> list[tuple[Any, Any]]:
    """Fields as Redis sends them (name, value, name, value, …): a stream entry's, HGETALL's."""
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
        sent=_sent(mid),
    )


def _cut_bytes(body: bytes, n: int) -> bytes:
    """The first ``n`` bytes of a body, never ending inside a UTF-8 character (as
    _prelude.lua's cut(); ``n`` <= 0: all of it)."""
    if n <= 0 or len(body) <= n:
        return body
    while n > 0 and 0x80 <= body[n] < 0xC0:
        n -= 1
    return body[:n]


#: the note of a message whose id no RSMQ client writes (another port's, or hostile)
FOREIGN_ID = "not an RSMQ message id"


def _info(f: list[Any], now: int) -> MessageInfo:
    mid = _text(f[0])
    notes = []
    if f[3] is None:  # a body the read's byte budget left unread (see Read._fill)
        notes.append(f"its body ({f[2]:,} bytes) was not read: past this read's byte budget")
        f = [*f[:3], b"", *f[4:]]
    member = None
    if not v.ID_RE.fullmatch(mid):
        notes.append(FOREIGN_ID)
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
        sent=sent, visible_at=score or 0, state=state, read_at=now,
        note="; ".join(notes) or None, member=member,
    )  # fmt: skip


#: epoch seconds past this are epoch milliseconds (1e11 s is the year 5138)
MS_AFTER = 10**11
_RFC3339 = re.compile(
    r"(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d(?::\d\d)?)(?:\.(\d+))?\s*([Zz]|[+-]\d\d:?\d\d)?"
)


def _epoch_s(raw: Any) -> int:
    """``created`` / ``modified`` as epoch seconds, in any form the RSMQ ports write:
    epoch s (the original, PyRSMQ), epoch ms (past MS_AFTER), or RFC 3339 text (go-rsmq's
    ``time.Time``: ``2024-05-01T12:34:56.123456Z``, an offset, or none: UTC). What is none
    of them is 0 (browse.lua and stats.lua report it as unreadable before this)."""
    if isinstance(raw, int):
        return raw // 1000 if raw >= MS_AFTER else raw
    text = _text(raw).strip()
    try:
        n = int(text)
    except ValueError:
        m = _RFC3339.fullmatch(text)
        if not m:
            return 0
        date, clock, _fraction, zone = m.groups()
        zone = "+00:00" if not zone or zone in "Zz" else zone
        if ":" not in zone:
            zone = zone[:3] + ":" + zone[3:]
        try:
            at = dt.datetime.fromisoformat(f"{date}T{clock}{zone}")
        except ValueError:
            return 0
        return int(at.timestamp())
    return n // 1000 if n >= MS_AFTER else n


def _attributes(a: list[Any]) -> QueueAttributes:
    return QueueAttributes(
        vt=a[0], delay=a[1], maxsize=a[2], totalrecv=a[3], totalsent=a[4],
        created=_epoch_s(a[5]), modified=_epoch_s(a[6]), msgs=a[7], hiddenmsgs=a[8],
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
        totalrecv=row[5], created=_epoch_s(row[6]), modified=_epoch_s(row[7]), msgs=row[8],
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
    """A trace's lines: given as text, its lines; given as lines, each one (with or
    without its "\\n", as traceback.format_exception gives them or as a list of lines),
    never two run together."""
    chunks = [trace] if isinstance(trace, str) else trace
    lines = [line for chunk in chunks for line in chunk.splitlines()]
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
