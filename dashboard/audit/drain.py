"""The API's data-plane audit records: written to Redis with each call, moved into the
audit table here (log.py writes the table's other rows)."""

from __future__ import annotations

import contextlib
import datetime as dt
import itertools
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connections as connections_db
from django.db import transaction
from django.db.models import CharField, DateTimeField, IntegerField, JSONField, TextField
from django.db.models.constants import OnConflict
from redis.exceptions import RedisError, ResponseError

from dashboard.audit.log import MAX_DETAIL, MAX_IDS
from dashboard.models import AuditEntry
from dashboard.places.connections import connections
from dashboard.places.place import Place, resolve
from queues import InvalidArgument, MessageTooLong, RsmqError, locks
from queues.driver import error_for
from queues.ops import AUDIT_READ

log = logging.getLogger(__name__)

# -- The API's data-plane records: written to Redis with the operation, drained here ----
#
# A send, receive, delete or visibility change over the API runs one script that also
# appends the call's record to its namespace's audit stream (queues/ops/console_api.py `audited`):
# the operation and its record are one atomic step. drain() moves the records into this
# table in batches — each row keyed by its stream id (``record``, unique), inserted before
# the records are removed from Redis — so a drain that dies half-way loses nothing and a
# second one duplicates nothing (the key is one the call made, _Keys: a stream id can come
# again once an emptied stream is deleted). It runs in the web process (after an API call, at most
# every RSMQ_AUDIT_DRAIN_EVERY s), in Celery beat, and before the audit log is shown.

DRAIN_STEPS = 20  # reads of AUDIT_READ records per namespace per drain, at most
_drained_at = 0.0
_draining = threading.Lock()


class _Keys:
    """Each call's record key, unique among every process and start (the row's ``record``,
    which a drain run twice writes once): a random prefix of 16 bytes a process — a new
    one in a forked child — and a count. A uuid4 a call read the OS's random source
    every time (a system call that gives the GIL away on a busy web process)."""

    def __init__(self) -> None:
        self.renew()
        os.register_at_fork(after_in_child=self.renew)

    def renew(self) -> None:
        self.prefix, self.count = uuid.uuid4().hex, itertools.count()

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.count):x}"


_key = _Keys()


def head(place: Place, action: str, actor: str, queue: str, ids: Iterable[str] = (),
         params: dict[str, Any] | None = None) -> str:  # fmt: skip
    """The part of an API call's record its caller knows before it runs (JSON)."""
    return json.dumps(
        {"k": _key(), "c": place.conn.name, "u": actor, "a": action, "q": queue,
         "i": list(ids)[:MAX_IDS],
         "p": params or {}},
        default=str, separators=(",", ":"),
    )  # fmt: skip


def _row(place: Place, rid: str, fields: dict[str, str]) -> dict[str, Any]:
    """One stream record as a row; one that can't be read (the data is hostile) is still
    a row, saying so, never a failed drain."""
    try:
        h = json.loads(fields.get("h", ""))
        if not isinstance(h, dict):
            raise ValueError("not an object")
    except ValueError:
        h = {}
    conn = str(h.get("c") or place.conn.name)
    queue = str(h.get("q") or "")
    ids = [str(i) for i in h.get("i") or [] if isinstance(i, str)]
    outcome, result = fields.get("o", ""), fields.get("r", "")
    count: int | None = None
    detail = ""
    if not h:
        outcome, detail = AuditEntry.Outcome.ERROR, f"Unreadable audit record: {fields!r}"
    elif outcome == "ok":
        if result.lstrip("-").isdigit():
            count = int(result)
        else:
            ids += result.split()
            count = len(result.split())
    else:
        error = error_for(ResponseError(result), queue)
        refused = isinstance(error, (InvalidArgument, MessageTooLong))  # input: a 400
        outcome = AuditEntry.Outcome.INVALID if refused else AuditEntry.Outcome.ERROR
        detail = str(error)
    try:
        at = dt.datetime.fromtimestamp(int(rid.split("-")[0]) / 1000, dt.UTC)
    except ValueError:
        at = dt.datetime.now(dt.UTC)
    params = h.get("p") if isinstance(h.get("p"), dict) else {}
    # The row's columns by name (attname), not an AuditEntry: a model instance a record
    # is a large share of the drain's time (_insert; bench/RESULTS.md, "Figures behind
    # the code").
    fit = _lengths()
    return {
        "at": at,
        "username": str(h.get("u") or "")[: fit["username"]],
        "connection": conn[: fit["connection"]],
        "namespace": place.ns[: fit["namespace"]],
        "queue": queue[: fit["queue"]],
        "action": str(h.get("a") or "")[: fit["action"]],
        "ids": ids[:MAX_IDS],
        "count": count,
        "params": params,
        "outcome": str(outcome),
        "detail": detail[:MAX_DETAIL],
        # The call's own key: a stream id may come again once a drained stream is gone
        # (Redis numbers a new stream from its clock), a _Keys key never does.
        "record": f"{conn}/{place.ns}/{h.get('k') or rid + '/' + str(hash(str(fields)))}"[:400],
    }


_LENGTHS: dict[str, int | None] = {}


def _lengths() -> dict[str, int | None]:
    """The text columns' max_length, as log._fit cuts a value to (None: any length)."""
    if not _LENGTHS:
        for name in ("username", "connection", "namespace", "queue", "action"):
            _LENGTHS[name] = getattr(AuditEntry._meta.get_field(name), "max_length", None) or None
    return _LENGTHS


def _places() -> list[Place]:
    return [resolve(c.name, ns) for c in connections() for ns in c.namespaces]


def drain(places: Iterable[Place] | None = None) -> int:
    """Move the API's records from Redis into the table: how many were moved. A place
    whose Redis can't be reached is left for the next drain."""
    global _drained_at
    _drained_at = time.monotonic()
    moved = 0
    for place in _places() if places is None else places:
        try:
            for _ in range(DRAIN_STEPS):
                records = place.rsmq.audit_records(AUDIT_READ)
                if not records:
                    break
                _insert([_row(place, rid, fields) for rid, fields in records])
                place.rsmq.audit_ack([rid for rid, _ in records])
                moved += len(records)
                if len(records) < AUDIT_READ:
                    break
        except (RedisError, RsmqError):
            log.warning("Audit records of %s/%s not drained", place.conn.name, place.ns,
                        exc_info=True)  # fmt: skip
    return moved


#: the columns a drained row fills (its id is the database's)
_COLUMNS = [f for f in AuditEntry._meta.concrete_fields if not f.primary_key]


def _preparer(field: Any, db: Any) -> Callable[[Any], Any]:
    """What ``field.get_db_prep_save`` makes of a plain value (a row's, ``_row``), without
    its per-value steps where they change nothing: a text or a number is itself; JSON is
    the database's adaptation of it (JSONField's own last step); any other field (a new
    column) its own get_db_prep_save."""
    if isinstance(field, JSONField):
        encoder, adapt = field.encoder, db.ops.adapt_json_value
        return lambda value: None if value is None else adapt(value, encoder)
    if type(field) in (CharField, TextField, IntegerField):
        return lambda value: value
    if type(field) is DateTimeField:
        # An aware datetime (every drained row's ``at``) is its own prepared value
        # (DateTimeField.get_prep_value): the database's adaptation of it is the rest.
        at = db.ops.adapt_datetimefield_value
        return lambda value: (
            at(value) if type(value) is dt.datetime and value.tzinfo is not None
            else field.get_db_prep_save(value, db)
        )  # fmt: skip
    return lambda value: field.get_db_prep_save(value, db)


def _insert(rows: list[dict[str, Any]]) -> None:
    """``bulk_create(rows, ignore_conflicts=True)`` in one executemany: the same SQL
    (a row whose ``record`` is in already is skipped) without the ORM's per-row compiling,
    a large share of an API call's time in a web process (bench/RESULTS.md, "Figures
    behind the code"). A column a row does not name gets its default."""
    db = connections_db[AuditEntry.objects.db]
    ignore = OnConflict.IGNORE
    table = db.ops.quote_name(AuditEntry._meta.db_table)
    names = ", ".join(db.ops.quote_name(f.column) for f in _COLUMNS)
    marks = ", ".join(["%s"] * len(_COLUMNS))
    suffix = db.ops.on_conflict_suffix_sql(_COLUMNS, ignore, None, None)
    sql = (
        f"{db.ops.insert_statement(on_conflict=ignore)} {table} ({names}) VALUES ({marks}) {suffix}"
    )
    prepare = [(f.attname, _preparer(f, db), f.get_default()) for f in _COLUMNS]
    values = [[p(r[name]) if name in r else p(default) for name, p, default in prepare]
              for r in rows]  # fmt: skip
    with transaction.atomic(using=db.alias), db.cursor() as cursor:
        cursor.executemany(sql, values)


def maybe_drain(place: Place) -> None:
    """After an API call in a thread: drain its namespace if the last drain of this
    process was more than RSMQ_AUDIT_DRAIN_EVERY s ago (one thread at a time; never fails
    the call)."""
    if _due():
        _drain_and_release(place)


def drain_soon(place: Place) -> None:
    """After an API call in the server's event loop, where the database is not used:
    ``maybe_drain`` in the drain's own thread."""
    if _due():
        try:
            _drainer.submit(_drain_and_release, place)
        except BaseException:
            _draining.release()
            raise


def _due() -> bool:
    """Whether a drain is due; then this process's drain lock is held (released by
    ``_drain_and_release``)."""
    if time.monotonic() - _drained_at < settings.RSMQ_AUDIT_DRAIN_EVERY:
        return False
    return _draining.acquire(blocking=False)


_drainer = ThreadPoolExecutor(1, thread_name_prefix="audit-drain")


#: the web processes' drain of a namespace, one process at a time (queues/locks.py): each
#: of them drained every RSMQ_AUDIT_DRAIN_EVERY s, and drains that overlapped read, built
#: and inserted the same records (the database ignores the second copy; the CPU is spent).
#: Celery beat's and the audit page's drains don't wait for it (a process killed holding
#: it stops the others' for DRAIN_LOCK_TIMEOUT s at most; the page drains all the same).
DRAIN_LOCK = ("rsmq-console", "lock", "audit-drain")
DRAIN_LOCK_TIMEOUT = 30.0  # s: DRAIN_STEPS reads of AUDIT_READ records take well under it


def _drain_and_release(place: Place) -> None:
    global _drained_at
    _drained_at = time.monotonic()  # taken or not, the next try is a period away
    try:
        held = locks.lock(place.rsmq.redis, *DRAIN_LOCK, place.conn.name, place.ns,
                          timeout=DRAIN_LOCK_TIMEOUT)  # fmt: skip
        if held.acquire():  # else another process drains it now
            try:
                drain([place])
            finally:
                with contextlib.suppress(RedisError):
                    held.release()
    except Exception:
        log.warning("Audit drain failed", exc_info=True)
    finally:
        _draining.release()


def pending() -> int:
    """Records not yet drained, over every namespace that can be reached."""
    n = 0
    for place in _places():
        try:
            n += place.rsmq.audit_pending()
        except (RedisError, RsmqError):
            continue
    return n
