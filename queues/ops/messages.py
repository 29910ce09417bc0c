"""Messages: send, receive, pop, visibility, delete, requeue, purge, move."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Call, Command, Op, operation
from ..errors import InvalidArgument, MessageGone, MessageNotString, QueueNotFound
from ..ids import random_suffixes
from ..limits import (
    CHUNK,
    FAILURES_SUFFIX,
    FETCH_BATCH_BYTES,
    MOVE_CHUNK,
    UNDO_CHUNK,
)
from ..models import (
    CHECKED_ACTIONS,
    Acted,
    ImportRecord,
    Message,
    Receipt,
)
from ..parse import (
    _epoch_ms,
    _message,
    _str,
)
from .base import R
from .stats import Stats


class Messages(Stats[R]):
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

    @operation
    def import_messages(
        self, qname: str, records: Iterable[ImportRecord], keep_ids: bool = False
    ) -> Op[list[str | None]]:
        """Write exported messages back, in one atomic round trip: each visible after its
        ``delay_ms``; under a new id (a new message: rc 0), or with ``keep_ids`` under its
        own id with its rc and fr — skipped (None) when that id is already in the queue.
        One body over the queue's maxsize and nothing is written. Returns each record's
        id, or None where it was skipped. ``queues.transfer`` reads and writes files."""
        keys = self._queue_keys(qname)
        batch = list(records)
        if len(batch) > v.MAX_SEND_BATCH:
            raise InvalidArgument(
                "records", f"records: at most {v.MAX_SEND_BATCH} per batch, not {len(batch)}"
            )
        args: list[str | bytes | int] = ["1" if keep_ids else "", self._channel(qname)]
        args.append(random_suffixes(len(batch)))
        for r in batch:
            if keep_ids and not r.id:
                raise InvalidArgument("id", "keeping ids needs every record's id")
            delay = v.integer("delay_ms", r.delay_ms, 0, v.MAX_SECONDS * 1000)
            if keep_ids:
                fr = "" if r.fr is None else r.fr
                args += [r.id or "", v.body(r.body), delay, r.rc, fr]
            else:
                args += ["", v.body(r.body), delay, 0, ""]
        ids = yield Call(S.IMPORT, keys, tuple(args), qname)
        return [_str(i) or None for i in ids]

    @operation
    def resend_message(
        self,
        qname: str,
        id: str,
        message: str | bytes,
        to: str | None = None,
        delete_original: bool = False,
        delay: int | None = None,
    ) -> Op[str]:
        """Edit and re-send: ``message`` (the edited body) goes to queue ``to`` (default:
        this one, the same namespace) as a new message — a new id, rc 0, ``to``'s delay
        and maxsize — and with ``delete_original`` message ``id`` is deleted in the same
        atomic step: both or neither. An original to delete that is gone meanwhile raises
        MessageGone and nothing is sent. Returns the new message's id."""
        src = self._with_failures(qname)
        target = qname if to is None else to
        dst = self._queue_keys(target) if to is None else self._queue_keys(v.qname(to, "to"))
        body = v.body(message)
        d = "" if delay is None else v.seconds("delay", delay)
        args = (
            v.message_id(id),
            "1" if delete_original else "",
            d,
            self._channel(target),
            random_suffixes(),
            body,
        )
        new = yield Call(S.RESEND, (*src, *dst), args, (qname, target))
        if new == 0:
            raise MessageGone(qname, id)
        return _str(new)

    def _receive(
        self, qname: str, n: int, vt: int | None, pop: bool = False, hint: bool = False
    ) -> Op[list[Any]]:
        """receive.lua's flat reply; with ``hint`` its last item says why the queue's flow
        flag (queues/ops/flow.py) held it back ("" if it did not)."""
        keys = self._receive_keys(qname)
        t = "" if vt is None else v.seconds("vt", vt)
        args = (n, t, self._prefix, qname, "pop" if pop else "", FAILURES_SUFFIX,
                "hint" if hint else "")  # fmt: skip
        r: list[Any] = yield Call(S.RECEIVE, keys, args, qname)
        # Bodies the script left unread (long, or past its byte room: their size, an
        # int, in their place): plain HGETs, small ones together (the messages are in
        # flight, so they stay; one deleted meanwhile reads as an empty body).
        unread = [i for i in range(1, len(r), 4) if isinstance(r[i], int)]
        k = 0
        while k < len(unread):
            batch, size = [unread[k]], r[unread[k]]
            while k + len(batch) < len(unread):
                more = r[unread[k + len(batch)]]
                if size + more > FETCH_BATCH_BYTES:
                    break
                size += more
                batch.append(unread[k + len(batch)])
            got = yield Command(("HMGET", keys[1], *[r[i - 1] for i in batch]))
            for i, body in zip(batch, got, strict=True):
                r[i] = body if body is not None else b""
            k += len(batch)
        return r

    @operation
    def receive_message(self, qname: str, vt: int | None = None) -> Op[Message | None]:
        r = yield from self._receive(qname, 1, vt)
        return _message(r, 0) if r else None

    @operation
    def receive_messages(self, qname: str, n: int, vt: int | None = None) -> Op[list[Message]]:
        """Receive up to n visible messages, FIFO, in one atomic script call (long bodies
        are then read with plain HGETs: no call copies more than MOVE_BYTES of them)."""
        v.integer("n", n, 1, v.MAX_BATCH)
        r = yield from self._receive(qname, n, vt)
        return [_message(r, i) for i in range(0, len(r), 4)]

    @operation
    def receive_flow(self, qname: str, n: int, vt: int | None = None) -> Op[Receipt]:
        """``receive_messages``, saying whether the queue's flow flag held it back: a
        ``Receipt`` with the messages, ``held`` ("paused", "throttled" or "") and, when
        throttled, ``wait``: the seconds until the next receive may get one (how the
        worker paces its polls: queues/worker.py)."""
        v.integer("n", n, 1, v.MAX_BATCH)
        r = yield from self._receive(qname, n, vt, hint=True)
        why = _str(r.pop()) if r else ""
        held, _, wait = why.partition(" ")
        messages = [_message(r, i) for i in range(0, len(r), 4)]
        return Receipt(messages, held, int(wait) / 1000 if wait else 0.0)

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
    def delete_message(self, qname: str, id: str, keep: str | None = None) -> Op[bool]:
        """``keep``: an undo token (``open_undo``) that keeps what is deleted."""
        keys = (*self._with_failures(qname), *self._kept(keep))
        deleted: int = yield Call(S.DELETE, keys, (v.message_id(id),), qname)
        return deleted == 1

    @operation
    def delete_members(
        self, qname: str, members: Iterable[bytes | str], keep: str | None = None
    ) -> Op[int]:
        """Delete messages by their exact zset member, RSMQ id or not: how a message some
        other client wrote under an id no RSMQ client would (``MessageInfo.member``, as
        browsing lists it) is deleted. Returns how many were in the queue. ``keep``: an
        undo token (``open_undo``) that keeps what is deleted."""
        keys = (*self._with_failures(qname), *self._kept(keep))
        checked = list(members)
        if not all(isinstance(m, (bytes, str)) for m in checked):
            raise InvalidArgument("members", "members must be strings or bytes")
        if not checked:
            return 0
        deleted: int = yield Call(S.DELETE_MEMBERS, keys, checked, qname)
        return deleted

    @operation
    def delete_messages(self, qname: str, ids: Iterable[str], keep: str | None = None) -> Op[int]:
        """Delete many in one atomic round trip; returns how many were in the queue.
        ``keep``: an undo token (``open_undo``) that keeps what is deleted."""
        keys = (*self._with_failures(qname), *self._kept(keep))
        checked = [v.message_id(i) for i in ids]
        deleted: int = yield Call(S.DELETE, keys, checked, qname)
        return deleted

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
    def delete_state(self, qname: str, state: str, keep: str | None = None) -> Op[int]:
        """Delete every message in a state, in chunks; returns how many were deleted.
        ``keep``: an undo token (``open_undo``) that keeps what is deleted."""
        return (yield from self._bulk(qname, "delete", v.state(state), keep))

    def _bulk(self, qname: str, action: str, state: str, keep: str | None = None) -> Op[int]:
        keys = (*self._with_failures(qname), *self._kept(keep))
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
    def purge_queue(self, qname: str, keep: str | None = None) -> Op[int]:
        """Delete every message, keeping the queue's attributes and totals.

        The messages leave the queue at once; their bodies are then deleted in chunks of
        ``CHUNK``, so Redis is never held for more than a few milliseconds at a time.
        Returns how many messages were purged. ``keep``: an undo token (``open_undo``):
        the queue's zset becomes the stash's at once and the bodies move into it in
        chunks instead (queues/ops/undo.py).
        """
        z, h, f = self._with_failures(qname)
        purge_key = self._purge_key(qname)
        kept = self._kept(keep)
        while True:
            n: int = yield Call(S.PURGE_DETACH, (z, h, purge_key, f, *kept), (), qname)
            if n >= 0:
                break
            yield from self._drain(purge_key, h)  # an interrupted purge left some
        if kept:
            yield from self._drain_kept(kept, h)
        else:
            yield from self._drain(purge_key, h)
        return n

    def _drain_kept(self, kept: tuple[str, ...], hkey: str) -> Op[None]:
        while (yield Call(S.UNDO_DRAIN, (*kept, hkey), (UNDO_CHUNK,))) == UNDO_CHUNK:
            pass

    def _drain(self, purge_key: str, hkey: str) -> Op[None]:
        while (yield Call(S.PURGE_DRAIN, (purge_key, hkey), (CHUNK,))) == CHUNK:
            pass

    @operation
    def act_checked(
        self,
        qname: str,
        action: str,
        seen: Iterable[tuple[str | bytes, int]],
        to: str | None = None,
        vt: int | None = None,
        keep_counts: bool = False,
        keep: str | None = None,
    ) -> Op[Acted]:
        """Act on messages as they were read: pairs of (id, its ``visible_at`` when read,
        as browsing gives them). A message no longer in the queue with that score (a
        consumer received it, someone changed it since) is left alone and counted as
        changed. Actions: ``delete``, ``requeue`` (visible now), ``visibility`` (``vt``
        seconds from now), ``move`` (to ``to``), ``redrive`` (each to the queue it was
        dead-lettered from, or to ``to``); moved messages start over with a fresh receive
        count unless ``keep_counts``. At most ``v.MAX_BATCH`` pairs a call; a move stops
        early past MOVE_BYTES of bodies (``Acted.looked`` says how far it got). ``keep``:
        an undo token (``open_undo``; a move's with ``to=``) that keeps each message a
        delete, move or redrive removes, as it was, in the same call."""
        if action not in CHECKED_ACTIONS:
            raise InvalidArgument("action", f"action must be one of {', '.join(CHECKED_ACTIONS)}")
        src = self._with_failures(qname)
        pairs = list(seen)
        if len(pairs) > v.MAX_BATCH:
            raise InvalidArgument("ids", f"ids: at most {v.MAX_BATCH} per call, not {len(pairs)}")
        param = ""
        dst = src
        if action == "visibility":
            param = str(v.seconds("vt", vt))
        elif action in ("move", "redrive"):
            param = "1" if keep_counts else ""
            if action == "move" and to is None:
                raise InvalidArgument("to", "to: the queue to move the messages to")
            if to is not None:
                if to == qname:
                    raise InvalidArgument("to", "to must be a different queue from the source")
                action = "move"
                dst = self._with_failures(v.qname(to, "to"))
        args: list[str | bytes | int] = [action, param, self._prefix, FAILURES_SUFFIX]
        for mid, score in pairs:
            if not isinstance(mid, (str, bytes)):
                raise InvalidArgument("ids", "ids must be strings or bytes")
            args += [mid, v.integer("visible_at", score, -(2**53), 2**53)]
        if not pairs:
            return Acted(0, 0, 0, 0, [])
        if keep is not None and action not in ("delete", "move", "redrive"):
            raise InvalidArgument("keep", f"keep: {action} removes nothing to keep")
        keys = (*src, *dst, *self._kept(keep))
        r: list[Any] = yield Call(S.ACT_CHECKED, keys, args, (qname, to or qname))
        return Acted(r[0], r[1], r[2], r[3], [_str(i) for i in r[5:]])

    @operation
    def count_present(self, qname: str, ids: Iterable[str]) -> Op[int]:
        """How many of ``ids`` are in the queue now (at most ``v.MAX_BATCH`` a call)."""
        z, _ = self._queue_keys(qname)
        checked = list(ids)
        if len(checked) > v.MAX_BATCH:
            raise InvalidArgument("ids", f"ids: at most {v.MAX_BATCH} per call, not {len(checked)}")
        if not checked:
            return 0
        n: int = yield Call(S.COUNT_PRESENT, (z,), checked, qname)
        return n

    @operation
    def move_messages(
        self,
        src: str,
        dst: str,
        ids: Iterable[str] | None = None,
        keep_counts: bool = False,
        keep: str | None = None,
    ) -> Op[int]:
        """Move messages (default: all) to another queue, visible there at once.

        Each keeps its id and body and starts over with a fresh receive count (rc and fr
        dropped: a message moved back from a dead-letter queue would otherwise go straight
        back on its next receive), or keeps them with ``keep_counts``; no queue's totals
        change. Moving all goes in
        chunks of ``MOVE_CHUNK``; a message larger than ``dst``'s maxsize stays in ``src``.
        Returns how many were moved. ``keep``: an undo token (``open_undo(..., to=dst)``)
        that keeps each moved message as it was in ``src``.
        """
        src_keys = self._queue_keys(src)
        dst_keys = self._queue_keys(dst)
        if src == dst:
            raise InvalidArgument("dst", "dst must be a different queue from src")
        keys = (
            *src_keys, *dst_keys, self._failures_key(src), self._failures_key(dst),
            *self._kept(keep),
        )  # fmt: skip
        counts = "1" if keep_counts else ""
        if ids is not None:
            checked = [v.message_id(i) for i in ids]
            if not checked:
                return 0
            m: int
            total = 0
            while checked:  # MOVE_CHUNK ids a call; one stops early past MOVE_BYTES of
                # bodies: the rest again
                part = checked[:MOVE_CHUNK]
                m, _, looked, stopped = yield Call(
                    S.MOVE, keys, (0, MOVE_CHUNK, counts, *part), (src, dst)
                )
                total += m
                checked = checked[looked if stopped else len(part) :]
            return total
        moved = skipped = 0
        while True:
            m, s, _, stopped = yield Call(S.MOVE, keys, (skipped, MOVE_CHUNK, counts), (src, dst))
            moved += m
            skipped += s
            if m + s < MOVE_CHUNK and not stopped:
                return moved
