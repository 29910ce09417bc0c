"""Why messages failed: failure histories and their groups by error type."""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Batch, Call, Op, operation
from ..errors import InvalidArgument, QueueNotFound
from ..limits import (
    CHUNK,
    FAILURE_BYTES,
    FAILURE_EXAMPLES,
    FAILURE_HISTORY,
    FAILURE_LINE_MAX,
    FAILURE_MESSAGE_MAX,
    FAILURE_MESSAGES,
    FAILURE_SCAN_COUNT,
    FAILURE_SCAN_STEPS,
    FAILURE_TEXTS,
    FAILURE_TRACE_MAX,
    FAILURE_TTL,
    FAILURE_TYPE_MAX,
    FAILURES_SUFFIX,
    MEMBER_MAX,
)
from ..models import (
    Failure,
    FailureGroup,
    FailureGroups,
    FailureState,
    MessageInfo,
)
from ..parse import (
    _cut,
    _failures,
    _text,
    _trace_lines,
)
from .base import R
from .read import Read
from .stats import Stats


class Failures(Stats[R]):
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
            FAILURE_MESSAGES, FAILURE_TTL, _error_line(message or "", lines),
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
        self, qname: str, id: str | bytes
    ) -> Op[tuple[MessageInfo | None, list[Failure]]]:
        """``get_message`` and ``failures`` in one round trip (the console's message page).
        ``id``: an RSMQ id, or a message's exact zset member as bytes, RSMQ id or not
        (``MessageInfo.member``, as browsing lists it: how a message another client wrote
        under an id no RSMQ client would, such as go-rsmq's 22 characters, is read)."""
        keys = self._queue_keys(qname)
        if isinstance(id, bytes):
            if not 0 < len(id) <= MEMBER_MAX:
                raise InvalidArgument("id", f"a member is 1 to {MEMBER_MAX} bytes")
        else:
            v.message_id(id)
        r, raw = yield Batch(
            [
                Call(S.GET_MESSAGE, keys, (id,), qname),
                Call(S.FAILURE_HISTORY, (self._failures_key(qname),), (id,), qname),
            ]
        )
        info = None if r is None else (yield from Read._whole(keys[1], id, r))
        return info, self._history(raw)

    @staticmethod
    def _history(raw: Any) -> list[Failure]:
        if isinstance(raw, list):
            return [Failure(0, 0, "?", "", (), f"the failure key is a {_text(raw[1])}, not a hash")]
        return _failures(raw)

    @operation
    def failure_groups(self, qname: str) -> Op[FailureGroups]:
        """The queue's failing messages grouped by their last failure's type: ``retry``,
        those still in the queue with a recorded failure; ``dead``, those dead-lettered
        (its dead-letter policy moved them to its dead-letter queue, and they are still
        there; read on a dead-letter queue: the dead letters in it). Each group has its
        first and last failure's time, its most frequent error lines and a few ids.
        Bounded: at most FAILURE_SCAN_STEPS steps of FAILURE_SCAN_COUNT per key (each
        short); past that ``complete`` is False and the counts are what was read."""
        dlq, rows, complete, now = yield from self._failing(qname)
        by_group: dict[tuple[str, FailureState, str], list[_Row]] = {}
        for row in rows:
            by_group.setdefault((row.type, row.state, row.where), []).append(row)
        groups = [_group(t, state, where, rs) for (t, state, where), rs in by_group.items()]
        groups.sort(key=lambda g: (g.state != "retry", -g.count, g.type, g.where))
        return FailureGroups(qname, dlq, groups, complete, now)

    @operation
    def retry_failure_group(
        self,
        qname: str,
        type: str,
        state: str,
        where: str | None = None,
        limit: int | None = None,
        keep: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> Op[int]:
        """Retry one failure group of ``failure_groups(qname)`` now: a ``retry`` group's
        messages become visible at once where they are (rc and fr kept, as ``requeue``);
        a ``dead`` group's go back to the queue each was dead-lettered from, starting
        over (as ``redrive``: rc and fr dropped; one in flight or delayed stays). At most
        ``limit`` messages (the oldest ids first: what a confirmation counted); ``where``:
        the queue the group is in, when groups of that type and state are in two. Bounded
        steps of CHUNK. Returns how many were retried. ``keep``: an undo token
        (``open_undo`` on ``where``) that keeps what a ``dead`` group's retry moves (a
        ``retry`` group's stays where it is: nothing to undo). ``ids``: the group's, as
        ``failure_group_ids`` read them (with its ``where``): not read again."""
        where, ids = yield from self._group_or_ids(qname, type, state, where, limit, ids)
        done = 0
        if state == "retry":
            keys = self._queue_keys(where)
            for k in range(0, len(ids), CHUNK):
                done += yield Call(S.REQUEUE, keys, ids[k : k + CHUNK], where)
            return done
        with_failures = (*self._with_failures(where), *self._kept(keep))
        while ids:  # a call stops early past MOVE_BYTES of bodies: the rest again
            chunk = ids[:CHUNK]
            moved, looked, _ = yield Call(
                S.REDRIVE_IDS, with_failures, (self._prefix, FAILURES_SUFFIX, *chunk), where
            )
            done += moved
            ids = ids[looked:]
        return done

    @operation
    def delete_failure_group(
        self,
        qname: str,
        type: str,
        state: str,
        where: str | None = None,
        limit: int | None = None,
        keep: str | None = None,
        ids: Sequence[str] | None = None,
    ) -> Op[int]:
        """Delete the messages of one failure group of ``failure_groups(qname)`` (at most
        ``limit``, the oldest ids first; ``where`` as for ``retry_failure_group``), in
        bounded steps of CHUNK. Returns how many were deleted. ``keep``: an undo token
        (``open_undo`` on ``where``) that keeps what is deleted; ``ids`` as for
        ``retry_failure_group``."""
        where, ids = yield from self._group_or_ids(qname, type, state, where, limit, ids)
        keys = (*self._with_failures(where), *self._kept(keep))
        deleted = 0
        for k in range(0, len(ids), CHUNK):
            deleted += yield Call(S.DELETE, keys, ids[k : k + CHUNK], where)
        return deleted

    @operation
    def failure_group_ids(
        self,
        qname: str,
        type: str,
        state: str,
        where: str | None = None,
        limit: int | None = None,
    ) -> Op[tuple[str, list[str]]]:
        """The queue one failure group's messages are in and their ids (the oldest
        first, at most ``limit``): what ``retry_failure_group`` / ``delete_failure_group``
        would act on, read first to keep it for an Undo (``open_undo_within``)."""
        return (yield from self._group_ids(qname, type, state, where, limit))

    def _group_or_ids(
        self,
        qname: str,
        type: str,
        state: str,
        where: str | None,
        limit: int | None,
        ids: Sequence[str] | None,
    ) -> Op[tuple[str, list[str]]]:
        """``_group_ids``, unless the caller read them already (``ids``, in ``where``)."""
        if ids is None:
            return (yield from self._group_ids(qname, type, state, where, limit))
        if state not in ("retry", "dead"):
            raise InvalidArgument("state", "state must be retry or dead")
        place = v.qname(where if where is not None else qname, "where")
        self._queue_keys(place)
        return place, [v.message_id(i) for i in ids][:limit]

    def _group_ids(
        self, qname: str, type: str, state: str, where: str | None, limit: int | None
    ) -> Op[tuple[str, list[str]]]:
        """The queue a failure group's messages are in, and their ids (oldest first)."""
        if not isinstance(type, str) or not type:
            raise InvalidArgument("type", "type must name a failure group's error type")
        if state not in ("retry", "dead"):
            raise InvalidArgument("state", "state must be retry or dead")
        if where is not None:
            self._queue_keys(v.qname(where, "where"))
        if limit is not None:
            v.integer("limit", limit, 1, 2**53)
        _, rows, _, _ = yield from self._failing(qname)
        found = sorted(
            (r.where, r.id)
            for r in rows
            if r.type == type and r.state == state and where in (None, r.where)
        )
        wheres = {w for w, _ in found}
        if len(wheres) > 1:
            raise InvalidArgument("where", f"where must name one of {', '.join(sorted(wheres))}")
        return (found[0][0] if found else where or qname), [i for _, i in found][:limit]

    def _failing(self, qname: str) -> Op[tuple[str | None, list[_Row], bool, int]]:
        """The queue's dead-letter queue, and what failure_groups groups: each failing
        message's row, bounded as it says; whether all were read; Redis's time."""
        stats = yield from self._stats_of([qname], 1)
        if not stats:
            raise QueueNotFound(qname)
        dlq = stats[0].dlq
        rows: list[_Row] = []
        now, complete = stats[0].now, True
        parts: list[tuple[str, str]] = [(qname, "")]
        if dlq is not None:
            parts.append((dlq, qname))
        for where, source in parts:
            z, h, f = self._with_failures(where)
            seen: set[str] = set()
            cursor: bytes | str = "0"
            for _ in range(FAILURE_SCAN_STEPS):
                r = yield Call(S.FAILURE_SCAN, (f, z, h), (cursor, FAILURE_SCAN_COUNT, source))
                cursor, now = r[0], r[1]
                for i in range(2, len(r), 4):
                    mid = _text(r[i])
                    if mid not in seen:  # HSCAN may return a field twice
                        seen.add(mid)
                        rows.append(_row(mid, where, r[i + 1], bool(source or _text(r[i + 3]))))
                if int(cursor) == 0:
                    break
            else:
                complete = False
        return dlq, rows, complete, now


@dataclass(frozen=True, slots=True)
class _Row:
    """A failing message as failure_scan read it."""

    id: str
    where: str
    state: FailureState
    type: str
    first: int
    last: int
    line: str


def _error_line(message: str, trace: list[str]) -> str:
    """What a failure group shows of a failure: its message's first line that says
    something, else its trace's last (a Python traceback ends with "Type: message")."""
    said = [line.strip() for line in message.splitlines() if line.strip()]
    said = said or [line.strip() for line in reversed(trace) if line.strip()]
    line = said[0] if said else ""
    return line if len(line) <= FAILURE_LINE_MAX else line[: FAILURE_LINE_MAX - 1] + "…"


def _row(mid: str, where: str, summary: Any, dead: bool) -> _Row:
    """A message's row from its summary (record_failure: the type, then first and last
    seen, the error line and the attempt, separated by \\x1f; before times were kept,
    the type alone; written by another client, anything: what isn't a time is unknown, 0)."""
    parts = _text(summary).split("\x1f", 4)
    kind = parts[0] or "?"
    times = [int(p) if p.isdigit() and len(p) < 16 else 0 for p in parts[1:3]]
    first, last = (times + [0, 0])[:2]
    line = parts[3] if len(parts) > 3 else ""
    return _Row(mid, where, "dead" if dead else "retry", kind, first, last, line)


def _group(kind: str, state: FailureState, where: str, rows: list[_Row]) -> FailureGroup:
    lines = Counter(r.line for r in rows if r.line)
    last_of: dict[str, int] = {}
    for r in rows:
        last_of[r.line] = max(last_of.get(r.line, 0), r.last)
    top = sorted(lines.items(), key=lambda x: (-x[1], -last_of[x[0]], x[0]))[:FAILURE_TEXTS]
    firsts = [r.first for r in rows if r.first]
    return FailureGroup(
        kind, state, where, len(rows),
        tuple(sorted(r.id for r in rows)[:FAILURE_EXAMPLES]),
        first=min(firsts, default=0), last=max((r.last for r in rows), default=0),
        texts=tuple(top), other_texts=lines.total() - sum(n for _, n in top),
    )  # fmt: skip
