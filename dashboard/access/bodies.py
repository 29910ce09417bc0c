"""Who reads which bodies: ``access`` is the one decision every surface that shows a body
or part of one asks (pages, htmx fragments, the API, exports, the audit log's kept
bodies, failure texts) — NONE (an observer: no body at all), MASKED (what the queue's
masking rules name replaced), CLEAR (no rule names the queue, the role is at least the
rules' clear_role, or a live reveal).

Reveals (``reveal``): a reason, a queue (or one message), minutes (RSMQ_REVEAL_MINUTES),
an audit row; they end by themselves. docs/bodies.md says what each surface shows."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from enum import IntEnum

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone

from dashboard.access import grants
from dashboard.access.roles import GROUPS, Role
from dashboard.audit import log as audit
from dashboard.models import AuditEntry, Reveal
from dashboard.web.masking import Rules, rules_for
from queues.models import Failure, FailureGroup

#: what stands where an observer would see a body
HIDDEN = "[body hidden: the observer role sees no body]"


class Level(IntEnum):
    NONE = 0
    MASKED = 1
    CLEAR = 2


@dataclass(frozen=True, slots=True)
class Bodies:
    """What one caller reads of one queue's bodies, and how to show them."""

    level: Level
    rules: Rules | None = None
    may_reveal: bool = False  # a reveal would show them clear
    until: dt.datetime | None = None  # the live reveal's end

    @property
    def masked(self) -> bool:
        return self.level == Level.MASKED

    @property
    def hidden(self) -> bool:
        return self.level == Level.NONE

    def show(self, text: str) -> str:
        """``text`` (a body, a preview of one, an error line) as this caller may read it."""
        if self.level == Level.CLEAR or not text:
            return text
        if self.level == Level.NONE or self.rules is None:
            return HIDDEN
        return self.rules.mask(text)

    def failure(self, f: Failure) -> Failure:
        """A recorded failure's error line and trace as this caller may read them (they
        quote bodies often enough)."""
        if self.level == Level.CLEAR:
            return f
        trace = tuple(self.show(line) for line in f.trace) if self.level == Level.MASKED else ()
        return dataclasses.replace(f, message=self.show(f.message), trace=trace)

    def group(self, g: FailureGroup) -> FailureGroup:
        """A failure group with its error lines as this caller may read them: an observer
        sees its type, counts and times, no line."""
        if self.level == Level.CLEAR:
            return g
        if self.level == Level.NONE:
            return dataclasses.replace(
                g, texts=(), other_texts=g.other_texts + sum(n for _, n in g.texts)
            )
        return dataclasses.replace(g, texts=tuple((self.show(t), n) for t, n in g.texts))

    def hit(self, text: str, needle: str) -> bool:
        """Whether a body search for ``needle`` counts ``text`` (a body, or the preview
        of one) as a match for this caller: only where it shows in what they read, so a
        search tells nothing of a masked part."""
        if self.level == Level.CLEAR:
            return True
        return self.level == Level.MASKED and needle in self.show(text)

    def then(self) -> str:
        return " Reveal this queue's bodies first." if self.may_reveal else ""


#: bodies as they are (no rule names the queue)
CLEAR = Bodies(Level.CLEAR)


def actor(request: HttpRequest) -> str:
    who = getattr(request, "auth", None)
    token = getattr(who, "token", None) or getattr(request, "reader_token", None)
    if token is not None:
        return f"token:{token.name}"
    return request.user.get_username() if request.user.is_authenticated else ""


def access(request: HttpRequest, place: audit.Place, queue: str, message: str = "") -> Bodies:
    """The one decision: what ``request``'s caller reads of ``queue``'s bodies (of
    ``message``'s, when a reveal names one message)."""
    return at(request, place.conn.name, place.ns, queue, message)


def at(
    request: HttpRequest, connection: str, namespace: str, queue: str, message: str = ""
) -> Bodies:
    """``access`` where a row names the place (the audit log's rows)."""
    who = grants.role_at(request, connection, namespace, queue)
    if who < Role.VIEWER:
        return Bodies(Level.NONE)
    rules = rules_for(queue)
    if rules is None or rules.clear_role in GROUPS and who >= GROUPS[rules.clear_role]:
        return CLEAR
    may = who >= GROUPS[rules.reveal_role]
    name = actor(request)
    until = live(name, connection, namespace, queue, message) if may and name else None
    if until is not None:
        return Bodies(Level.CLEAR, rules, True, until)
    return Bodies(Level.MASKED, rules, may)


def consumer(who: Role, queue: str) -> Rules | None:
    """What a consumer's receive masks: nothing for a token whose role may reveal the
    queue's bodies (a consumer processes them, and its role could read them anyway:
    masking would only corrupt its traffic), the rules otherwise. Cheap: one cached
    lookup, no database."""
    rules = rules_for(queue)
    if rules is None or who >= GROUPS[rules.reveal_role]:
        return None
    return rules


def live(
    name: str, connection: str, namespace: str, queue: str, message: str = ""
) -> dt.datetime | None:
    """The end of ``name``'s live reveal of ``queue`` (or of ``message`` in it), if any."""
    found = (
        Reveal.objects.filter(
            username=name,
            connection=connection,
            namespace=namespace,
            queue=queue,
            until__gt=timezone.now(),
            message__in=("", message) if message else ("",),
        )
        .order_by("-until")
        .values_list("until", flat=True)
        .first()
    )
    return found


def minutes() -> float:
    return float(settings.RSMQ_REVEAL_MINUTES)


def reveal(
    request: HttpRequest, place: audit.Place, queue: str, reason: str, message: str = ""
) -> Reveal:
    """Show ``queue``'s (or ``message``'s) masked fields clear to the caller for
    RSMQ_REVEAL_MINUTES; audited: who, queue, reason, until."""
    now = timezone.now()
    until = now + dt.timedelta(minutes=minutes())
    name = actor(request)
    row = Reveal.objects.create(
        username=name, connection=place.conn.name, namespace=place.ns, queue=queue,
        message=message, reason=reason, at=now, until=until,
    )  # fmt: skip
    audit.record(
        request, place, "reveal", AuditEntry.Outcome.OK, queue=queue,
        ids=[message] if message else [], detail=reason,
        params={"until": until.isoformat(timespec="seconds"), "reason": reason,
                "message": message},
    )  # fmt: skip
    return row


def groups(
    request: HttpRequest, place: audit.Place, found: list[FailureGroup]
) -> list[FailureGroup]:
    """Failure groups (of a queue and its dead-letter queue) with their error lines as
    ``request``'s caller may read each group's queue's bodies."""
    seen: dict[str, Bodies] = {}
    out = []
    for g in found:
        if g.where not in seen:
            seen[g.where] = access(request, place, g.where)
        out.append(seen[g.where].group(g))
    return out
