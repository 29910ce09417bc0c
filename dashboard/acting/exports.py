"""Export and import from the console and the API, over the core's JSON Lines
(``queues/transfer.py``, the CLI's ``rsmq message export|import``): the pages
(views/transfer.py) and the API (api/operations.py) both use this module.

An export is streamed: the lines of a state or of a filter's matches
(``message_filter``: ``browse_kwargs()`` handed to browse whole), read in browse's bounded
calls and sent in pieces of about ``EXPORT_CHUNK`` bytes, so a 1,000,000-message export
holds one browse page and one piece in the web process, never the file (bench/RESULTS.md).
A failure mid-way ends the file with an ``{"error": …}`` line, which an import refuses by
its number: a cut export can't be imported as if it were whole.

An import through the page or the API takes a file of at most ``IMPORT_MAX_BYTES``; a
larger one is the CLI's (``rsmq message import``), which reads any size."""

from __future__ import annotations

import io
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TypedDict, cast

from django.conf import settings
from django.db import DatabaseError
from django.http import StreamingHttpResponse

from dashboard.access.bodies import Bodies, Level
from dashboard.acting.message_filter import MessageFilter
from dashboard.models import AuditEntry
from queues import InvalidArgument, RedisSMQ, transfer

log = logging.getLogger(__name__)

#: bytes of lines an export gathers before it hands a piece to the server
EXPORT_CHUNK = 64 * 1024
#: the largest file an import through the page or the API takes (larger: the CLI); under
#: the served process's body limit (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB) with room for
#: the form's other fields
IMPORT_MAX_BYTES = 2 * 1024 * 1024
#: what a page's import request may hold besides its file (the form's other fields, the
#: multipart framing)
FORM_BYTES = 64 * 1024
#: an export's media type: one JSON document a line
JSONL = "application/x-ndjson; charset=utf-8"


def too_large(size: int) -> InvalidArgument:
    return InvalidArgument(
        "file",
        f"file is {size:,} bytes; an import here takes at most {IMPORT_MAX_BYTES:,} bytes"
        " (use `rsmq message import` for a larger file)",
    )


def export_pieces(
    rsmq: RedisSMQ, qname: str, flt: MessageFilter, shown: Bodies | None = None,
    audited: list[AuditEntry] | None = None,
) -> Iterator[bytes]:  # fmt: skip
    """The export's bytes, in pieces of about EXPORT_CHUNK: each body as ``shown`` lets
    its reader see it (None: as it is); at its end, how many lines went out is written
    to its audit row (``audited``'s, once it holds it)."""
    piece: list[bytes] = []
    size = 0
    n = 0
    show = None if shown is None or shown.level == Level.CLEAR else _shown(shown, flt.contains)
    try:
        for line in transfer.export_lines(rsmq, qname, show=show, **flt.browse_kwargs()):
            n += 1
            data = line.encode("utf-8", "surrogatepass")
            piece.append(data)
            size += len(data)
            if size >= EXPORT_CHUNK:
                yield b"".join(piece)
                piece.clear()
                size = 0
    except Exception as e:  # Redis gone, the queue deleted: the file says so at its end
        log.warning("export of %s stopped: %s", qname, e)
        piece.append((json.dumps({"error": f"export stopped: {e}"}) + "\n").encode())
    if piece:
        yield b"".join(piece)
    _count(audited, n)


def _shown(shown: Bodies, needle: str) -> Callable[[str], str | None]:
    """Each body as the reader may see it; a search's match only where it shows there."""

    def show(body: str) -> str | None:
        text = shown.show(body)
        return text if needle in text else None

    return show


def _count(audited: list[AuditEntry] | None, n: int) -> None:
    """An export's audit row gets its count at the end (unknown before)."""
    if not audited:
        return
    try:
        AuditEntry.objects.filter(pk=audited[0].pk).update(count=n)
    except DatabaseError:
        log.exception("the count of export row %s not written", audited[0].pk)


def bodies_param(shown: Bodies) -> str:
    """What an export's audit row says of its bodies: "masked", "clear" or "none"."""
    return {Level.NONE: "none", Level.MASKED: "masked", Level.CLEAR: "clear"}[shown.level]


def filename(qname: str, flt: MessageFilter) -> str:
    words = [qname, flt.state] + [f"{k}-{v}" for k, v in flt.query().items() if k != "state"]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(words))[:120] + ".jsonl"


class Busy(Exception):
    """Every export this web process allows is running: try again when one ends."""

    retry_after = 30

    def __init__(self) -> None:
        n = slots()
        super().__init__(
            f"{n} export{'s are' if n != 1 else ' is'} already running in this web process"
            f" (at most {n} at a time: RSMQ_EXPORTS); try again when"
            f" {'one ends' if n != 1 else 'it ends'}, or use `rsmq message export`"
        )


def slots() -> int:
    """How many exports one web process streams at once (RSMQ_EXPORTS). An export holds
    no thread while it goes out (dashboard/serving/app.py ``Console.stream``: a thread
    makes a piece once the client took the last one), but each holds a browse page and a
    piece in memory; one whose client takes nothing for RSMQ_EXPORT_IDLE seconds is
    dropped, its slot given back."""
    return max(1, int(settings.RSMQ_EXPORTS))


_running = 0
_running_lock = threading.Lock()


class Held:
    """An export's pieces while it holds one of the process's export slots: the slot is
    given back when the response is closed (its end, the client gone) or dropped."""

    def __init__(self, pieces: Iterator[bytes]) -> None:
        global _running
        with _running_lock:
            if _running >= slots():
                raise Busy()
            _running += 1
        self.pieces, self.held = pieces, True

    def __iter__(self) -> Iterator[bytes]:
        return self.pieces

    def close(self) -> None:
        global _running
        if self.held:
            self.held = False
            with _running_lock:
                _running -= 1
        close = getattr(self.pieces, "close", None)
        if close:
            close()

    def __del__(self) -> None:
        if getattr(self, "held", False):
            self.close()


def export_response(
    rsmq: RedisSMQ, qname: str, flt: MessageFilter, shown: Bodies | None = None,
    audited: list[AuditEntry] | None = None,
) -> StreamingHttpResponse:  # fmt: skip
    """The export as a streamed download (no length: it is not known before the end).
    Busy when the process streams ``slots()`` exports already."""
    pieces = export_pieces(rsmq, qname, flt, shown, audited)
    response = StreamingHttpResponse(Held(pieces), content_type=JSONL)
    response["Content-Disposition"] = f'attachment; filename="{filename(qname, flt)}"'
    response["Cache-Control"] = "no-store"
    return response


def _lines(data: bytes) -> Iterable[bytes]:
    """A file's lines split at b"\\n" only (a JSON string may hold U+2028 or a CR escape's
    text, never a raw newline), numbered as an editor numbers them."""
    return io.BytesIO(data)


def check_file(rsmq: RedisSMQ, qname: str, data: bytes, keep_ids: bool) -> int:
    """How many messages the file holds; InvalidArgument ("file") when it is too large,
    BadLines naming the bad lines by number; nothing is written."""
    if len(data) > IMPORT_MAX_BYTES:
        raise too_large(len(data))
    maxsize = rsmq.get_queue_attributes(qname).maxsize
    return transfer.check(_lines(data), keep_ids, maxsize)


class ImportSkip(TypedDict):
    """A message an import did not write: its line, its id, why."""

    line: int
    id: str | None
    why: str


class ImportReport(TypedDict):
    """What an import wrote and skipped (the page's words, the API's answer, the audit
    row's ``report``): the core's report (queues.transfer.ImportReport.as_dict) and how
    many messages the file held."""

    lines: int
    imported: int
    skipped: int
    skipped_lines: list[ImportSkip]
    batches: int
    first_id: str | None
    last_id: str | None


class ImportParams(TypedDict, total=False):
    """An import's audit params, the page's and the API's: the file (its size, its name
    when uploaded from the page), whether ids were kept, and once written, the report."""

    keep_ids: bool
    bytes: int
    file: str
    report: ImportReport


def import_file(
    rsmq: RedisSMQ,
    qname: str,
    data: bytes,
    keep_ids: bool,
    admit: Callable[[int], None] | None = None,
) -> ImportReport:
    """Check every line (``check_file``: nothing written if one is bad), then write the
    messages in atomic batches; the report says exactly what was written and skipped.
    ``admit``: told how many messages the file holds before any is written (an API
    token's rate counts them); what it raises stops the import, nothing written."""
    lines = check_file(rsmq, qname, data, keep_ids)
    if admit is not None:
        admit(lines)
    maxsize = rsmq.get_queue_attributes(qname).maxsize
    report = transfer.import_records(
        rsmq, qname, transfer.read_records(_lines(data), keep_ids, maxsize), keep_ids
    )
    return cast(ImportReport, {"lines": lines, **report.as_dict()})


def report_text(report: ImportReport) -> str:
    """An import's report in words, for the page and the audit row."""
    n, skipped = report["imported"], report["skipped"]
    text = f"Imported {n} message{'' if n == 1 else 's'} in {report['batches']} batch"
    text += "es" if report["batches"] != 1 else ""
    if n:
        text += f" (ids {report['first_id']} … {report['last_id']})"
    text += "."
    if skipped:
        lines = ", ".join(str(s["line"]) for s in report["skipped_lines"])
        more = "" if skipped <= len(report["skipped_lines"]) else " …"
        text += f" Skipped {skipped}: their ids are already in the queue (lines {lines}{more})."
    return text
