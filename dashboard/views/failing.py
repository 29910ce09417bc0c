"""The Failing view: a queue's failing messages grouped by error type, like Sidekiq's
Retries and Dead tabs (what the worker recorded with ``record_failure``): each group's
error lines, first and last failure, a few ids, and retry / delete of the group. The
same as JSON for the API is api/reads.py's ``failing``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_POST, require_safe

from dashboard.access import bodies, grants
from dashboard.access.guard import place_for
from dashboard.acting import undo as undos
from dashboard.acting.actions import FAILING_ACTIONS
from dashboard.places.place import Place
from dashboard.views.actions import DONE, Handler, Handlers, Posted, Result, plural, posted, respond
from dashboard.views.common import back, context, current, query_of, template
from dashboard.views.forms import FailureGroupForm
from dashboard.views.queue import names_and_sources
from dashboard.web.htmx import HtmxHttpRequest
from queues import validation as v
from queues.errors import RsmqError
from queues.models import FailureGroup

#: groups a section shows per page (a queue keeps histories of limits.FAILURE_MESSAGES at most,
#: so there are at most that many groups; the read is bounded, the page too)
GROUPS_PER_PAGE = 20


@login_required
@require_safe
def failing(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    place = place_for(request, conn, ns, queue=qname)
    v.qname(qname)  # a bad name in the URL: the middleware answers 404
    return render_failing(request, place, qname, request.GET)


def render_failing(
    request: HtmxHttpRequest,
    place: Place,
    qname: str,
    params: QueryDict,
    status: int = 200,
    invalid: Mapping[str, forms.Form] | None = None,
) -> HttpResponse:
    groups = place.rsmq.failure_groups(qname)
    # The queues whose policy sends here: then this is a dead-letter queue, and says so.
    sources = names_and_sources(request, place, qname)[1]
    retry = bodies.groups(request, place, groups.of_state("retry"))
    dead = bodies.groups(request, place, groups.of_state("dead"))
    ctx = context(
        place,
        qname=qname,
        failing=groups,
        dlq_sources=sources,
        dlq_seen=bool(groups.dlq and grants.visible(request, place, [groups.dlq])),
        retry=Paginator(retry, GROUPS_PER_PAGE).get_page(params.get("retry_page")),
        dead=Paginator(dead, GROUPS_PER_PAGE).get_page(params.get("dead_page")),
        # the dead letters in this queue itself (it is a dead-letter queue)
        dead_here=sum(g.count for g in dead if g.where == qname),
        params=params,
        now=groups.now,
        act=place.url("rsmq-failing-action", qname),
        # the queues whose groups' delete (or dead retry) would be kept for an Undo
        # (RSMQ_UNDO_MAX_MB): the confirmation says "this cannot be undone" of the others
        undo_fits={w for w in {g.where for g in groups.groups} if undos.fits(place, w)},
        undo_hours=undos.hours(),
        current=current(request),
        # the group whose form came back with errors: its form stays open
        refused={
            k: f.data.get(k) for f in (invalid or {}).values() for k in ("type", "state", "where")
        },
        group_errors=[
            f"{name}: {e}" if name != "__all__" else str(e)
            for form in (invalid or {}).values()
            for name, errs in form.errors.items()
            for e in errs
        ],
    )
    return render(request, template(request, "failing.html"), ctx, status=status)


@login_required
@require_POST
def failing_action(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    post, handler = posted(request, FAILING_ACTIONS, FAILING_HANDLERS, conn, ns, qname)
    here = back(request, post.place.url("rsmq-queue-failing", qname))

    def page(status: int, result: Result) -> HttpResponse:
        params = query_of(here)
        return render_failing(
            request, post.place, qname, params, status=status, invalid=result.invalid
        )

    return respond(post, handler(post), here, page)


GroupCall = Callable[..., int]


def _on_group(
    say: Callable[[int, int, FailureGroup], str], call: GroupCall, undoable: Callable[[str], bool]
) -> Handler:
    """An action on one failure group, at most the count the page showed (the one the
    confirmation stated), once the queue's name is typed. Acts directly in bounded
    steps; a paced job would start here instead. ``undoable(state)``: whether it removes
    messages from where they are (then what it removes is kept for an Undo, when it fits
    RSMQ_UNDO_MAX_MB: ``call`` takes ``keep=``)."""

    def run(post: Posted) -> Result:
        form = FailureGroupForm(post.data, qname=post.qname)
        if not form.is_valid():
            return Result(invalid={"group_form": form})
        d = form.cleaned_data
        group = FailureGroup(d["type"], d["state"], d["where"], d["count"], ())
        rsmq, kept = post.place.rsmq, None
        extra: dict[str, Any] = {}
        if undoable(group.state):
            try:  # read once: what the stash is sized for is what the action takes
                where, ids = rsmq.failure_group_ids(
                    post.qname, group.type, group.state, group.where, limit=group.count
                )
            except RsmqError:
                pass  # the action itself meets it again, and answers it (audited)
            else:
                kept = undos.keep(post.place, post.action, where, ids=ids)
                extra = {"ids": ids, "keep": kept.token} if kept.token else {"ids": ids}
                group = FailureGroup(group.type, group.state, where, group.count, ())

        def work() -> tuple[str, int | None]:
            n = call(rsmq, post.qname, group.type, group.state, group.where, group.count, **extra)
            return say(n, group.count, group), n

        params = {k: d[k] for k in ("type", "state", "where", "count")}
        post.act(work, params=params, kept=kept)
        return DONE

    return run


def _retried(n: int, asked: int, g: FailureGroup) -> str:
    if g.state == "dead":
        text = (
            f"Sent {plural(n, 'dead letter')} ({g.type}) from {g.where} back to the queue "
            "each came from, to start over."
        )
        stayed = "in flight, delayed, gone, or their queue is gone or too small"
    else:
        text = f"Retried {plural(n, 'message')} ({g.type}) in {g.where}: visible now."
        stayed = "gone"
    if n < asked:
        text += f" {asked - n} of the {asked} stayed ({stayed})."
    return text


def _deleted(n: int, asked: int, g: FailureGroup) -> str:
    text = f"Deleted {plural(n, 'message')} ({g.type}) from {g.where}."
    if n < asked:
        text += f" {asked - n} of the {asked} had already left it."
    return text


# The button's value → its handler (its role and audit name: dashboard/acting/actions.py).
FAILING_HANDLERS: Handlers = {
    # a dead group's retry moves its dead letters away (a redrive); a retry group's stays
    "retry_group": _on_group(
        _retried,
        lambda r, q, t, state, where, n, **k: r.retry_failure_group(q, t, state, where, n, **k),
        lambda state: state == "dead",
    ),
    "delete_group": _on_group(
        _deleted,
        lambda r, q, t, state, where, n, **k: r.delete_failure_group(q, t, state, where, n, **k),
        lambda state: True,
    ),
}
