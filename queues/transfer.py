"""Messages out and back in, as JSON Lines: ``rsmq message export|import``.

An export line is one message as browsing reads it (nothing about it changes: no rc, fr
or totalrecv bump)::

    {"id": "…", "body": "…", "rc": 2, "fr": 1764095000123, "sent": 1764094990000.5,
     "visible_at": 1764095030123, "delay_ms": 29500, "state": "inflight"}

``delay_ms`` is how long after the export the message was due to be visible (0 when it
already was): an import keeps those relative delays. An import reads the lines, refuses
the whole file naming the first bad lines (nothing written), then writes the messages in
atomic batches — new ids by default (new messages, rc 0), or their own ids with their rc
and fr (``keep_ids``), skipping an id that is already in the queue — and reports exactly
what it wrote and skipped.

Reading is streamed both ways: an export holds one browse page in memory, an import one
batch (and the report's skipped lines).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from . import validation as v
from .client import RedisSMQ
from .errors import InvalidArgument
from .models import Cursor, ImportRecord, MessageInfo

#: messages a browse call of an export asks for
EXPORT_PAGE = 500
#: messages one of its script calls reads (browse's ``step``): an export reads whole
#: bodies, so fewer than a browser's page does: twice this many a call came over the
#: scan's 5 ms now and then, this many keeps each call well under it (bench/RESULTS.md,
#: "Export of 1,000,000 messages")
EXPORT_STEP = 100
#: an import batch: at most this many messages ...
IMPORT_BATCH = 500
#: ... and about this many bytes of bodies (a call's Redis time grows with the bytes it
#: writes: bench/RESULTS.md, "Figures behind the code")
IMPORT_BATCH_BYTES = 1024 * 1024
#: bad lines named in a refusal (the first ones)
BAD_LINES_SHOWN = 20


def export_record(m: MessageInfo) -> dict[str, Any]:
    return {
        "id": m.id,
        "body": m.message,
        "rc": m.rc,
        "fr": m.fr,
        "sent": m.sent,
        "visible_at": m.visible_at,
        "delay_ms": max(0, m.visible_at - m.read_at),
        "state": m.state,
    }


def export_lines(
    rsmq: RedisSMQ,
    qname: str,
    state: str = "all",
    contains: str = "",
    min_rc: int = 0,
    show: Callable[[str], str | None] | None = None,
    **filters: Any,
) -> Iterator[str]:
    """Every message of a state (or a filter's matches), in queue order, one JSON line
    each (with its newline), read in browse's bounded calls. ``filters``: any further
    filter of ``browse`` (the console hands its filter's ``browse_kwargs()`` whole);
    ``show``: each body as the reader may see it (the console's masking); None leaves
    the message out."""
    after: Cursor | None = None
    while True:
        page = rsmq.browse(
            qname,
            state,
            after=after,
            limit=EXPORT_PAGE,
            contains=contains,
            min_rc=min_rc,
            step=EXPORT_STEP,
            **filters,
        )
        for m in page.items:
            record = export_record(m)
            if show is not None:
                shown = show(m.message)
                if shown is None:
                    continue
                record["body"] = shown
            yield json.dumps(record, ensure_ascii=False) + "\n"
        if page.at_end:
            return
        after = page.resume


class BadLines(InvalidArgument):
    """An import file with lines that can't be imported: nothing was written."""

    def __init__(self, bad: list[tuple[int, str]], total: int) -> None:
        shown = "; ".join(f"line {n}: {why}" for n, why in bad[:BAD_LINES_SHOWN])
        more = ""
        if total > BAD_LINES_SHOWN:
            more = f" (and {total - BAD_LINES_SHOWN} more)"
        super().__init__("file", f"{total} line(s) can't be imported, nothing was: {shown}{more}")
        self.bad = bad
        self.total = total


def _whole(rec: dict[str, Any], key: str, low: int, high: int, default: int | None) -> int | None:
    value = rec.get(key, default)
    if value is None and default is None:
        return None
    return v.integer(key, value, low, high)


def parse_line(
    text: str | bytes, line: int, keep_ids: bool, maxsize: int = -1
) -> ImportRecord | None:
    """One line of an export as a record; None for a blank line. Raises InvalidArgument
    naming the field and its range (a body over the queue's ``maxsize`` too)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InvalidArgument("line", f"not UTF-8 (byte {e.start})") from None
    if not text.strip():
        return None
    try:
        rec = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise InvalidArgument("line", f"not JSON ({str(e)[:80]})") from None
    if not isinstance(rec, dict):
        raise InvalidArgument("line", "not a JSON object")
    body = rec.get("body")
    if not isinstance(body, str):
        raise InvalidArgument("body", "body must be a string")
    v.body(body)  # lone surrogates and the like
    size = len(body.encode())
    if maxsize != -1 and size > maxsize:
        raise InvalidArgument("body", f"body is {size} bytes, the queue takes at most {maxsize}")
    delay = _whole(rec, "delay_ms", 0, v.MAX_SECONDS * 1000, 0) or 0
    mid = rec.get("id")
    if keep_ids:
        # an id RSMQ clients make, never a field of the queue's hash (import.lua checks
        # it again: no caller of the core can write another)
        v.rsmq_id(mid, "id")
    rc = _whole(rec, "rc", 0, 2**31, 0) or 0
    fr = _whole(rec, "fr", 0, 2**53, None)
    return ImportRecord(body, delay, mid if keep_ids else None, rc, fr, line)


def read_records(
    lines: Iterable[str | bytes], keep_ids: bool, maxsize: int = -1
) -> Iterator[ImportRecord]:
    """The records of an export's lines; raises BadLines naming the bad ones only after
    reading them all (so call it once to check a file, once more to import it)."""
    bad: list[tuple[int, str]] = []
    total_bad = 0
    for n, text in enumerate(lines, 1):
        try:
            rec = parse_line(text, n, keep_ids, maxsize)
        except InvalidArgument as e:
            total_bad += 1
            if len(bad) < BAD_LINES_SHOWN:
                bad.append((n, str(e)))
            continue
        if rec is not None and not total_bad:
            yield rec
    if total_bad:
        raise BadLines(bad, total_bad)


@dataclass
class ImportReport:
    imported: int = 0
    batches: int = 0
    skipped: list[dict[str, Any]] = field(default_factory=list)  # line, id, why
    first_id: str | None = None
    last_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "imported": self.imported,
            "skipped": len(self.skipped),
            "skipped_lines": self.skipped[:BAD_LINES_SHOWN],
            "batches": self.batches,
            "first_id": self.first_id,
            "last_id": self.last_id,
        }


def check(lines: Iterable[str | bytes], keep_ids: bool = False, maxsize: int = -1) -> int:
    """How many messages the lines hold; raises BadLines if any can't be imported."""
    return sum(1 for _ in read_records(lines, keep_ids, maxsize))


def import_records(
    rsmq: RedisSMQ, qname: str, records: Iterable[ImportRecord], keep_ids: bool = False
) -> ImportReport:
    """Write records in atomic batches (IMPORT_BATCH messages, IMPORT_BATCH_BYTES of
    bodies at most); what each batch wrote or skipped goes into the report."""
    report = ImportReport()
    batch: list[ImportRecord] = []
    size = 0

    def flush() -> None:
        nonlocal size
        ids = rsmq.import_messages(qname, batch, keep_ids=keep_ids)
        report.batches += 1
        for rec, got in zip(batch, ids, strict=True):
            if got is None:
                report.skipped.append(
                    {"line": rec.line, "id": rec.id, "why": "id already in the queue"}
                )
                continue
            report.imported += 1
            report.first_id = report.first_id or got
            report.last_id = got
        batch.clear()
        size = 0

    for rec in records:
        if batch and (len(batch) >= IMPORT_BATCH or size + len(rec.body) > IMPORT_BATCH_BYTES):
            flush()
        batch.append(rec)
        size += len(rec.body)
    if batch:
        flush()
    return report
