"""`rsmq`: the command line, a drop-in for rsmqctl (its verbs, flags, -r/--redis-url and
REDIS_URL, its JSON keys: more keys are ours). JSON on stdout; errors on one line.

rsmq queue list|create|describe|set|delete|purge|policy|pause|throttle|resume|flow|due
rsmq message send|receive|pop|get|list|delete|visibility|requeue|move|redrive|export|import
    |reschedule
    (move, redrive: --rate --canary N --watch S --max-bounce P: counted, then paced;
    reschedule: a window's delayed messages delivered now, shifted or spread, paced)
rsmq failures QUEUE [ID]
rsmq undo TOKEN (what a paced move / redrive / reschedule printed as its "undo")
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import getpass
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import redis

from . import pacing, transfer
from . import validation as v
from .client import RedisSMQ
from .errors import InvalidArgument, QueueNotFound, QueueUnreadable, RsmqError
from .limits import DUE_SCALES, MAX_AGE
from .models import LIST_STATES, Cursor, Message
from .server import default_redis_url
from .urls import redacted

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_NS = "rsmq"

EXIT_ERROR = 1  # an RSMQ error: bad input, missing queue, ...
EXIT_USAGE = 2  # argparse's own code for bad command lines
EXIT_DATA = 2  # data the command can't use: a queue's record another client spoiled
EXIT_REDIS = 3  # Redis unreachable (or timing out): never for an error about the data
EXIT_STOPPED = 4  # a paced move / redrive stopped: its canary came back

Handler = Callable[[RedisSMQ, argparse.Namespace], Any]


def _queue_list(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    return rsmq.list_queues()


def _queue_create(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    rsmq.create_queue(a.name, vt=a.vt, delay=a.delay, maxsize=a.maxsize)
    return {"created": a.name}


def _queue_describe(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    stats = rsmq.queue_stats([v.qname(a.name)])  # attributes and counts in one round trip
    if not stats:
        raise QueueNotFound(a.name)
    if stats[0].unreadable:
        raise QueueUnreadable(a.name, stats[0].unreadable)
    # rsmqctl's (rsmq's getQueueAttributes') hiddenmsgs beside our split of it
    return {**stats[0].as_dict(), "hiddenmsgs": stats[0].hidden}


def _queue_set(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    attrs = rsmq.set_queue_attributes(a.name, vt=a.vt, delay=a.delay, maxsize=a.maxsize)
    return {"name": a.name, **dataclasses.asdict(attrs)}


def _confirmed(a: argparse.Namespace, what: str) -> None:
    if not a.yes:
        raise InvalidArgument("yes", f"{what} deletes messages for good: add --yes to confirm")


def _queue_delete(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    _confirmed(a, f"deleting queue {a.name!r}")
    rsmq.delete_queue(a.name)
    return {"deleted": a.name}


def _queue_purge(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    _confirmed(a, f"purging queue {a.name!r}")
    return {"purged": rsmq.purge_queue(a.name)}


def _queue_policy(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    if a.clear:
        rsmq.clear_dead_letter_policy(a.name)
    elif a.dlq or a.maxrc is not None:
        if not (a.dlq and a.maxrc is not None):
            raise InvalidArgument("dlq", "give both --dlq and --maxrc (or --clear)")
        rsmq.set_dead_letter_policy(a.name, a.dlq, a.maxrc)
    policy = rsmq.get_dead_letter_policy(a.name)
    return {"name": a.name, "policy": dataclasses.asdict(policy) if policy else None}


def _duration(name: str, text: str) -> float:
    """Seconds of a duration as typed (``--for 10m``, ``--shift -1h30m``)."""
    try:
        return v.duration(name, text, signed=True)
    except InvalidArgument:
        raise InvalidArgument(name, f"--{name} must be {v.DURATION_FORMAT}") from None


def _by() -> str:
    """Who sets a flag from the command line: the user, and that it was the CLI."""
    try:
        return f"{getpass.getuser()} (rsmq CLI)"
    except (KeyError, OSError):
        return "rsmq CLI"


def _flow(a: argparse.Namespace) -> dict[str, Any]:
    return {"reason": a.reason, "by": a.by or _by(),
            "seconds": None if a.for_ is None else _duration("for", a.for_)}  # fmt: skip


def _queue_pause(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    return rsmq.pause_queue(a.name, **_flow(a)).as_dict()


def _queue_throttle(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    return rsmq.throttle_queue(a.name, a.rate, **_flow(a)).as_dict()


def _queue_resume(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    was = rsmq.resume_queue(a.name)
    return {"resumed": a.name, "was": was.as_dict() if was else None}


def _queue_flow(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    flow = rsmq.queue_flow(a.name)
    return {"name": a.name, "flow": flow.as_dict() if flow else None}


def _queue_due(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    return dataclasses.asdict(rsmq.due(a.name, a.scale))


def _server_ms(rsmq: RedisSMQ) -> int:
    sec, usec = rsmq.redis.time()
    return int(sec) * 1000 + int(usec) // 1000


def _at(name: str, text: str | None, now: int) -> int | None:
    """A time as typed: epoch seconds, ISO 8601 with its timezone, or +/-duration from
    now (the Redis server's clock)."""
    if text is None:
        return None
    if text.startswith(("+", "-")):
        return max(0, now + round(_duration(name, text.lstrip("+")) * 1000))
    when = _when(text)
    seconds = when.timestamp() if isinstance(when, dt.datetime) else when
    return round(seconds * 1000)


def _message_reschedule(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    """A window's delayed messages delivered now, shifted or spread: counted, then (with
    --yes) paced; its "undo" puts every score back (``rsmq undo TOKEN``)."""
    now = _server_ms(rsmq)
    chosen = [x for x in ("deliver", "shift", "spread") if getattr(a, x)]
    if len(chosen) != 1:
        raise InvalidArgument("deliver", "give one of --deliver, --shift DURATION, --spread A B")
    action = chosen[0]
    when = pacing.When(_at("due-from", a.due_from, now), _at("due-until", a.due_until, now))
    if action == "shift":
        when = dataclasses.replace(when, shift_ms=round(_duration("shift", a.shift) * 1000))
    elif action == "spread":
        start, end = (_at("spread", t, now) for t in a.spread)
        when = dataclasses.replace(when, spread_from=start or 0, spread_until=end or 0)
    match = {"state": "delayed"}
    plan = pacing.Plan(a.name, action, match, pace=pacing.checked_pace(a.rate), when=when)
    plan.check()
    return _run_paced(rsmq, a, plan, "rescheduled")


def _undo(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    r = rsmq.undo(a.token)
    return dataclasses.asdict(r)


def _message_body(a: argparse.Namespace) -> str:
    body: str = a.message
    return sys.stdin.read() if body == "-" else body


def _message_send(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    if a.at is not None:
        if a.delay is not None:
            raise InvalidArgument("at", "give --delay or --at, not both")
        return {"id": rsmq.send_at(a.name, _message_body(a), _when(a.at))}
    return {"id": rsmq.send_message(a.name, _message_body(a), delay=a.delay)}


def _when(text: str) -> dt.datetime | float:
    """--at: epoch seconds, or an ISO 8601 time with its timezone."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(
            "at", f"--at must be epoch seconds or ISO 8601, not {text!r}"
        ) from None
    if when.tzinfo is None:
        raise InvalidArgument("at", "--at needs a timezone, e.g. 2026-12-01T09:00:00+00:00")
    return when


def _received(m: Message) -> dict[str, Any]:
    """A received message: its fields, and rsmqctl's ``ts`` (when it was sent, epoch ms;
    None for an id with no time in it, as other ports make)."""
    return {**dataclasses.asdict(m), "ts": None if m.sent is None else int(m.sent)}


def _message_receive(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    if a.count == 1:
        m = rsmq.receive_message(a.name, vt=a.vt)
        return _received(m) if m else {}
    return [_received(m) for m in rsmq.receive_messages(a.name, a.count, vt=a.vt)]


def _message_pop(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    m = rsmq.pop_message(a.name)
    return _received(m) if m else {}


def _message_get(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    m = rsmq.get_message(a.name, a.id)
    if m is None:
        raise InvalidArgument("id", f"no message {a.id} in queue {a.name!r}")
    return dataclasses.asdict(m)


def _message_list(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    if a.where or a.search or a.rc or a.older or a.younger or a.after:
        return _message_scan(rsmq, a)
    page = rsmq.list_messages(
        a.name, state=a.state, offset=a.offset, limit=a.limit, preview=a.preview
    )
    return dataclasses.asdict(page)


def _message_scan(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    """``message list`` with a filter: browse's bounded calls until ``--limit`` matches
    or the state's end; ``next`` is the ``--after`` that goes on."""
    if a.offset:
        raise InvalidArgument("offset", "a filtered list goes on with --after, not --offset")
    for name in ("older", "younger"):
        if not 0 <= getattr(a, name) <= MAX_AGE // 60:
            raise InvalidArgument(name, f"{name} must be minutes from 0 to {MAX_AGE // 60}")
    try:
        after = Cursor.decode(a.after) if a.after else None
    except ValueError:
        raise InvalidArgument("after", "after must be the next of an earlier list") from None
    items: list[Any] = []
    looked = 0
    while True:
        b = rsmq.browse(
            a.name, state=a.state, after=after, limit=a.limit - len(items), preview=a.preview,
            min_rc=a.rc, contains=a.search, where=a.where, older_than=a.older * 60,
            younger_than=a.younger * 60, budget=1.0,
        )  # fmt: skip
        items += [dataclasses.asdict(m) for m in b.items]
        looked += b.looked
        after = b.resume
        if b.at_end or len(items) >= a.limit:
            break
    return {"items": items, "looked": looked, "at_end": b.at_end,
            "next": None if b.at_end or after is None else after.encode()}  # fmt: skip


def _message_delete(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    return {"deleted": rsmq.delete_messages(a.name, a.id)}


def _message_visibility(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    return {"changed": rsmq.change_message_visibility(a.name, a.id, a.vt)}


def _message_requeue(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    return {"requeued": rsmq.requeue(a.name, a.id)}


def _message_move(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    if _is_paced(a):
        if a.id:
            raise InvalidArgument(
                "id", "a paced move takes a filter (--state, --contains), not ids"
            )
        return _paced(rsmq, a, "move", "moved")
    if not a.id and not a.all:
        raise InvalidArgument("id", "give the ids to move with -i, or --all")
    return {"moved": rsmq.move_messages(a.name, a.to, None if a.all else a.id, a.keep_counts)}


def _message_redrive(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    if _is_paced(a) or a.keep_counts:
        return _paced(rsmq, a, "redrive", "redriven")
    return {"redriven": rsmq.redrive(a.name, to=a.to, limit=a.limit)}


class Stopped(dict[str, Any]):
    """A paced run's result when its canary came back: printed, exit EXIT_STOPPED."""


def _is_paced(a: argparse.Namespace) -> bool:
    given = (a.rate, a.canary, a.watch, a.max_bounce, a.state, a.contains, a.min_rc)
    return a.yes or any(x is not None for x in given)


def _paced(rsmq: RedisSMQ, a: argparse.Namespace, action: str, verb: str) -> Any:
    """Count the matches, then (with --yes) act on them paced: progress on stderr (a JSON
    line a second), Ctrl-C cancels after the current step; the result on stdout, with
    the token of its Undo (``rsmq undo TOKEN``)."""
    state = a.state or ("visible" if action == "redrive" else "all")
    match = {"state": state, "min_rc": a.min_rc or 0, "contains": a.contains or ""}
    pace = pacing.checked_pace(a.rate, a.canary, a.watch, a.max_bounce)
    plan = pacing.Plan(a.name, action, match, a.to, None, a.keep_counts, pace)
    plan.check()
    return _run_paced(rsmq, a, plan, verb)


def _run_paced(rsmq: RedisSMQ, a: argparse.Namespace, plan: pacing.Plan, verb: str) -> Any:
    action, pace, match = plan.action, plan.pace, plan.match
    if a.limit is not None:
        v.integer("limit", a.limit, 1, 2**53)
    n = pacing.count_matches(rsmq, a.name, match, when=plan.when).matched
    if a.limit is not None:
        n = min(n, a.limit)
    pacing.checked_pace(pace.rate, pace.canary, pace.watch, pace.max_bounce, count=n)
    if not a.yes:
        raise InvalidArgument(
            "yes", f"{n} message(s) of {a.name} match ({match['state']}): add --yes to "
            f"{action} them"
        )  # fmt: skip
    # One stash for the whole run, filled by each step in the same call as its change
    # (a redrive's to the queues its messages came from: opened without a destination).
    token = rsmq.open_undo(f"{action}_matches", a.name, to=plan.to) if n else None
    cancelled = False
    last = [0.0]

    def control(p: pacing.Progress) -> str:
        if time.monotonic() - last[0] >= 1:
            last[0] = time.monotonic()
            print(json.dumps({"phase": p.phase, "done": p.done, "of": n}), file=sys.stderr)
        return pacing.CANCEL if cancelled else pacing.RUN

    def interrupt(signum: int, frame: Any) -> None:
        nonlocal cancelled
        cancelled = True

    before = signal.signal(signal.SIGINT, interrupt)
    try:
        p = pacing.run(rsmq, plan, n, control, keep=token)
    finally:
        signal.signal(signal.SIGINT, before)
    if token is not None and not p.done:
        rsmq.discard_undo(token)  # it kept nothing
        token = None
    out: dict[str, Any] = {verb: p.done, "matched": n, "changed": p.changed,
                           "skipped": p.skipped, "phase": p.phase, "undo": token}  # fmt: skip
    if pace.canary:
        out["canary"] = {"moved": len(p.canary_ids), "came_back": p.bounced}
    if p.note:
        out["note"] = p.note
    return Stopped(out) if p.phase == "stopped" else out


#: what a handler returns when it wrote its output itself (an export to stdout)
PRINTED = object()


def _message_export(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    """JSON Lines of a state (or a filter's matches) to a file, or stdout with ``-o -``
    (the count then goes to stderr)."""
    lines = transfer.export_lines(rsmq, a.name, a.state, a.contains or "", a.min_rc)
    n = 0
    out = sys.stdout if a.output == "-" else open(a.output, "w", encoding="utf-8")  # noqa: SIM115
    try:
        for n, line in enumerate(lines, 1):  # noqa: B007
            out.write(line)
    finally:
        if out is not sys.stdout:
            out.close()
    if a.output == "-":
        print(json.dumps({"exported": n}), file=sys.stderr)
        return PRINTED
    return {"exported": n, "file": a.output}


def _message_import(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    """Check every line first (a bad one and nothing is written), then write in atomic
    batches; stdin (``-i -``) is kept in a temporary file for the two readings."""
    maxsize = rsmq.get_queue_attributes(a.name).maxsize
    src = open(a.input, "rb") if a.input != "-" else tempfile.TemporaryFile()  # noqa: SIM115
    try:
        if a.input == "-":
            shutil.copyfileobj(sys.stdin.buffer, src)
        src.seek(0)
        count = transfer.check(src, a.keep_ids, maxsize)
        src.seek(0)
        report = transfer.import_records(
            rsmq, a.name, transfer.read_records(src, a.keep_ids, maxsize), a.keep_ids
        )
    finally:
        src.close()
    return {"lines": count, **report.as_dict()}


def _failures(rsmq: RedisSMQ, a: argparse.Namespace) -> Any:
    """A message's failure history (newest first), or the queue's failing messages
    grouped by error type (retrying in the queue, dead in its dead-letter queue)."""
    if a.id is not None:
        return [f.as_dict() for f in rsmq.failures(a.name, a.id)]
    g = rsmq.failure_groups(a.name)
    return {
        "name": g.qname, "dlq": g.dlq, "complete": g.complete,
        "groups": [x.as_dict() for x in g.groups],
    }  # fmt: skip


def _pacing_flags(c: argparse.ArgumentParser) -> None:
    """A paced move / redrive of a filter's matches: counted first, run with --yes."""
    g = c.add_argument_group(
        "paced", "count the matches of a filter, then (with --yes) move them paced"
    )
    g.add_argument("-s", "--state", choices=LIST_STATES, help="only messages in this state")
    g.add_argument("--contains", help="only messages whose body contains this text")
    g.add_argument("--min-rc", type=int, help="only messages received at least this often")
    g.add_argument("--rate", help="at most this many messages a second")
    g.add_argument("--canary", help="move the first N, then watch them")
    g.add_argument("--watch", help="seconds to watch the canary")
    g.add_argument("--max-bounce", help="stop if more than this % of the canary come back")
    g.add_argument(
        "--keep-counts", action="store_true", help="keep their receive count (default: fresh)"
    )
    g.add_argument("--yes", action="store_true", help="confirm, having seen the count")


def _flow_flags(c: argparse.ArgumentParser) -> None:
    c.add_argument("--reason", default="", help="why (shown on the queue page, audited)")
    c.add_argument("--for", dest="for_", metavar="DURATION",
                   help="resume by itself after this long: 90, 10m, 2h, 1d")  # fmt: skip
    c.add_argument("--by", help="who sets it (default: this user, via the CLI)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rsmq", description="RSMQ command line: rsmqctl's command lines work with rsmq."
    )
    # No argparse defaults: a worker keeps the URL and namespace it was made with unless
    # these are given; every other command falls back to the environment, then DEFAULTS.
    p.add_argument(
        "-r", "--redis-url", "--url", dest="url", metavar="URL",
        help="Redis URL. Else env RSMQ_REDIS_URL, else env REDIS_URL (rsmqctl's), else the "
        f"embedded Redis of a running ./run, else {DEFAULT_URL}",
    )  # fmt: skip
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of errors")
    p.add_argument("--ns", help=f"key namespace (env RSMQ_NAMESPACE; default {DEFAULT_NS})")
    groups = p.add_subparsers(
        dest="group", required=True, metavar="{queue,message,failures,undo,worker}"
    )

    def cmd(sub: Any, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        c: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help)
        c.set_defaults(handler=handler)
        if handler not in (_queue_list, None):
            c.add_argument("-n", "--name", required=True, help="queue name")
        return c

    q = groups.add_parser("queue", help="list, create, describe, change and delete queues")
    qs = q.add_subparsers(dest="verb", required=True)
    cmd(qs, "list", _queue_list, "list the queues")
    c = cmd(qs, "create", _queue_create, "create a queue")
    c.add_argument("-t", "--vt", "--visibility-timeout", dest="vt", type=int, default=30,
                   help="visibility timeout, s")  # fmt: skip
    c.add_argument("-d", "--delay", type=int, default=0, help="delivery delay, s")
    c.add_argument("-m", "--maxsize", type=int, default=65536, help="bytes, or -1")
    cmd(qs, "describe", _queue_describe, "attributes and counts of a queue")
    c = cmd(qs, "set", _queue_set, "change a queue's attributes")
    c.add_argument("-t", "--vt", type=int)
    c.add_argument("-d", "--delay", type=int)
    c.add_argument("-m", "--maxsize", type=int)
    c = cmd(qs, "delete", _queue_delete, "delete a queue and all its messages")
    c.add_argument("--yes", action="store_true", help="confirm")
    c = cmd(qs, "purge", _queue_purge, "delete every message, keeping the queue")
    c.add_argument("--yes", action="store_true", help="confirm")
    c = cmd(qs, "policy", _queue_policy, "show or set the dead-letter policy")
    c.add_argument("--dlq", help="dead-letter queue (exists already)")
    c.add_argument("--maxrc", type=int, help="receives before a message is dead-lettered")
    c.add_argument("--clear", action="store_true", help="remove the policy")
    flow_help = " (this project's clients, rsmq worker and the console's API honour it; "
    flow_help += "Node rsmq and the other ports do not)"
    c = cmd(qs, "pause", _queue_pause, "pause the queue's consumers" + flow_help)
    _flow_flags(c)
    c = cmd(qs, "throttle", _queue_throttle, "let N receives a second through" + flow_help)
    c.add_argument("--rate", type=float, required=True, help="receives a second, all together")
    _flow_flags(c)
    cmd(qs, "resume", _queue_resume, "take a pause or a throttle away")
    cmd(qs, "flow", _queue_flow, "show the queue's pause or throttle, and who bypasses it")
    c = cmd(qs, "due", _queue_due, "hidden messages by when they come due, and the peak")
    c.add_argument("--scale", choices=tuple(DUE_SCALES), default="hour",
                   help="minute: the next hour; hour: 48 hours; day: 30 days")  # fmt: skip

    m = groups.add_parser("message", help="send, receive, browse and act on messages")
    ms = m.add_subparsers(dest="verb", required=True)
    c = cmd(ms, "send", _message_send, "send a message")
    c.add_argument("-m", "--message", required=True, help="the body; - reads stdin")
    c.add_argument("-d", "--delay", type=int)
    c.add_argument("--at", help="visible at: epoch seconds or ISO 8601 with timezone")
    c = cmd(ms, "receive", _message_receive, "receive messages (they turn invisible for vt)")
    c.add_argument("-t", "--vt", "--visibility-timeout", dest="vt", type=int)
    c.add_argument("-c", "--count", type=int, default=1, help="receive up to this many")
    cmd(ms, "pop", _message_pop, "receive and delete a message")
    c = cmd(ms, "get", _message_get, "show one message without receiving it")
    c.add_argument("-i", "--id", required=True)
    c = cmd(ms, "list", _message_list, "browse messages without receiving them")
    c.add_argument("-s", "--state", choices=LIST_STATES, default="all")
    c.add_argument("--offset", type=int, default=0)
    c.add_argument("--limit", type=int, default=50)
    c.add_argument("--preview", type=int, default=200, help="body bytes shown; 0 = all")
    c.add_argument("--where", default="", metavar="EXPR",
                   help="JSON fields: 'amount > 100 and status in (failed, retry)'")  # fmt: skip
    c.add_argument("--search", default="", metavar="TEXT", help="the body contains TEXT")
    c.add_argument("--rc", type=int, default=0, metavar="N", help="received at least N times")
    c.add_argument("--older", type=int, default=0, metavar="MIN", help="sent over MIN min ago")
    c.add_argument("--younger", type=int, default=0, metavar="MIN",
                   help="sent less than MIN min ago")  # fmt: skip
    c.add_argument("--after", default="", help="go on from an earlier filtered list's next")
    c = cmd(ms, "delete", _message_delete, "delete messages")
    c.add_argument("-i", "--id", "--message-id", dest="id", required=True, nargs="+")
    c = cmd(ms, "visibility", _message_visibility, "change a message's visibility timeout")
    c.add_argument("-i", "--id", "--message-id", dest="id", required=True)
    c.add_argument("-t", "--vt", "--visibility-timeout", dest="vt", type=int, required=True)
    c = cmd(ms, "requeue", _message_requeue, "make messages visible now")
    c.add_argument("-i", "--id", required=True, nargs="+")
    c = cmd(ms, "move", _message_move, "move messages to another queue")
    c.add_argument("--to", required=True, help="destination queue")
    c.add_argument("-i", "--id", nargs="+")
    c.add_argument("--all", action="store_true", help="move every message")
    c.add_argument("--limit", type=int, help="paced: at most this many")
    _pacing_flags(c)
    c = cmd(ms, "redrive", _message_redrive, "move dead-lettered messages back to their queues")
    c.add_argument("--to", help="send them all to this queue instead")
    c.add_argument("--limit", type=int, help="at most this many")
    _pacing_flags(c)
    c = cmd(ms, "reschedule", _message_reschedule,
            "deliver now, shift or spread the delayed messages due in a window")  # fmt: skip
    g = c.add_argument_group("when", "TIME: epoch seconds, ISO 8601 with timezone, or +/-DURATION")
    g.add_argument("--due-from", metavar="TIME", help="those due at or after TIME")
    g.add_argument("--due-until", metavar="TIME", help="those due before TIME")
    g.add_argument("--deliver", action="store_true", help="make them visible now")
    g.add_argument("--shift", metavar="DURATION", help="later (--shift=-30m: earlier)")
    g.add_argument("--spread", nargs=2, metavar=("FROM", "UNTIL"),
                   help="evenly over [FROM, UNTIL), in their order")  # fmt: skip
    c.add_argument("--rate", help="at most this many messages a second")
    c.add_argument("--limit", type=int, help="at most this many")
    c.add_argument("--yes", action="store_true", help="confirm, having seen the count")
    c = cmd(ms, "export", _message_export, "write messages as JSON Lines, unchanged")
    c.add_argument("-o", "--output", required=True, help="a file, or - for stdout")
    c.add_argument("-s", "--state", choices=LIST_STATES, default="all")
    c.add_argument("--contains", help="only messages whose body contains this text")
    c.add_argument("--min-rc", type=int, default=0, help="only messages received this often")
    c = cmd(ms, "import", _message_import, "send the messages of an export (new ids)")
    c.add_argument("-i", "--input", required=True, help="a file, or - for stdin")
    c.add_argument("--keep-ids", action="store_true", help="keep ids, rc and fr (skip ids taken)")

    f = groups.add_parser(
        "failures", help="why messages failed: rsmq failures QUEUE [ID]",
        description="A queue's failing messages grouped by error type; with ID, that "
        "message's failure history (what the worker recorded).",
    )  # fmt: skip
    f.set_defaults(handler=_failures)
    f.add_argument("name", metavar="QUEUE", help="queue name")
    f.add_argument("id", metavar="ID", nargs="?", help="a message id")

    u = groups.add_parser(
        "undo", help="put back what a paced move / redrive / reschedule changed",
        description="Undo: the token a paced move, redrive or reschedule printed as its "
        '"undo"; each message back exactly as it was, unless it changed since.',
    )  # fmt: skip
    u.set_defaults(handler=_undo)
    u.add_argument("token", metavar="TOKEN")

    w = groups.add_parser("worker", help="run a worker: rsmq worker myapp.jobs:worker")
    w.set_defaults(handler=None)
    w.add_argument("target", help="MODULE:ATTRIBUTE of a queues.worker.Worker")
    w.add_argument("--processes", type=int, default=1, help="worker processes (multi-core)")
    w.add_argument("--log-format", choices=("text", "json"), default="text")
    w.add_argument("--log-level", default="INFO")
    return p


def _line(e: Exception) -> str:
    return " ".join(str(e).split())


def _raw(value: object) -> str:
    """JSON for what only data another client wrote holds: a message's raw zset member."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.group == "worker":
        from .worker_cli import run_workers

        return run_workers(args)
    args.url = args.url or os.environ.get("RSMQ_REDIS_URL") or os.environ.get("REDIS_URL")
    args.url = args.url or default_redis_url()
    args.ns = args.ns or os.environ.get("RSMQ_NAMESPACE") or DEFAULT_NS
    try:
        rsmq = RedisSMQ(url=args.url, ns=args.ns, socket_timeout=10)
    except (ValueError, InvalidArgument) as e:
        print(f"rsmq: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    try:
        try:
            result = args.handler(rsmq, args)
        except Exception:
            if args.verbose:
                traceback.print_exc()
            raise
    except QueueUnreadable as e:
        print(f"rsmq: {e.name}: {_line(e)}", file=sys.stderr)
        return EXIT_DATA
    except RsmqError as e:
        print(f"rsmq: {e.name}: {e}", file=sys.stderr)
        return EXIT_ERROR
    except (redis.ConnectionError, redis.TimeoutError) as e:
        print(f"rsmq: redis unreachable at {redacted(args.url)}: {_line(e)}", file=sys.stderr)
        return EXIT_REDIS
    except redis.RedisError as e:
        # Redis answered: with an error about the data (WRONGTYPE, ...), not an outage.
        print(f"rsmq: redis error at {redacted(args.url)}: {_line(e)}", file=sys.stderr)
        return EXIT_DATA
    finally:
        rsmq.close()
    if result is PRINTED:
        return 0
    json.dump(result, sys.stdout, ensure_ascii=False, default=_raw)
    sys.stdout.write("\n")
    return EXIT_STOPPED if isinstance(result, Stopped) else 0


if __name__ == "__main__":
    sys.exit(main())
