"""The console's HTTP API in the core: a data-plane call whose script also writes its
audit record (and may count the API token's call), the audit stream's reading, and the
tokens' counters and generation. Key names: base.py."""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from redis.exceptions import ResponseError

from .. import scripts as S
from .. import validation as v
from ..driver import Call, Command, Op, operation
from ..errors import ApiRefused, InvalidArgument, RsmqError
from ..limits import AUDIT_READ
from ..parse import _decode, _pairs, _text
from .base import R
from .messages import Messages

#: the scripts an audited call may run, and how each one's reply is kept in its record
#: (scripts/_audited.lua)
AUDITED_MODES = {
    "send_message": "ids", "send_messages": "ids", "receive_message": "recv",
    "receive_messages": "recv", "delete_message": "n", "delete_messages": "n",
    "change_message_visibility": "n",
}  # fmt: skip


class ApiRate(NamedTuple):
    """An API token's call to count in an audited call's script (``ConsoleApi.audited``):
    its digest, its limit a window, the window (s), the tokens' generation the caller
    read it at."""

    token: str
    per_minute: int
    window: int
    generation: str


class ConsoleApi(Messages[R]):
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
            keys += (self._api_rate_key(rate.token, slot), self._api_generation_key())
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
    def api_rate(
        self, token: str, per_minute: int, window: int = 60, n: int = 1
    ) -> Op[tuple[bool, int, str]]:
        """Count one call of API token ``token`` (its digest) in this ``window`` (s), at
        most ``per_minute``: (admitted, calls counted, the tokens' generation). One round
        trip, one counter for every web process; a refused call is not counted. ``n``: what
        the call counts for (an import: one a message)."""
        v.integer("per_minute", per_minute, 0, 2**31)
        v.integer("window", window, 1, 3600)
        v.integer("n", n, 1, 2**31)
        slot = int(time.time() // window)
        keys = (self._api_rate_key(token, slot), self._api_generation_key())
        used, admitted, generation = yield Call(S.API_RATE, keys, (per_minute, window + 5, n))
        return bool(admitted), int(used), _text(generation)

    @operation
    def api_generation(self) -> Op[str]:
        """The tokens' generation now (`api_rate`)."""
        raw = yield Command(("GET", self._api_generation_key()))
        return "0" if raw is None else _text(raw)

    @operation
    def api_generation_bump(self) -> Op[str]:
        """A token was revoked or changed: every process's cache of tokens is stale."""
        n = yield Command(("INCR", self._api_generation_key()))
        return str(n)
