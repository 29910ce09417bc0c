"""The queue page's actions: one POST view, the button's value picks the handler."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.views.decorators.http import require_POST

from dashboard.access.guard import destination
from dashboard.access.roles import Role
from dashboard.acting import exports
from dashboard.acting import flow as flows
from dashboard.acting import undo as undos
from dashboard.acting.actions import QUEUE_ACTIONS
from dashboard.views.actions import (
    DONE,
    Handler,
    Handlers,
    Posted,
    Result,
    member,
    plural,
    posted,
    respond,
)
from dashboard.views.common import back, query_of
from dashboard.views.forms import (
    ConfirmNameForm,
    FlowForm,
    ImportForm,
    MoveForm,
    PolicyForm,
    QueueAttributesForm,
    RedriveForm,
    SendForm,
    UndoForm,
)
from dashboard.views.queue import render_queue
from dashboard.web.htmx import HtmxHttpRequest
from queues import InvalidArgument, RedisSMQ
from queues.models import LIST_STATES


@login_required
@require_POST
def queue_action(request: HtmxHttpRequest, conn: str, ns: str, qname: str) -> HttpResponse:
    post, handler = posted(request, QUEUE_ACTIONS, QUEUE_HANDLERS, conn, ns, qname)
    here = back(request, post.place.url("rsmq-queue", qname))

    def page(status: int, result: Result) -> HttpResponse:
        params = query_of(here)
        return render_queue(
            request, post.place, qname, params, status=status, invalid=result.invalid
        )

    return respond(post, handler(post), here, page)


def _send(post: Posted) -> Result:
    form = SendForm(post.data)
    if not form.is_valid():
        return Result(invalid={"send_form": form})
    body, delay = form.cleaned_data["body"], form.cleaned_data["delay"]

    def work() -> tuple[str, int | None]:
        mid = post.place.rsmq.send_message(post.qname, body, delay=delay)
        return f"Sent message {mid}.", 1

    params = {"delay": delay, "bytes": len(body.encode())}
    return DONE if post.act(work, params=params) else Result(invalid={"send_form": form})


def _edit(post: Posted) -> Result:
    form = QueueAttributesForm(post.data)
    if not form.is_valid():
        return Result(invalid={"attributes_form": form})
    d = form.cleaned_data

    def work() -> tuple[str, int | None]:
        post.place.rsmq.set_queue_attributes(
            post.qname, vt=d["vt"], delay=d["delay"], maxsize=d["maxsize"]
        )
        return f"Saved: vt {d['vt']} s, delay {d['delay']} s, maxsize {d['maxsize']}.", None

    post.act(work, params=d)
    return DONE


def _on_selection(
    verb: str, call: Callable[..., int], members: bool = False, undoable: str = ""
) -> Handler:
    """``undoable``: the action keeps what it removes for an Undo (``call`` takes
    ``keep=``), named so in the stash."""

    def run(post: Posted) -> Result:
        ids = post.selected_ids(members)
        if not ids:
            return post.refuse("Select at least one message.")
        kept = None
        if undoable:
            wanted = [member(i) or i for i in ids]
            kept = undos.keep(post.place, undoable, post.qname, ids=wanted)

        def work() -> tuple[str, int | None]:
            extra: dict[str, Any] = {"keep": kept.token} if kept else {}
            n = call(post.place.rsmq, post.qname, ids, **extra)
            text = f"{verb.capitalize()} {plural(n, 'message')}."
            if n < len(ids):
                text += f" {len(ids) - n} had already left the queue."
            return text, n

        post.act(work, ids=ids, kept=kept)
        return DONE

    return run


def _delete_selected(rsmq: RedisSMQ, qname: str, ids: list[str], keep: str | None = None) -> int:
    """Ids as typed are checked strictly; a listed message whose id is no RSMQ id (another
    client's) is deleted by its exact member, as the page listed it."""
    raw = [m for m in map(member, ids) if m is not None]
    plain = [i for i in ids if member(i) is None]
    return (rsmq.delete_messages(qname, plain, keep=keep) if plain else 0) + (
        rsmq.delete_members(qname, raw, keep=keep) if raw else 0
    )


def _move_selected(post: Posted) -> Result:
    form = MoveForm(post.data)
    ids = post.selected_ids()
    if not form.is_valid():
        return Result(invalid={"move_form": form})
    if not ids:
        return post.refuse("Select at least one message.")
    to, keep = form.cleaned_data["to"], form.cleaned_data["keep_counts"]
    kept = undos.keep(post.place, "move", post.qname, ids=ids, to=to)

    def work() -> tuple[str, int | None]:
        destination(post.request, post.place, to)
        n = post.place.rsmq.move_messages(post.qname, to, ids, keep_counts=keep, keep=kept.token)
        text = f"Moved {plural(n, 'message')} to {to}."
        if n < len(ids):
            left = len(ids) - n
            text += f" {left} {'was' if left == 1 else 'were'} gone or too large for {to}."
        return text, n

    post.act(work, ids=ids, params={"to": to, "keep_counts": keep}, kept=kept)
    return DONE


def _on_state(verb: str, call: Callable[..., int], undoable: str = "") -> Handler:
    def run(post: Posted) -> Result:
        state = post.data.get("state", "")
        if state not in LIST_STATES:
            return post.refuse(f"state must be one of {', '.join(LIST_STATES)}.")
        # One guard for every whole-state action, checked here whatever the page asked.
        if not all_confirmed(post):
            return post.refuse(
                f"Type {post.qname} exactly to {verb.removesuffix('d')} every message."
            )

        kept = undos.keep(post.place, undoable, post.qname) if undoable else None

        def work() -> tuple[str, int | None]:
            extra: dict[str, Any] = {"keep": kept.token} if kept else {}
            n = call(post.place.rsmq, post.qname, state, **extra)
            return f"{verb.capitalize()} {plural(n, 'message')} ({state}).", n

        post.act(work, params={"state": state}, kept=kept)
        return DONE

    return run


def all_confirmed(post: Posted) -> bool:
    """Whether the queue's name was typed to act on a whole state (``all-confirm``): the
    guard of purge and of deleting the queue, for requeue all and delete all too."""
    return ConfirmNameForm(post.data, qname=post.qname, prefix="all").is_valid()


def _confirmed(
    prefix: str,
    work: Callable[..., tuple[str, int | None]],
    then: str = "",
    undoable: str = "",
) -> Handler:
    """A destructive action: it runs once the queue's name is typed; ``then``: the page
    to go to after it (the queue page may be gone); ``undoable``: it keeps what it
    removes for an Undo (``work`` then takes the stash's token)."""

    def run(post: Posted) -> Result:
        form = ConfirmNameForm(post.data, qname=post.qname, prefix=prefix)
        if not form.is_valid():
            return Result(invalid={f"{prefix}_form": form})
        kept = undos.keep(post.place, undoable, post.qname) if undoable else None
        done = post.act(lambda: work(post, kept.token) if kept else work(post), kept=kept)
        if done and then:
            return Result(go=post.place.url(then))
        return DONE

    return run


def _purge(post: Posted, keep: str | None = None) -> tuple[str, int | None]:
    n = post.place.rsmq.purge_queue(post.qname, keep=keep)
    return f"Purged {plural(n, 'message')} from {post.qname}.", n


def _delete_queue(post: Posted, keep: str | None = None) -> tuple[str, int | None]:
    # Its stats read even when its counters are spoiled: deleting is how that is cleaned up.
    stats = post.place.rsmq.queue_stats([post.qname])
    msgs = stats[0].msgs if stats else 0
    post.place.rsmq.delete_queue(post.qname, keep=keep)
    return f"Deleted queue {post.qname} and its {plural(msgs, 'message')}.", msgs


def _clean_orphans(post: Posted) -> tuple[str, int | None]:
    o = post.place.rsmq.clean_orphans(post.qname)
    if o.fields is None:
        return f"{post.qname}'s hash has too many fields to list in one short call.", 0
    gone = plural(o.fields, "orphaned message field")
    return f"Deleted {gone} ({o.bytes:,} bytes) from {post.qname}.", o.fields


def _clean_leftover(post: Posted) -> tuple[str, int | None]:
    if post.place.rsmq.clean_leftover_queue(post.qname):
        return f"Deleted the left-over hash of {post.qname}.", 1
    return f"{post.qname} is no left-over hash (it is in the queue set, or has messages).", 0


def _policy(post: Posted) -> Result:
    form = PolicyForm(post.data)
    if not form.is_valid():
        return Result(invalid={"policy_form": form})
    dlq, maxrc = form.cleaned_data["dlq"], form.cleaned_data["maxrc"]

    def work() -> tuple[str, int | None]:
        if not dlq:
            post.place.rsmq.clear_dead_letter_policy(post.qname)
            return "Dead-letter policy removed.", None
        post.place.rsmq.set_dead_letter_policy(post.qname, dlq, maxrc)
        return f"Messages received {maxrc} times now go to {dlq}.", None

    if not post.act(work, params={"dlq": dlq, "maxrc": maxrc}):
        return Result(invalid={"policy_form": form})
    return DONE


def _redrive(post: Posted) -> Result:
    """On a dead-letter queue (one some queue's policy names) an operator's action; on
    any other queue a bulk move of the whole queue: the admin's. Both confirmed like
    purge: the page states the count, the queue's name typed."""
    dead_letters = bool(post.place.rsmq.dead_letter_sources(post.qname))
    if not dead_letters:
        post.require(Role.ADMIN)
    form = RedriveForm(post.data, qname=post.qname)
    if not form.is_valid():
        return Result(invalid={"redrive_form": form})
    to = form.cleaned_data["to"] or None
    kept = undos.keep(post.place, "redrive", post.qname)

    def work() -> tuple[str, int | None]:
        destination(post.request, post.place, to)
        n = post.place.rsmq.redrive(post.qname, to=to, keep=kept.token)
        where = to or "the queues they came from"
        if not n:
            return "Nothing to redrive: no visible message here has a queue to go to.", 0
        return f"Redrove {plural(n, 'message')} to {where}.", n

    post.act(work, params={"to": to}, kept=kept)
    return DONE


def _import(post: Posted) -> Result:
    # A request larger than an import may be is refused by its declared length, before its
    # file is read (past the served process's own body limit, serving/app.py answers 413
    # before any view runs).
    declared = int(post.request.META.get("CONTENT_LENGTH") or 0)
    if declared > exports.IMPORT_MAX_BYTES + exports.FORM_BYTES:
        form = ImportForm(post.data)
        form.is_valid()  # bound and checked, its file error then said as it is
        form.errors["file"] = form.error_class([str(exports.too_large(declared))])
        return Result(invalid={"import_form": form})
    form = ImportForm(post.data, post.request.FILES)
    if not form.is_valid():
        return Result(invalid={"import_form": form})
    upload, keep = form.cleaned_data["file"], form.cleaned_data["keep_ids"]
    data = upload.read()
    params: exports.ImportParams = {"keep_ids": keep, "bytes": len(data), "file": upload.name[:200]}
    try:  # every line checked first: a bad one is the form's error, nothing written
        exports.check_file(post.place.rsmq, post.qname, data, keep)
    except InvalidArgument as e:
        form.add_error("file", str(e))
        return Result(invalid={"import_form": form})

    def work() -> tuple[str, int | None]:
        report = exports.import_file(post.place.rsmq, post.qname, data, keep)
        params["report"] = report
        return exports.report_text(report), report["imported"]

    post.act(work, params=params)
    return DONE


def _undo(post: Posted) -> Result:
    """Put back what an action kept (dashboard/acting/undo.py): the admin's, confirmed, audited
    with what it restored and skipped; a second one says it was done."""
    form = UndoForm(post.data)
    if not form.is_valid():
        return Result(invalid={"undo_form": form})
    e = undos.entry(post.place, form.cleaned_data["token"])
    if e is None or e.queue != post.qname:
        return post.refuse(f"token: no Undo of an action on {post.qname} has this token.")
    params: undos.UndoParams = {"token": e.token, "undid": e.action}

    def work() -> tuple[str, int | None]:
        done = undos.undo(post.place, e, post.request.user.get_username())
        params.update(done.params)  # the audit row: what it restored and what it skipped
        return done.text, done.count

    if not post.act(work, params=params):
        return DONE
    if params.get("missing"):
        return Result(go=post.place.url("rsmq-overview"))
    return Result(go=post.place.url("rsmq-queue", post.qname))


def _flow(verb: str) -> Handler:
    """Pause, throttle or resume the queue's consumers (dashboard/acting/flow.py)."""

    def run(post: Posted) -> Result:
        form = FlowForm(post.data, verb=verb)
        if not form.is_valid():
            return Result(invalid={"flow_form": form})
        asked: flows.Asked = form.cleaned_data["asked"]
        params: dict[str, Any] = {}

        def work() -> tuple[str, int | None]:
            who = post.request.user.get_username()
            text, flag = flows.apply(post.place, post.qname, asked, who)
            params.update(asked.params(flag))
            return text, None

        if not post.act(work, params=params):
            return Result(invalid={"flow_form": form})
        return DONE

    return run


# The button's value → its handler (its role and audit name: dashboard/acting/actions.py).
QUEUE_HANDLERS: Handlers = {
    "send": _send,
    "requeue": _on_selection("requeued", lambda r, q, ids: r.requeue(q, ids)),
    "delete": _on_selection("deleted", _delete_selected, members=True, undoable="delete"),
    "move": _move_selected,
    "requeue_all": _on_state("requeued", lambda r, q, state: r.requeue_state(q, state)),
    "delete_all": _on_state(
        "deleted", lambda r, q, state, **k: r.delete_state(q, state, **k), undoable="delete_all"
    ),
    "edit": _edit,
    "purge": _confirmed("purge", _purge, undoable="purge"),
    "delete_queue": _confirmed(
        "delete", _delete_queue, then="rsmq-overview", undoable="delete_queue"
    ),
    "clean_orphans": _confirmed("orphans", _clean_orphans),
    "clean_leftover": _confirmed("leftover", _clean_leftover, then="rsmq-overview"),
    "policy": _policy,
    # An operator's on a dead-letter queue; elsewhere the admin's (checked in _redrive).
    "redrive": _redrive,
    "import": _import,
    # Put back what one of the above kept (the admin's: dashboard/acting/actions.py).
    "undo": _undo,
    "pause": _flow("pause"),
    "throttle": _flow("throttle"),
    "resume": _flow("resume"),
}
