"""The message page: one message in full, and the actions on it.

An action answers from its own result: the count it returns says whether the message is
still here, so an htmx action costs the action and one read of the message it shows (the
page's "move to" suggestions live outside the swapped ``#content``: not read again)."""

from __future__ import annotations

from collections.abc import Mapping

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST, require_safe

from dashboard.access.bodies import Bodies, access
from dashboard.access.guard import destination, place_for
from dashboard.acting import undo as undos
from dashboard.acting.actions import MESSAGE_ACTIONS
from dashboard.audit.log import ResendParams, resend_bodies
from dashboard.places import place as places
from dashboard.places.place import Place
from dashboard.templatetags.console import pretty_body
from dashboard.views.actions import DONE, Handlers, Posted, Result, member, posted, respond
from dashboard.views.common import context, go, template
from dashboard.views.forms import MoveForm, ResendForm, VisibilityForm
from dashboard.views.queue import move_targets
from dashboard.web.htmx import HtmxHttpRequest
from dashboard.web.masking import Kept, numbered, restore
from queues import validation as v
from queues.limits import MEMBER_MAX
from queues.models import Failure, MessageInfo
from queues.parse import FOREIGN_ID


@login_required
@require_safe
def message_detail(
    request: HtmxHttpRequest, conn: str, ns: str, qname: str, msg_id: str
) -> HttpResponse:
    place = place_for(request, conn, ns, queue=qname)
    return render_message(request, place, qname, msg_id)


@login_required
@require_POST
def message_action(
    request: HtmxHttpRequest, conn: str, ns: str, qname: str, msg_id: str
) -> HttpResponse:
    v.qname(qname)  # a URL naming no queue or message: the middleware answers 404
    if not v.ID_RE.fullmatch(msg_id) and member(msg_id) is None:
        raise Http404("Not a message id.")
    post, handler = posted(request, MESSAGE_ACTIONS, MESSAGE_HANDLERS, conn, ns, qname, msg_id)
    if member(msg_id) is not None and handler is not _delete:
        # another client's id: Node rsmq's calls refuse it; it can be read and deleted
        handler = _foreign

    def page(status: int, result: Result) -> HttpResponse:
        return render_message(
            request, post.place, qname, msg_id, status=status, after_action=True,
            shown=result.shown, invalid=result.invalid,
        )  # fmt: skip

    here = post.place.url("rsmq-message", qname, msg_id)
    return respond(post, handler(post), here, page)


def render_message(
    request: HtmxHttpRequest,
    place: Place,
    qname: str,
    msg_id: str,
    *,
    status: int = 200,
    after_action: bool = False,
    shown: MessageInfo | None = None,
    invalid: Mapping[str, forms.Form] | None = None,
) -> HttpResponse:
    """The page. After an action, a message gone meanwhile sends the operator to its queue
    rather than to a 404; ``shown``: the message as the action already read it."""
    msg = shown
    if msg is None or member(msg_id) is not None:
        msg, failures = _with_failures(place, qname, msg_id)
        if msg is None and after_action:
            return go(request, place.url("rsmq-queue", qname))
        if msg is None:
            raise Http404(places.not_here(qname, msg_id))
    else:
        failures = place.rsmq.failures(qname, msg_id)
    bodies = access(request, place, qname, msg_id)
    forms_ = {
        "visibility_form": VisibilityForm(initial={"vt": 0}),
        "move_form": MoveForm(),
        "resend_form": ResendForm(initial={"body": _editable(bodies, msg.message)}),
        **(invalid or {}),
    }
    ctx = context(
        place,
        qname=qname,
        msg=msg,
        bodies=bodies,
        body_shown=bodies.show(msg.message),
        reveal_url=place.url("rsmq-reveal", qname),
        reveal_message=msg_id,
        # what of it can't be read (the Actions say what an id no RSMQ id means)
        unreadable="; ".join(n for n in (msg.note or "").split("; ") if n and n != FOREIGN_ID),
        failures=[bodies.failure(f) for f in failures],
        now=msg.read_at,
        **forms_,
        act=place.url("rsmq-message-action", qname, msg_id),
        other_queues=move_targets(request, place, qname),
    )
    return render(request, template(request, "message.html"), ctx, status=status)


def _with_failures(
    place: Place, qname: str, msg_id: str
) -> tuple[MessageInfo | None, list[Failure]]:
    """The message and why it failed (if a worker recorded it), in one round trip; a URL
    naming no queue or id: a 404. ``msg_id``: an RSMQ id, or ``member:`` and the hex of a
    zset member another client wrote under an id no RSMQ client would (as listed)."""
    v.qname(qname)
    raw = member(msg_id)
    if raw is not None and 0 < len(raw) <= MEMBER_MAX:
        return place.rsmq.message_and_failures(qname, raw)
    if not v.ID_RE.fullmatch(msg_id):
        raise Http404("Not a message id.")
    return place.rsmq.message_and_failures(qname, msg_id)


def _gone(post: Posted) -> str:
    return places.not_here(post.qname, post.msg_id)


def _stay_unless_gone(post: Posted, done: bool, here: bool) -> Result:
    """``here``: the action's own count says the message is still here (no second look);
    an action that failed cannot tell, so the message is looked up."""
    if not done:
        return _look(post)
    return DONE if here else Result(go=post.place.url("rsmq-queue", post.qname))


def _look(post: Posted) -> Result:
    msg = places.find_message(post.place, post.qname, post.msg_id)
    return Result(shown=msg) if msg else Result(go=post.place.url("rsmq-queue", post.qname))


def _requeue(post: Posted) -> Result:
    n = 0

    def work() -> tuple[str, int | None]:
        nonlocal n
        n = post.place.rsmq.requeue(post.qname, [post.msg_id])
        return ("Requeued: visible now." if n else _gone(post)), n

    return _stay_unless_gone(post, post.act(work, ids=[post.msg_id]), n > 0)


def _visibility(post: Posted) -> Result:
    form = VisibilityForm(post.data)
    if not form.is_valid():
        return Result(invalid={"visibility_form": form})
    vt = form.cleaned_data["vt"]
    ok = False

    def work() -> tuple[str, int | None]:
        nonlocal ok
        ok = post.place.rsmq.change_message_visibility(post.qname, post.msg_id, vt)
        return (f"Visible again in {vt} s." if ok else _gone(post)), int(ok)

    done = post.act(work, ids=[post.msg_id], params={"vt": vt})
    return _stay_unless_gone(post, done, ok)


def _delete(post: Posted) -> Result:
    raw = member(post.msg_id)  # another client's id: deleted by its exact member
    kept = undos.keep(post.place, "delete", post.qname, ids=[raw or post.msg_id])

    def work() -> tuple[str, int | None]:
        rsmq = post.place.rsmq
        if raw is not None:
            ok = rsmq.delete_members(post.qname, [raw], keep=kept.token) == 1
            shown = raw.decode("utf-8", "backslashreplace")
        else:
            ok = rsmq.delete_message(post.qname, post.msg_id, keep=kept.token)
            shown = post.msg_id
        return (f"Deleted message {shown}." if ok else _gone(post)), int(ok)

    post.act(work, ids=[post.msg_id], kept=kept)
    return Result(go=post.place.url("rsmq-queue", post.qname))


def _foreign(post: Posted) -> Result:
    return post.refuse(
        "id: this message's id is no RSMQ id (another client wrote it): it can be read"
        " and deleted here, not requeued, changed, moved or re-sent."
    )


def _move(post: Posted) -> Result:
    form = MoveForm(post.data)
    if not form.is_valid():
        return Result(invalid={"move_form": form})
    to, keep = form.cleaned_data["to"], form.cleaned_data["keep_counts"]
    n = 0
    kept = undos.keep(post.place, "move", post.qname, ids=[post.msg_id], to=to)

    def work() -> tuple[str, int | None]:
        nonlocal n
        destination(post.request, post.place, to)
        n = post.place.rsmq.move_messages(
            post.qname, to, [post.msg_id], keep_counts=keep, keep=kept.token
        )
        return (f"Moved to {to}." if n else f"Not moved: gone, or too large for {to}."), n

    if post.act(work, ids=[post.msg_id], params={"to": to, "keep_counts": keep}, kept=kept) and n:
        return Result(go=post.place.url("rsmq-message", to, post.msg_id))
    # Not moved: still here (too large for ``to``), or gone.
    return _look(post)


def _editable(bodies: Bodies, body: str) -> str:
    """The editor's starting text: a JSON object or list pretty-printed, else as it is;
    each masked part as ``[masked:N]``, which a re-send puts back only where it was."""
    if bodies.masked and bodies.rules is not None:
        return numbered(bodies.rules, body).text
    return pretty_body(body) if not bodies.hidden else ""


def _resend(post: Posted) -> Result:
    form = ResendForm(post.data)
    if not form.is_valid():
        return Result(invalid={"resend_form": form})
    body: str = form.cleaned_data["body"]
    to: str = form.cleaned_data["to"] or post.qname
    delete: bool = form.cleaned_data["delete_original"]
    delay: int | None = form.cleaned_data["delay"]
    # The original as it is now, for the audit row's difference (a body never changes).
    original = places.find_message(post.place, post.qname, post.msg_id)
    bodies = access(post.request, post.place, post.qname, post.msg_id)
    if bodies.hidden:
        return post.refuse("body: the observer role sees no body, so it re-sends none.")
    if bodies.masked and bodies.rules is not None and original is not None:
        # the masked parts left in place go out as they were; moved ones are refused
        try:
            body = restore(bodies.rules, original.message, body)
        except Kept as e:
            form.add_error("body", str(e))
            return Result(invalid={"resend_form": form})
    params: ResendParams = {"to": to, "delete_original": delete, "delay": delay}
    params["bodies"] = resend_bodies(original.message if original else None, body)
    new = ""

    def work() -> tuple[str, int | None]:
        nonlocal new
        destination(post.request, post.place, to)
        new = post.place.rsmq.resend_message(
            post.qname, post.msg_id, body, to=to, delete_original=delete, delay=delay
        )
        params["new_id"] = new
        gone = " The original was deleted." if delete else ""
        return f"Sent as a new message {new} to {to}.{gone}", 1

    if post.act(work, ids=[post.msg_id], params=params):
        return Result(go=post.place.url("rsmq-message", to, new))
    return _look(post)


# The button's value → its handler (its role and audit name: dashboard/acting/actions.py).
MESSAGE_HANDLERS: Handlers = {
    "requeue": _requeue,
    "visibility": _visibility,
    "delete": _delete,
    "move": _move,
    "resend": _resend,
}
