"""The one way both pages run an action: the button's value names an ``Action`` in the
action table (dashboard/acting/actions.py: the role it needs, its name in the audit log) and a
handler in the page's table of handlers (the same keys); the handler does
the work through ``act`` (outcome to the operator, row to the audit log) and returns a
``Result``; ``respond`` turns the result into the page again, a redirect or a 422."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.db import DatabaseError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect

from dashboard.access.guard import authorize, place_for
from dashboard.access.roles import Action, Role
from dashboard.acting import undo as undos
from dashboard.acting.actions import Actions
from dashboard.audit import log as audit
from dashboard.models import AuditEntry
from dashboard.places.place import Place
from dashboard.views.common import UNPROCESSABLE, go
from dashboard.web.errors import NotAudited
from dashboard.web.htmx import HtmxHttpRequest
from queues import RsmqError
from queues import validation as v

#: a ticked message whose id is no RSMQ id (another client's): its exact zset member, hex
MEMBER = "member:"


def member(value: str) -> bytes | None:
    """The zset member a ``MEMBER`` value names, or None."""
    if not value.startswith(MEMBER):
        return None
    try:
        return bytes.fromhex(value[len(MEMBER) :])
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class Posted:
    """An action as posted: who, where, on which queue (and message)."""

    request: HtmxHttpRequest
    place: Place
    qname: str
    action: str  # its name in the audit log
    msg_id: str = ""

    @property
    def data(self) -> Any:
        return self.request.POST

    def selected_ids(self, members: bool = False) -> list[str]:
        """The ticked messages; anything that is not a message id is no selection (nor,
        unless ``members``, a listed message whose id is no RSMQ id: ``MEMBER`` + hex)."""
        return [
            i
            for i in self.request.POST.getlist("ids")
            if v.ID_RE.fullmatch(i) or (members and member(i) is not None)
        ]

    def act(
        self,
        work: Callable[[], tuple[str, int | None]],
        ids: Iterable[str] = (),
        params: Mapping[str, Any] | None = None,
        kept: undos.Keep | None = None,
    ) -> bool:
        """Run ``work``, report its outcome to the operator and write the audit row:
        before ``work`` runs (if it can't be written, nothing runs: 503) and finished
        after it (if that fails, the outcome stands: audit/log.py); ``kept``: what the
        action keeps for its Undo (the answer then offers one)."""
        ids = list(ids)
        try:
            row = audit.start(self.place, self.action, user=self.request.user, queue=self.qname,
                              ids=ids, params=params)  # fmt: skip
        except NotAudited:
            undos.discard(self.place, kept)
            raise
        try:
            text, count = work()
        except RsmqError as e:
            undos.discard(self.place, kept)
            audit.finish(row, AuditEntry.Outcome.ERROR, params=params, detail=str(e))
            messages.error(self.request, str(e))
            return False
        except Exception as e:
            # Redis down mid-action: audit it, then let the middleware answer 503.
            audit.finish(row, AuditEntry.Outcome.ERROR, params=params, detail=str(e))
            raise
        audit.finish(row, AuditEntry.Outcome.OK, count=count, params=params, detail=text)
        try:
            entry = undos.remember(self.place, kept, row, count) if kept else None
        except DatabaseError:  # its stash expires by itself: the outcome stands
            entry = None
        if entry is None:
            undos.discard(self.place, kept)
        if entry is not None:
            tag = f"{undos.TAG} {entry.queue} {entry.token} {entry.count}"
            messages.success(self.request, text, extra_tags=tag)
        elif kept is not None and kept.why and count:
            messages.success(self.request, f"{text} Not kept for Undo: {kept.why}.")
        else:
            messages.success(self.request, text)
        return True

    def require(self, role: Role) -> None:
        """Go on only if the user may act at ``role`` (else 403, audited as denied)."""
        authorize(self.request, self.place, role, self.action, self.qname)

    def refuse(self, text: str) -> Result:
        """Input the action can't run with: said to the operator, audited as invalid."""
        messages.error(self.request, text)
        self._audit(AuditEntry.Outcome.INVALID, [], None, None, text)
        return DONE

    def refused(self, invalid: Mapping[str, forms.Form]) -> None:
        """Forms that came back with errors: audited as invalid, with what they say."""
        errors = [
            f"{name}: {error}" if name != "__all__" else str(error)
            for form in invalid.values()
            for name, errs in form.errors.items()
            for error in errs
        ]
        if errors:
            self._audit(AuditEntry.Outcome.INVALID, [], None, None, "; ".join(errors))

    def _audit(
        self,
        outcome: str,
        ids: list[str],
        count: int | None,
        params: Mapping[str, Any] | None,
        detail: str,
    ) -> AuditEntry:
        return audit.record(
            self.request, self.place, self.action, outcome, self.qname, ids, count, params, detail
        )


@dataclass(frozen=True, slots=True)
class Result:
    """What an action leaves for the answer: nothing (show the page again), forms with
    errors (the page again, 422), another page to go to, or what it already read that
    the page shows (so the page need not read it again)."""

    invalid: dict[str, forms.Form] = field(default_factory=dict)
    go: str = ""
    shown: Any = None


DONE = Result()
Handler = Callable[[Posted], Result]


Handlers = Mapping[str, Handler]
Render = Callable[[int, Result], HttpResponse]


def posted(
    request: HtmxHttpRequest,
    actions: Actions,
    handlers: Handlers,
    conn: str,
    ns: str,
    qname: str,
    msg_id: str = "",
) -> tuple[Posted, Handler]:
    """The action the button names (and its handler), at a place where the user may run
    it."""
    name = request.POST.get("action", "")
    action: Action | None = actions.get(name)
    handler = handlers.get(name)
    if action is None or handler is None:
        raise Http404(f"No action {name!r}.")
    place = place_for(request, conn, ns, action.role, action.audit_name, qname)
    return Posted(request, place, qname, action.audit_name, msg_id), handler


def respond(post: Posted, result: Result, here: str, render: Render) -> HttpResponse:
    """htmx gets the page re-rendered (or told where to go); a plain form a redirect."""
    if result.invalid:
        post.refused(result.invalid)
        return render(UNPROCESSABLE, result)
    if result.go:
        return go(post.request, result.go)
    if post.request.htmx:
        return render(200, result)
    return redirect(here)


def plural(n: int, word: str) -> str:
    """ "1 message", "5,200 messages": a count as the pages write it."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
