"""Where a request looks: a configured Redis connection and one of its namespaces.

A ``Place`` is a configured Redis connection and one of its namespaces, resolved from the
URL's ``conn`` and ``ns``. Whether the request's user may look or act there is
dashboard/access/guard.py's (``place_for``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import Http404
from django.urls import reverse

from dashboard.places.connections import Connection, connections, get_async_rsmq, get_rsmq
from queues import QueueNotFound, RsmqError
from queues import validation as v
from queues.console import AsyncConsoleRSMQ, ConsoleRSMQ
from queues.models import MessageInfo, QueueStats


@dataclass(frozen=True, slots=True)
class Place:
    """Where a page looks: a configured Redis connection and one of its namespaces."""

    conn: Connection
    ns: str
    rsmq: ConsoleRSMQ

    def url(self, name: str, *args: str) -> str:
        return reverse(name, args=(self.conn.name, self.ns, *args))

    @property
    def aio(self) -> AsyncConsoleRSMQ:
        """The same place's pipelined client, for the server's event loop."""
        return get_async_rsmq(self.conn, self.ns)


def resolve(conn: str | None = None, ns: str | None = None) -> Place:
    """The named place; without a name, the first connection's first namespace."""
    configured = connections()
    if conn is None:
        conn, ns = configured[0].name, configured[0].namespaces[0]
    for c in configured:
        if c.name == conn and ns in c.namespaces:
            return Place(c, ns, get_rsmq(c, ns))
    raise not_configured(conn, ns)


def not_configured(conn: str | None, ns: str | None) -> Http404:
    return Http404(f"No connection {conn!r} with namespace {ns!r} is configured.")


def configured() -> list[tuple[str, str]]:
    """Every (connection name, namespace) configured, in order."""
    return [(c.name, ns) for c in connections() for ns in c.namespaces]


def resolve_or_first(conn: str, ns: str) -> Place:
    """The named place, or the first one if it is no longer configured (a stored row's
    place, for the audit log)."""
    return resolve(conn, ns) if (conn, ns) in configured() else resolve()


def queue_stats(place: Place, qname: str) -> QueueStats:
    """One queue's stats; a name that is not one, or a queue that is gone: a 404."""
    try:
        v.qname(qname)
    except RsmqError:
        raise Http404(f"No queue {qname!r}: not a valid queue name.") from None
    stats = place.rsmq.queue_stats([qname])
    if not stats:
        raise QueueNotFound(qname)
    return stats[0]


def message(place: Place, qname: str, msg_id: str) -> MessageInfo:
    """One message as the message page shows it; gone (or never there): a 404."""
    found = find_message(place, qname, msg_id)
    if found is None:
        raise Http404(not_here(qname, msg_id))
    return found


def not_here(qname: str, msg_id: str) -> str:
    # Nothing tells a message received and deleted from an id that was never there.
    return f"Message {msg_id} is not in queue {qname} (deleted, moved or never there)."


def find_message(place: Place, qname: str, msg_id: str) -> MessageInfo | None:
    """The message, or None if it left the queue; a URL naming no queue or id: a 404."""
    v.qname(qname)
    if not v.ID_RE.fullmatch(msg_id):
        raise Http404("Not a message id.")
    return place.rsmq.get_message(qname, msg_id)
