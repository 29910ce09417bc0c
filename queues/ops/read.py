"""Reading messages without changing them: browse (the one read path), the census's
rank ranges, one message."""

from __future__ import annotations

import math
import time
from typing import Any, NamedTuple

from .. import fields as F
from .. import scripts as S
from .. import validation as v
from ..driver import Call, Command, Op, operation
from ..errors import InvalidArgument
from ..limits import (
    BROWSE_BUDGET,
    BROWSE_BYTES,
    BROWSE_CLIENT_BYTES,
    BROWSE_FETCH_BYTES,
    BROWSE_FIELD_BYTES,
    BROWSE_FIELD_STEP,
    BROWSE_ROW_BYTES,
    BROWSE_STEP,
    CENSUS_BYTES,
    CENSUS_MESSAGE_BYTES,
    DEFAULT_SCAN_BUDGET,
    FAILURE_TYPE_MAX,
    FETCH_BATCH_BYTES,
    LUA_NEEDLE_MAX,
    MAX_AGE,
    MAX_CENSUS_COUNT,
)
from ..models import (
    Browse,
    Cursor,
    MessageInfo,
    Page,
    Slice,
)
from ..parse import (
    _cut_bytes,
    _decode,
    _info,
    _member,
    _score,
    _sent,
    _str,
    _text,
)
from .base import Base, R


class Failed(NamedTuple):
    """browse's failure filter: the last recorded failure's type (exactly), a text in its
    error line, its attempt at least ("", "", 0: none)."""

    error: str = ""
    error_text: str = ""
    min_attempt: int = 0

    @property
    def any(self) -> bool:
        return bool(self.error or self.error_text or self.min_attempt)


NO_FAILURE = Failed()


class Read(Base[R]):
    # -- the one read path ------------------------------------------------------------
    # Every read of a queue's messages (the console's browser, the API, the CLI, the
    # tests) goes through browse.lua, called by _browse(); list_messages() is a page of
    # it in SPEC §4's shape. Which messages match (a state, min_rc, a text in the body)
    # is decided in one place: _filters() here, and matches() in browse.lua.

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
        Read through browse's script: all / visible / hidden from the ``offset``-th
        message of the state; in flight / delayed in its steps over the hidden messages.
        """
        self._queue_keys(qname)
        v.state(state)
        v.integer("offset", offset, 0, 2**53)
        v.integer("limit", limit, 1, v.MAX_PAGE)
        v.integer("preview", preview, 0, 2**31)
        v.integer("scan_budget", scan_budget, 1, 10**9)
        if state in ("inflight", "delayed"):
            return (
                yield from self._counted_page(qname, state, offset, limit, preview, scan_budget)
            )
        # A rank range: at most limit / step + 1 calls, so no time budget is needed.
        b = yield from self._browse(qname, state, rank=offset, limit=limit, preview=preview,
                                    budget=math.inf)  # fmt: skip
        return Page(b.items, b.state_size, offset, limit, exact=True, now=b.now)

    def _counted_page(
        self, qname: str, state: str, offset: int, limit: int, preview: int, scan_budget: int
    ) -> Op[Page]:
        """In flight / delayed: browse.lua's steps over the hidden messages, up to
        ``scan_budget`` of them, counting every match (rows only for the page's); past
        the budget the total is an estimate."""
        keys = self._queue_keys(qname)
        items: list[MessageInfo] = []
        matched = looked = 0
        score, member = "", b""
        now: int | None = None
        fetch = [BROWSE_FETCH_BYTES, 0]
        while True:
            skip = max(0, offset - matched)
            rows = max(0, offset + limit - matched - skip)
            step = min(BROWSE_STEP, scan_budget - looked)
            r: list[Any] = yield self._browse_call(
                keys, qname, state, "next", score, member, rows, preview, step, skip=skip,
                counting=True,
            )  # fmt: skip
            now = r[0] if now is None else now
            looked += r[1]
            matched += r[9]
            got, _, _ = yield from self._fill(keys[1], r[10:], "", preview, fetch)
            items += [_info(got[i : i + 6], now) for i in range(0, len(got), 6)]
            if r[2] == 1 or looked >= scan_budget or not r[1]:
                break
            score, member = _str(r[3]), _member(r[4])
        hidden = max(0, r[6] - r[5] + 1)
        exact = looked >= hidden
        total = matched
        if not exact and looked:
            total = max(matched, math.floor(matched * hidden / looked + 0.5))
        return Page(items, total, offset, limit, exact=exact, now=now)

    @staticmethod
    def _browse_call(
        keys: tuple[str, ...],
        qname: str,
        state: str,
        direction: str,
        score: str,
        member: bytes,
        limit: int,
        preview: int,
        step: int,
        min_rc: int = 0,
        contains: str = "",
        skip: int = 0,
        counting: bool = False,
        where: F.Where = F.NOTHING,
        older_than: int = 0,
        younger_than: int = 0,
        failed: Failed = NO_FAILURE,
    ) -> Call:
        """One call of browse.lua (its arguments in its order); ``keys`` with the failure
        key third when ``failed`` filters."""
        if where:
            step = min(step, BROWSE_FIELD_STEP)
        body_bytes = BROWSE_FIELD_BYTES if where else BROWSE_BYTES
        args = (state, direction, score, member, limit, preview, step, min_rc, contains,
                body_bytes, skip, "1" if counting else "", LUA_NEEDLE_MAX,
                BROWSE_CLIENT_BYTES, BROWSE_ROW_BYTES, where.lua_arg(), older_than * 1000,
                younger_than * 1000, *failed)  # fmt: skip
        return Call(S.BROWSE, keys, args, qname)

    @staticmethod
    def _fill(
        qkey: str,
        rows: list[Any],
        contains: str,
        preview: int,
        fetch: list[int],
        where: F.Where = F.NOTHING,
    ) -> Op[tuple[list[Any], bool, tuple[Any, Any] | None]]:
        """browse.lua's rows (6 values each) with the bodies it left unread (false: too
        long to read in Lua, or a needle it does not search) read here: one plain HGET a
        body (a few small ones in one HMGET), never a script reading it. With
        ``contains`` such a row is a candidate: searched here (Python's ``in``, linear in
        the body) and dropped if the text is not in it. ``fetch`` is the request's byte
        budget ([bytes left, bodies read]): once spent (after one body at least) a search
        stops before the first unread candidate — returns the rows kept, True and the
        (score, member) of the last row it decided, if any — and a listing's row keeps a
        None body (``_info`` says it was not read). A field filter (``where``) is read
        from such a body here the same way (queues/fields.py: browse.lua's rules)."""
        rows = list(rows)
        unread = [i for i in range(0, len(rows), 6) if rows[i + 3] is None]
        needle = contains.encode("utf-8", "surrogateescape") if contains else b""
        k = 0
        done: tuple[Any, Any] | None = None
        dropped: set[int] = set()
        while k < len(unread):
            # a batch: one body alone, or small ones together up to FETCH_BATCH_BYTES
            batch, size = [unread[k]], int(rows[unread[k] + 2])
            while k + len(batch) < len(unread):
                more = int(rows[unread[k + len(batch)] + 2])
                if size + more > FETCH_BATCH_BYTES:
                    break
                size += more
                batch.append(unread[k + len(batch)])
            if fetch[1] and size > fetch[0]:
                if needle or where:
                    if unread[k]:
                        done = (rows[unread[k] - 5], rows[unread[k] - 6])
                    kept = [rows[i : i + 6] for i in range(0, unread[k], 6) if i not in dropped]
                    return [x for row in kept for x in row], True, done
                break  # a listing: the rows left keep a None body
            fields = [rows[i] for i in batch]
            if len(batch) == 1:
                got = [(yield Command(("HGET", qkey, fields[0])))]
            else:
                got = list((yield Command(("HMGET", qkey, *fields))))
            fetch[0] -= size
            fetch[1] += len(batch)
            for i, body in zip(batch, got, strict=True):
                done = (rows[i + 1], rows[i])
                body = body if body is not None else b""  # deleted since: an empty body
                if isinstance(body, str):
                    body = body.encode("utf-8", "surrogateescape")
                if (needle and needle not in body) or (where and not where.matches(body)):
                    dropped.add(i)  # not a match
                else:
                    rows[i + 3] = _cut_bytes(body, preview)
            k += len(batch)
        kept = [rows[i : i + 6] for i in range(0, len(rows), 6) if i not in dropped]
        return [x for row in kept for x in row], False, done

    @staticmethod
    def _filters(
        min_rc: int, contains: str, where: str = "", older_than: int = 0, younger_than: int = 0
    ) -> tuple[int, str, F.Where, int, int]:
        """The filters a read may apply beyond its state, validated, in browse.lua's
        argument order (see its matches()): ``where`` parsed (queues/fields.py; a bad
        one refused with its position), ages in whole seconds since sent (0: any)."""
        v.integer("min_rc", min_rc, 0, 2**31)
        if not isinstance(contains, str):
            raise InvalidArgument("contains", "contains must be a string")
        parsed = F.parse(where)
        v.integer("older_than", older_than, 0, MAX_AGE)
        v.integer("younger_than", younger_than, 0, MAX_AGE)
        return min_rc, contains, parsed, older_than, younger_than

    @staticmethod
    def _failed(error: str, error_text: str, min_attempt: int) -> Failed:
        """The failure filter (the last recorded failure's type, exactly; a text in its
        error line; its attempt at least), validated, in browse.lua's argument order."""
        for name, value, most in (("error", error, FAILURE_TYPE_MAX),
                                  ("error_text", error_text, LUA_NEEDLE_MAX)):  # fmt: skip
            if not isinstance(value, str):
                raise InvalidArgument(name, f"{name} must be a string")
            if len(value) > most:
                raise InvalidArgument(name, f"{name} must be at most {most} characters")
        v.integer("min_attempt", min_attempt, 0, 2**31)
        return Failed(error, error_text, min_attempt)

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
        where: str = "",
        older_than: int = 0,
        younger_than: int = 0,
        error: str = "",
        error_text: str = "",
        min_attempt: int = 0,
    ) -> Op[Browse]:
        """A keyset page of a state over (score, member), the queue's order, optionally
        only messages received at least ``min_rc`` times and/or whose body contains a text
        and/or whose JSON body's fields match ``where`` (queues/fields.py: ``amount > 100
        and status in (failed, retry)``) and/or sent at least ``older_than`` / less than
        ``younger_than`` seconds ago (by the server's clock) and/or whose last recorded
        failure (``record_failure``) is of type ``error`` (exactly), says ``error_text``
        in its error line, or came at attempt ``min_attempt`` or later.

        From the state's start, or ``after`` a cursor, or backwards ``before`` one (a
        ``Cursor`` with an empty score: from the end), or from the ``rank``-th message of
        an unfiltered state. Each script call looks at ``step`` messages at most (a few
        ms of Redis); calls go on until the page is full, the state ends or ``budget``
        seconds are spent (``patience`` seconds more while nothing was found), and
        ``Browse.resume`` says where to go on. Read-only.
        """
        self._queue_keys(qname)
        v.state(state)
        v.integer("limit", limit, 1, v.MAX_PAGE)
        v.integer("preview", preview, 0, 2**31)
        v.integer("step", step, 1, 10_000)
        min_rc, contains, parsed, older_than, younger_than = self._filters(
            min_rc, contains, where, older_than, younger_than
        )
        failed = self._failed(error, error_text, min_attempt)
        narrowed = bool(min_rc or contains or parsed or older_than or younger_than or failed.any)
        if sum(x is not None for x in (after, before, rank)) > 1:
            raise InvalidArgument("cursor", "after, before and rank exclude each other")
        if rank is not None:
            v.integer("rank", rank, 0, 2**53)
            if narrowed or state in ("inflight", "delayed"):
                raise InvalidArgument("rank", "a rank is a place in all / visible / hidden")
        return (yield from self._browse(qname, state, after, before, rank, limit, preview,
                                        min_rc, contains, budget, step, patience, parsed,
                                        older_than, younger_than, failed))  # fmt: skip

    def _browse(
        self,
        qname: str,
        state: str,
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
        where: F.Where = F.NOTHING,
        older_than: int = 0,
        younger_than: int = 0,
        failed: Failed = NO_FAILURE,
    ) -> Op[Browse]:
        """browse() with its arguments checked: the loop of browse.lua calls."""
        keys: tuple[str, ...] = (
            self._with_failures(qname) if failed.any else self._queue_keys(qname)
        )
        narrowed = bool(min_rc or contains or where or older_than or younger_than or failed.any)
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
        fetch = [BROWSE_FETCH_BYTES, 0]
        while True:
            # one more than the page: whether anything follows it is then known
            r: list[Any] = yield self._browse_call(
                keys, qname, state, direction, score, member, limit + 1 - len(found) // 6,
                preview, step, min_rc, contains, where=where, older_than=older_than,
                younger_than=younger_than, failed=failed,
            )  # fmt: skip
            calls += 1
            now, at_end, first, last = r[0], r[2] == 1, r[5], r[6]
            looked += r[1]
            rows, stopped, done = yield from self._fill(
                keys[1], r[10:], contains, preview, fetch, where
            )
            found += rows  # in the order met: backwards for "prev", reversed below
            if rows and direction == "prev":
                position = r[8] - first
            elif rows and position is None:
                position = r[7] - first
            if stopped:
                # the request's byte budget ran out before a candidate: go on after the
                # last row decided (or from where this call began)
                if done is not None:
                    score, member = _str(done[0]), _member(done[1])
                at_end = False
                break
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
            position=None if narrowed or state in ("inflight", "delayed") else position,
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
        if body:  # bodies longer than the script reads: one plain HGET each
            for i in range(5, len(rows), stride):
                if rows[i] is None:
                    got = yield Command(("HGET", keys[1], rows[i - 5]))
                    rows[i] = got if got is not None else b""
        ids = [_text(i) for i in rows[0::stride]]
        return Slice(
            read_at=read_at,
            ids=ids,
            # None: an id with no time in it (go-rsmq's); 0: a score that is no time
            sent=[None if (t := _sent(i)) is None else int(t) for i in ids],
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
        return (yield from self._whole(keys[1], id, r))

    @staticmethod
    def _whole(qkey: str, id: str | bytes, r: list[Any]) -> Op[MessageInfo]:
        """get_message.lua's reply as a MessageInfo, its body read with one HGET when the
        script left it unread (longer than it reads)."""
        row = [id, *r[1:]]
        if row[3] is None:
            body = yield Command(("HGET", qkey, id))
            row[3] = body if body is not None else b""
        return _info(row, r[0])
