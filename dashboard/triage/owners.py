"""Who owns a queue: the Ownership rows of a namespace, matched to queue names — a row
for the queue itself first, else the most specific pattern that matches (the longest;
then the oldest row). As of a past time (``Owners(..., at=)``): today's rows with the
audited changes since then undone, newest first (each create, edit and delete is audited
with the row's fields; an edit with the fields before it too)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from dashboard.models import AuditEntry, Ownership

#: the rows of one namespace a page reads, at most (a team has tens, not thousands)
MAX_ROWS = 2000


class Owners:
    """A namespace's ownership rows, read once, matched to many queue names."""

    def __init__(self, conn: str, ns: str, at: int | None = None) -> None:
        rows = list(Ownership.objects.filter(connection=conn, namespace=ns)[:MAX_ROWS])
        if at is not None:
            rows = _undone_since(rows, conn, ns, at)
        self.exact = {o.queue: o for o in rows if o.queue}
        self.patterns = sorted(
            (o for o in rows if o.pattern), key=lambda o: (-len(o.pattern), o.pk)
        )

    def of(self, qname: str) -> Ownership | None:
        found = self.exact.get(qname)
        if found is not None:
            return found
        return next((o for o in self.patterns if fnmatchcase(qname, o.pattern)), None)

    def summaries(self, qnames: Iterable[str]) -> dict[str, str]:
        """{queue: its owner's one line} of the queues that have one."""
        out = {}
        for q in qnames:
            o = self.of(q)
            if o is not None:
                out[q] = o.summary
        return out


def owner_of(conn: str, ns: str, qname: str, at: int | None = None) -> Ownership | None:
    return Owners(conn, ns, at).of(qname)


def _row(conn: str, ns: str, fields: dict[str, Any], target: str) -> Ownership:
    pattern = str(fields.get("pattern", ""))
    return Ownership(connection=conn, namespace=ns, pattern=pattern,
                     queue="" if pattern else target, owner=str(fields.get("owner", "")),
                     oncall=str(fields.get("oncall", "")),
                     runbook_url=str(fields.get("runbook_url", "")))  # fmt: skip


def _undone_since(rows: list[Ownership], conn: str, ns: str, at: int) -> list[Ownership]:
    """``rows`` (today's) as they were at ``at`` (epoch ms): the changes audited since,
    undone from the newest. An edit audited without its fields before (made before they
    were kept) leaves the row as it is now."""
    by_target = {o.target: o for o in rows}
    since = dt.datetime.fromtimestamp(at / 1000, dt.UTC)
    changes = AuditEntry.objects.filter(
        connection=conn, namespace=ns, at__gt=since, outcome=AuditEntry.Outcome.OK,
        action__in=("owner_create", "owner_edit", "owner_delete"),
    ).order_by("-at", "-id")[:MAX_ROWS]  # fmt: skip
    for change in changes:
        fields = change.params or {}
        target = str(fields.get("pattern") or change.queue)
        if change.action == "owner_delete":
            by_target[target] = _row(conn, ns, fields, target)
            continue
        before = fields.get("before")
        if change.action == "owner_edit" and not isinstance(before, dict):
            continue
        by_target.pop(target, None)
        if change.action == "owner_edit":
            assert isinstance(before, dict)
            was = str(before.get("pattern") or before.get("queue") or "")
            by_target[was] = _row(conn, ns, before, was)
    return list(by_target.values())
