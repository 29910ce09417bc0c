"""Undo: what a destructive action removes, kept for a while and put back exactly.

An action that may be undone first opens a stash (``open_undo``: a token), then runs
with ``keep=token`` — ``delete_message(s)``, ``delete_members``, ``delete_state``,
``purge_queue``, ``move_messages``, ``redrive``, ``delete_queue``. Each of their scripts
copies what it removes into the stash in the same script call as the removal (nothing
is removed without its copy): every message's id, score, body, rc, fr and x:src (and
where it went, for a move or a redrive); a deleted queue's whole hash (attributes,
totals) and zset, renamed (O(1)). A purge renames the queue's zset to the stash's (O(1))
and then moves the bodies in chunks of ``UNDO_CHUNK``. The stash lives outside the RSMQ keys
(``{ns}:@undo:{token}``: base.py) and expires with its record (``hours``).

``undo(token)`` puts each message back as it was, in chunks of ``UNDO_CHUNK`` (no call holds
Redis long), unless its id is in the queue again (``present``), or it went to another
queue and is no longer there (``gone``) or was received there since (``taken``), or its id is
none an RSMQ client makes (``foreign``: a member named like a queue field): those are
counted and named, never duplicated. A deleted queue comes back whole when nobody
created it again; if somebody did, its new attributes stay and the messages go into it
(``Restored.recreated``). Failure histories (``:x:failures``) are not kept.
A second undo does nothing and says so (``Restored.already``).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Call, Command, Op, operation
from ..errors import InvalidArgument, UndoNotFound
from ..limits import (
    CHUNK,
    FAILURES_SUFFIX,
    UNDO_CHUNK,
    UNDO_HOURS,
    UNDO_HOURS_MAX,
    UNDO_MESSAGE_BYTES,
    UNDO_SAMPLE,
    UNDO_SKIPPED_IDS,
)
from ..models import Restored, UndoInfo
from ..parse import _pairs, _str
from .base import Base, R

#: the name of the action a stash is opened for (its audit name: "purge", "move", ...)
UNDO_ACTION_RE = re.compile(r"[a-z][a-z_]{0,39}")


def _int(raw: Any, default: int = 0) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


class Undo(Base[R]):
    @operation
    def open_undo(
        self, action: str, qname: str, to: str | None = None, hours: float = UNDO_HOURS
    ) -> Op[str]:
        """A new stash for ``action`` on ``qname`` (``to``: a move's destination), kept
        ``hours`` from now; returns its token, to pass as ``keep=`` to the action."""
        opened = yield from self._open_stash(action, qname, to, hours, None, None)
        return opened.token

    @operation
    def open_undo_within(
        self,
        action: str,
        qname: str,
        max_bytes: int,
        ids: Iterable[str | bytes] | None = None,
        to: str | None = None,
        hours: float = UNDO_HOURS,
    ) -> Op[UndoInfo]:
        """``open_undo`` if what the action would keep fits ``max_bytes`` (``ids``: those
        messages; none: the whole queue, estimated as ``undo_estimate`` does), in one
        call. Its record (count 0): ``token`` "" when it did not fit; ``bytes``: the
        estimate."""
        v.integer("max_bytes", max_bytes, 0, 2**53)
        checked = None if ids is None else list(ids)
        if checked is not None and not all(isinstance(i, (str, bytes)) for i in checked):
            raise InvalidArgument("ids", "ids must be strings")
        return (yield from self._open_stash(action, qname, to, hours, max_bytes, checked))

    def _open_stash(
        self,
        action: str,
        qname: str,
        to: str | None,
        hours: float,
        max_bytes: int | None,
        ids: list[str | bytes] | None,
    ) -> Op[UndoInfo]:
        if not isinstance(action, str) or not UNDO_ACTION_RE.fullmatch(action):
            raise InvalidArgument("action", "action must be 1 to 40 of a-z and '_'")
        z, h = self._queue_keys(qname)
        if to is not None:
            self._queue_keys(v.qname(to, "to"))
        if not isinstance(hours, (int, float)) or not 0 < hours <= UNDO_HOURS_MAX:
            raise InvalidArgument("hours", f"hours must be more than 0, at most {UNDO_HOURS_MAX}")
        token = secrets.token_hex(16)
        record = self._undo_keys(token)[2]
        ttl = int(hours * 3600 * 1000)
        args: list[Any] = [action, qname, to or "", ttl]
        if max_bytes is not None:
            args += [max_bytes, UNDO_MESSAGE_BYTES, UNDO_SAMPLE, *(ids or [])]
        exp, size = yield Call(S.UNDO_OPEN, (record, h, z), args)
        return UndoInfo(
            token=token if exp else "", action=action, qname=qname, to=to or "",
            kind="", count=0, bytes=max(int(size), 0), created_ms=0, expires_ms=int(exp),
            done_ms=None, restored=0, present=0, gone=0, taken=0, recreated=False,
        )  # fmt: skip

    @operation
    def discard_undo(self, token: str) -> Op[bool]:
        """Forget a stash that kept nothing (its action failed or removed nothing), so no
        empty record waits for its expiry; one that kept something stays. Returns
        whether it was forgotten."""
        gone: int = yield Call(S.UNDO_DISCARD, self._undo_keys(token), ())
        return gone == 1

    @operation
    def drop_undo(self, token: str) -> Op[bool]:
        """Give a stash up, whatever it keeps (a budget of all stashes was spent: the
        console gives up the oldest first); its undo then finds nothing. Returns whether
        there was one. UNLINK: a big stash is freed in Redis' background thread."""
        gone: int = yield Command(("UNLINK", *self._undo_keys(token)))
        return gone > 0

    @operation
    def undo_info(self, token: str) -> Op[UndoInfo | None]:
        """A stash's record, or None once it expired (or never was)."""
        return (yield from self._undo_info(token))

    def _undo_info(self, token: str) -> Op[UndoInfo | None]:
        record = self._undo_keys(token)[2]
        raw = yield Command(("HGETALL", record))
        if not raw:
            return None
        h = {_str(k): _str(val) for k, val in _pairs(raw)}  # (RESP2: driver.resp2)
        done = h.get("done")
        return UndoInfo(
            token=token,
            action=h.get("action", ""),
            qname=h.get("q", ""),
            to=h.get("to", ""),
            kind=h.get("kind", "messages"),
            count=_int(h.get("n")),
            bytes=_int(h.get("bytes")),
            created_ms=_int(h.get("at")),
            expires_ms=_int(h.get("exp")),
            done_ms=_int(done) if done else None,
            restored=_int(h.get("restored")),
            present=_int(h.get("present")),
            gone=_int(h.get("gone")),
            taken=_int(h.get("taken")),
            recreated=h.get("recreated") == "1",
        )

    @operation
    def undo(self, token: str) -> Op[Restored]:
        """Put back what the stash keeps, in bounded chunks (see the module's text)."""
        z, m, record = self._undo_keys(token)
        head = yield Command(("HMGET", record, "q", "d"))
        if head[0] is None:
            raise UndoNotFound(token)
        qname = _str(head[0])
        qz, qh = self._queue_keys(qname)
        if head[1] is not None:  # a purge whose bodies were not all moved yet
            while (yield Call(S.UNDO_DRAIN, (z, m, record, qh), (UNDO_CHUNK,))) == UNDO_CHUNK:
                pass
        keys = (z, m, record, qz, qh, self.queues_key)
        args = (self._prefix, qname, UNDO_CHUNK, FAILURES_SUFFIX)
        restored = 0
        skipped: dict[str, list[str]] = {"present": [], "gone": [], "taken": [], "foreign": []}
        counts = dict.fromkeys(skipped, 0)
        while True:
            try:
                reply = yield Call(S.UNDO_RESTORE, keys, args, qname)
            except InvalidArgument:  # it expired since the first read
                raise UndoNotFound(token) from None
            status = _str(reply[0])
            restored += int(reply[1])
            for name, ids in zip(skipped, reply[2:6], strict=True):
                counts[name] += len(ids)
                room = UNDO_SKIPPED_IDS - len(skipped[name])
                skipped[name] += [_str(i) for i in ids[:room]]
            if status != "more":
                break
        info = yield from self._undo_info(token)
        return Restored(
            token=token,
            restored=restored,
            present=counts["present"],
            gone=counts["gone"],
            taken=counts["taken"],
            present_ids=tuple(skipped["present"]),
            gone_ids=tuple(skipped["gone"]),
            taken_ids=tuple(skipped["taken"]),
            foreign=counts["foreign"],
            foreign_ids=tuple(skipped["foreign"]),
            already=status == "done",
            whole_queue=status == "queue",
            recreated=bool(info and info.recreated),
            missing=status == "missing",
        )

    @operation
    def undo_estimate(self, qname: str, ids: Iterable[str] | None = None) -> Op[int]:
        """The bytes a stash of ``ids`` (their bodies and a little for each) would hold,
        or — without ids — of the whole queue (exact up to ``UNDO_SAMPLE`` messages,
        past that estimated from that many evenly spaced ones: one short call whatever
        the size). Read before an action, so its confirmation can say when it would be
        past the console's bound."""
        z, h = self._queue_keys(qname)
        if ids is None:
            whole: int = yield Call(S.UNDO_SIZE, (h, z), (UNDO_MESSAGE_BYTES, UNDO_SAMPLE))
            return whole
        checked = list(ids)
        if not all(isinstance(i, (str, bytes)) for i in checked):
            raise InvalidArgument("ids", "ids must be strings")
        total = 0
        for k in range(0, len(checked), CHUNK):
            part = checked[k : k + CHUNK]
            total += yield Call(S.UNDO_SIZE, (h, z), (UNDO_MESSAGE_BYTES, 0, *part))
        return total
