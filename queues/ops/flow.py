"""Flow and time: pause, throttle and resume a queue's consumers; when its delayed
messages come due; rescheduling them.

**The flow flag.** A queue's flag is a hash beside the RSMQ layout,
``{ns}:{qname}:x:flow`` (base.py): ``paused``, or ``throttled`` to ``rate`` receives a
second across every consumer. This project's receive script (receive.lua: every
receive, receive_messages and pop of both clients, ``rsmq worker``, the console's API
and its fast path) reads it in the same call that would hand messages out: paused, it
hands none; throttled, a token bucket in the flag (refilled by the server's ``TIME``,
a second's worth at most) lets ``rate`` a second through, whoever asks. Node rsmq and
the other ports never read it: their receives go on, and show as ``Flow.bypassed``
(the queue's ``totalrecv`` moving past what the flag let through). A flag set ``for``
a while expires with its key: the queue resumes by itself. The namespace's flagged
queues are listed in ``{ns}:@flow`` (their flags in brief) for the overview and triage.

**What is coming due.** ``due``: a queue's hidden messages counted by when they become
visible, a scale's buckets ahead (minutes, hours, days), and the peak five minutes
inside the busiest one — a few dozen ZCOUNTs, O(log n) each, in one call.

**Rescheduling.** ``reschedule``: delayed messages (hidden, never received) given new
scores, each only if it is still as it was read (queues/pacing.py walks a window's
matches: deliver now, shift, spread); with ``keep=`` an undo stash keeps each one's
score before, and ``undo`` puts it back exactly while the message still has the score it
was given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from .. import scripts as S
from .. import validation as v
from ..driver import Batch, Call, Op, operation
from ..errors import InvalidArgument
from ..limits import (
    DEFAULT_SAMPLE,
    DUE_CHUNK,
    DUE_PEAK,
    DUE_PEAK_HOURS,
    DUE_SCALES,
    FLOW_BY_MAX,
    FLOW_RATE_MAX,
    FLOW_RATE_MIN,
    FLOW_REASON_MAX,
    FLOW_SECONDS_MAX,
)
from ..models import Acted, Due, DueBucket, DuePeak, Flagged, Flow, FlowView, QueueStats
from ..parse import NOT_A_QUEUE, _pairs, _str, _text
from .base import R
from .stats import Stats
from .workers import Workers, _workers

#: how a day's busiest bucket is cut on the way to its peak: into hours first
_CUTS = {"day": (3_600_000,), "hour": (), "minute": ()}


class FlowOps(Stats[R], Workers[R]):
    # -- the flag ------------------------------------------------------------------

    @operation
    def pause_queue(
        self, qname: str, reason: str = "", by: str = "", seconds: float | None = None
    ) -> Op[Flow]:
        """Pause the queue's consumers (those that honour the flag: see the module's
        text) until ``resume_queue``, or for ``seconds``. Replaces any flag it had."""
        return (yield from self._set_flow(qname, "paused", None, reason, by, seconds))

    @operation
    def throttle_queue(
        self,
        qname: str,
        rate: float,
        reason: str = "",
        by: str = "",
        seconds: float | None = None,
    ) -> Op[Flow]:
        """Let at most ``rate`` receives a second through, across all the consumers that
        honour the flag, until ``resume_queue`` or for ``seconds``."""
        if (
            isinstance(rate, bool)
            or not isinstance(rate, (int, float))
            or not FLOW_RATE_MIN <= rate <= FLOW_RATE_MAX
        ):
            raise InvalidArgument(
                "rate", f"rate must be between {FLOW_RATE_MIN} and {FLOW_RATE_MAX} a second"
            )
        return (yield from self._set_flow(qname, "throttled", rate, reason, by, seconds))

    def _set_flow(
        self,
        qname: str,
        state: str,
        rate: float | None,
        reason: str,
        by: str,
        seconds: float | None,
    ) -> Op[Flow]:
        z, h = self._queue_keys(qname)
        for name, text, most in (("reason", reason, FLOW_REASON_MAX), ("by", by, FLOW_BY_MAX)):
            if not isinstance(text, str) or len(text) > most:
                raise InvalidArgument(name, f"{name} must be text of at most {most} characters")
        ms = ""
        if seconds is not None:
            if (
                isinstance(seconds, bool)
                or not isinstance(seconds, (int, float))
                or not 0 < seconds <= FLOW_SECONDS_MAX
            ):
                raise InvalidArgument(
                    "seconds", f"for: more than 0 s, at most {FLOW_SECONDS_MAX} s (30 days)"
                )
            ms = str(math.ceil(seconds * 1000))
        keys = (self._flow_key(qname), h, self._flow_index_key)
        args = (qname, state, "" if rate is None else f"{rate:g}", reason, by, ms)
        reply = yield Call(S.FLOW_SET, keys, args, qname)
        flow = _flow(qname, reply)
        assert flow is not None
        return flow

    @operation
    def resume_queue(self, qname: str) -> Op[Flow | None]:
        """Take the queue's flag away: its consumers receive as usual. Returns the flag it
        had (None: it had none, or it had expired)."""
        h = self._queue_keys(qname)[1]
        keys = (self._flow_key(qname), h, self._flow_index_key)
        return _flow(qname, (yield Call(S.FLOW_CLEAR, keys, (qname,), qname)))

    @operation
    def queue_flow(self, qname: str) -> Op[Flow | None]:
        """The queue's flag now, with its counts (None: it runs freely)."""
        return _flow(qname, (yield self._flow_call(qname)))

    def _flow_call(self, qname: str) -> Call:
        h = self._queue_keys(qname)[1]
        return Call(S.FLOW_READ, (self._flow_key(qname), h), (), qname)

    @operation
    def flows(self) -> Op[dict[str, Flow]]:
        """The namespace's flagged queues and their flags, in brief (no counts), from its
        flow index: one command whatever the namespace's size."""
        now, flat, _ = yield Call(S.FLOW_INDEX, (self._flow_index_key,), ())
        return _index(flat, int(now))

    @operation
    def flow_view(self, qname: str, scale: str = "hour") -> Op[FlowView]:
        """What the queue page shows of its flow, in one pipelined round trip: its flag
        (with its counts), the live workers that handle it, and what is coming due."""
        calls = [self._workers_call(), self._flow_call(qname), self._due_call(qname, scale)]
        workers, flag, due = yield Batch(calls)
        return FlowView(_flow(qname, flag), _workers(workers, qname), _dues([qname], scale, due)[0])

    @operation
    def queue_stats_flagged(
        self, qnames: Iterable[str], sample: int = DEFAULT_SAMPLE
    ) -> Op[Flagged]:
        """``queue_stats(qnames)``, and in the same pipelined round trip the namespace's
        flagged queues (``flows``) and the peaks the console's snapshot task last stored
        (``store_due_peaks``): what an overview page shows, in the round trip it takes
        anyway."""
        names = list(qnames)
        for q in names:
            if not isinstance(q, str):
                v.qname(q)  # raises: only text can be a listed name
        v.integer("sample", sample, 1, 100_000)
        calls, readable = self._stats_calls(names, sample)
        index = Call(S.FLOW_INDEX, (self._flow_index_key, self._due_index_key), ())
        *replies, flagged = yield Batch([*calls, index])
        stats = self._parse_stats(readable, replies) if calls else []
        if len(readable) != len(names):
            by_name = {s.qname: s for s in stats}
            now = int(flagged[0])
            stats = [
                by_name[n] if n in by_name else QueueStats.of_unreadable(n, NOT_A_QUEUE, now)
                for n in names
                if n in by_name or n not in readable
            ]
        now = int(flagged[0])
        return Flagged(stats, _index(flagged[1], now), _peaks(flagged[2]))

    @operation
    def store_due_peaks(self, peaks: Mapping[str, Due], keep: float) -> Op[int]:
        """Replace the namespace's due index with these queues' peaks (none: the queue
        has nothing due in its view), kept ``keep`` s unless stored again: what the
        console's snapshot task finds (dashboard/triage/due.py) and the overview reads
        (``queue_stats_flagged``). Returns how many it holds."""
        args: list[Any] = [max(1, round(keep * 1000))]
        for q, d in peaks.items():
            v.qname(q)
            if d.peak is not None:
                p = d.peak
                args += [q, f"{p.start} {p.end} {p.count} {d.now}"]
        n: int = yield Call(S.DUE_STORE, (self._due_index_key,), args)
        return n

    # -- what is coming due ----------------------------------------------------------

    @operation
    def due(self, qname: str, scale: str = "hour") -> Op[Due]:
        """When the queue's hidden messages become visible: ``scale`` ("minute": the
        next 60 minutes; "hour": 48 hours; "day": 30 days), and the peak (see ``Due``)."""
        z, _ = self._queue_keys(qname)
        call = _due_call([z], scale)
        return _dues([qname], scale, (yield call))[0]

    def _due_call(self, qname: str, scale: str) -> Call:
        return _due_call([self._queue_keys(qname)[0]], scale)

    @operation
    def due_peaks(self, qnames: Iterable[str]) -> Op[dict[str, Due]]:
        """Each queue's next DUE_PEAK_HOURS hours by the hour, and its peak, in one
        pipelined round trip (DUE_CHUNK queues a call): what the overview calls out."""
        names = list(qnames)
        keys = [self._queue_keys(q)[0] for q in names]
        if not names:
            return {}
        calls = [
            _due_call(keys[k : k + DUE_CHUNK], "hour", DUE_PEAK_HOURS)
            for k in range(0, len(keys), DUE_CHUNK)
        ]
        replies = yield Batch(calls)
        out: dict[str, Due] = {}
        for k, reply in zip(range(0, len(names), DUE_CHUNK), replies, strict=True):
            for d in _dues(names[k : k + DUE_CHUNK], "hour", reply):
                out[d.qname] = d
        return out

    # -- rescheduling ----------------------------------------------------------------

    @operation
    def reschedule(
        self,
        qname: str,
        moves: Iterable[tuple[str | bytes, int, int | None]],
        keep: str | None = None,
    ) -> Op[Acted]:
        """Give delayed messages new times: triples of (id, its ``visible_at`` when read,
        its new ``visible_at`` in epoch ms, None: now by the server's clock). A message
        no longer as it was read, or received meanwhile, is left alone and counted as
        changed. At most ``v.MAX_BATCH`` a call. ``keep``: an undo token (``open_undo``)
        that keeps each one's score before, in the same call (``undo`` puts it back)."""
        keys = (*self._queue_keys(qname), *self._kept(keep))
        triples = list(moves)
        if len(triples) > v.MAX_BATCH:
            raise InvalidArgument("ids", f"ids: at most {v.MAX_BATCH} per call, not {len(triples)}")
        args: list[str | bytes | int] = []
        for mid, seen, to in triples:
            if not isinstance(mid, (str, bytes)):
                raise InvalidArgument("ids", "ids must be strings or bytes")
            args += [mid, v.integer("visible_at", seen, -(2**53), 2**53)]
            args.append("" if to is None else v.integer("to", to, 0, 2**53))
        if not triples:
            return Acted(0, 0, 0, 0, [])
        r: list[Any] = yield Call(S.RESCHEDULE, keys, args, qname)
        return Acted(r[0], r[1], 0, len(triples), [_str(i) for i in r[2:]])


def _due_call(zsets: list[str], scale: str, count: int | None = None) -> Call:
    if scale not in DUE_SCALES:
        raise InvalidArgument("scale", f"scale must be one of {', '.join(DUE_SCALES)}")
    width, n = DUE_SCALES[scale]
    return Call(S.DUE, zsets, (width, count or n, DUE_PEAK, *_CUTS[scale]))


#: values of a queue's row in due.lua's reply before its buckets
_DUE_HEAD = 6


def _dues(names: list[str], scale: str, reply: list[Any]) -> list[Due]:
    now = int(reply[0])
    width = DUE_SCALES[scale][0]
    n = (len(reply) - 1) // len(names) - _DUE_HEAD
    out = []
    base = now // width * width
    for j, q in enumerate(names):
        row = reply[1 + j * (_DUE_HEAD + n) : 1 + (j + 1) * (_DUE_HEAD + n)]
        visible, total, later, p0, p1, pn = (int(x) for x in row[:_DUE_HEAD])
        buckets = [
            DueBucket(max(now, base + i * width), base + (i + 1) * width, int(c))
            for i, c in enumerate(row[_DUE_HEAD:])
        ]
        peak = DueBucket(max(now, p0), p1, pn) if pn else None
        out.append(Due(q, scale, now, visible, total - visible, buckets, later, peak))
    return out


def _flow(qname: str, reply: list[Any]) -> Flow | None:
    """flow_reply()'s {now, totalrecv, flag fields} as a Flow (None: no flag)."""
    now, recv, flat = int(reply[0]), reply[1], reply[2]
    if not flat:
        return None
    f = {_text(k): _text(val) for k, val in _pairs(flat)}
    until = _num(f.get("until"))
    if until is not None and until <= now:
        return None  # expired this very moment: it runs freely
    return Flow(
        qname=qname,
        state=f.get("state", "paused"),
        rate=_rate(f.get("rate")),
        reason=f.get("reason", ""),
        by=f.get("by", ""),
        since=_num(f.get("since")) or 0,
        until=until,
        now=now,
        received=max(0, (_num(_text(recv)) or 0) - (_num(f.get("recv0")) or 0)),
        granted=_num(f.get("granted")) or 0,
        held=_num(f.get("held")) or 0,
        last_held=_num(f.get("lastheld")),
    )


def _index(flat: list[Any], now: int) -> dict[str, Flow]:
    out: dict[str, Flow] = {}
    for name, raw in _pairs(flat):
        try:
            f = json.loads(_text(raw))
        except ValueError:
            continue
        if not isinstance(f, dict):
            continue
        until = _num(f.get("until"))
        if until is not None and until <= now:
            continue
        q = _text(name)
        out[q] = Flow(
            qname=q, state=str(f.get("state", "paused")), rate=_rate(f.get("rate")),
            reason=str(f.get("reason", "")), by=str(f.get("by", "")),
            since=_num(f.get("since")) or 0, until=until, now=int(now),
        )  # fmt: skip
    return out


def _peaks(flat: list[Any]) -> dict[str, DuePeak]:
    """The due index: each queue's peak as the snapshot task found it."""
    out: dict[str, DuePeak] = {}
    for name, raw in _pairs(flat):
        try:
            start, end, count, at = (int(x) for x in _text(raw).split())
        except ValueError:
            continue
        out[_text(name)] = DuePeak(DueBucket(start, end, count), at)
    return out


def _num(raw: Any) -> int | None:
    try:
        return int(float(raw))
    except (TypeError, ValueError):
        return None


def _rate(raw: Any) -> float | None:
    try:
        rate = float(raw)
    except (TypeError, ValueError):
        return None
    return rate if math.isfinite(rate) and rate > 0 else None
