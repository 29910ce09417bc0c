"""Who owns a queue: the Ownership rows of a namespace, matched to queue names — a row
for the queue itself first, else the most specific pattern that matches (the longest;
then the oldest row)."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from dashboard.models import Ownership

#: the rows of one namespace a page reads, at most (a team has tens, not thousands)
MAX_ROWS = 2000


class Owners:
    """A namespace's ownership rows, read once, matched to many queue names."""

    def __init__(self, conn: str, ns: str) -> None:
        rows = list(Ownership.objects.filter(connection=conn, namespace=ns)[:MAX_ROWS])
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


def owner_of(conn: str, ns: str, qname: str) -> Ownership | None:
    return Owners(conn, ns).of(qname)
