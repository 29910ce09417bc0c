"""Why messages failed: failure histories and their groups by error type."""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Batch, Call, Op, operation
from ..errors import InvalidArgument, QueueNotFound
from ..limits import (
    FAILURE_BYTES,
    FAILURE_EXAMPLES,
    FAILURE_HISTORY,
    FAILURE_MESSAGE_MAX,
    FAILURE_MESSAGES,
    FAILURE_SCAN_COUNT,
    FAILURE_SCAN_STEPS,
    FAILURE_TRACE_MAX,
    FAILURE_TTL,
    FAILURE_TYPE_MAX,
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
