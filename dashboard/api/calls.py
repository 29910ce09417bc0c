"""What every API call goes through: the token (who, at which role, how often), the
action's row in the console's tables (the role it needs, its name in the audit log), the
audit row, and the one answer for each failure (web_errors.py's table; 400 for input)."""

from __future__ import annotations

import asyncio
import inspect
import sys
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.debug import sensitive_variables
from ninja.decorators import decorate_view
from ninja.errors import AuthenticationError, HttpError
from ninja.errors import ValidationError as SchemaError
from ninja.security import HttpBearer
from redis.exceptions import RedisError

from dashboard.access import tokens
from dashboard.access.roles import Role, read_only
from dashboard.acting import exports
from dashboard.acting import undo as undos
from dashboard.acting.actions import Action
from dashboard.audit import drain as audit_drain
from dashboard.audit import log as audit
from dashboard.models import ApiToken, AuditEntry
from dashboard.places import place as places
from dashboard.places.connections import get_connection
from dashboard.places.place import Place
from dashboard.web.errors import web_error
from queues import (
    InvalidArgument,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    QueueExists,
    RsmqError,
)
from queues import validation as v
from queues.errors import ApiRefused
from queues.ops import ApiRate

T = TypeVar("T")

#: the core's errors about what a call asked for: 400, naming the field and its range
INPUT_ERRORS = (InvalidArgument, MessageTooLong, MessageNotString, NoAttributeSupplied)

#: the allowed values of each field a request body or query may carry, for type errors
#: (the core's own checks word the rest, in the same terms)
RANGES = {
    "vt": f"an integer between 0 and {v.MAX_SECONDS}",
    "delay": f"an integer between 0 and {v.MAX_SECONDS}",
    "maxsize": f"an integer between {v.MAXSIZE_MIN} and {v.MAXSIZE_MAX}, or -1",
    "n": f"an integer between 1 and {v.MAX_BATCH}",
    "message": "a string",
    "messages": f"a list of 1 to {v.MAX_SEND_BATCH} strings",
    "ids": f"a list of message ids ({v.ID_FORMAT})",
    "to": f"a queue name ({v.QNAME_FORMAT})",
    # POST /api/annotations/ (annotate.py)
    "text": "a string of 1 to 500 characters",
    "at": "an ISO 8601 time within the last 366 days and the next 24 hours",
    "queue": f"a queue name ({v.QNAME_FORMAT})",
    "pattern": "a pattern of queue names of at most 160 characters",
}


#: the actions whose token count is made by the call's own script (operations.py fills
#: it: the audited data-plane calls), when its Redis is the counting one
COUNTED_BY_CALL: set[Action] = set()


def rate(request: HttpRequest) -> ApiRate | None:
    """The token's count the call's script makes (None: counted already)."""
    found = getattr(request, "api_rate", None)
    return found if isinstance(found, ApiRate) else None


class BadInput(Exception):
    """The call's input, refused before anything ran: 400."""


ANONYMOUS = "anonymous"  # the audit log's actor of a call without a token it knows
READ = "api_read"  # the audit log's action of a refused read


def unpaired(data: Any) -> str | None:
    """Where the first string (or key) of a parsed JSON body holds a lone surrogate
    (``"\\ud800"``: JSON can spell it, UTF-8 can't encode it): "message",
    "messages[1]"; None when there is none. Iterative: a body nested a thousand deep
    doesn't overflow the stack."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not _utf8(value):
                return path or "body"
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                name = key if _utf8(key) else key.encode("utf-8", "backslashreplace").decode()
                if name != key:
                    return f"{path}.{name}" if path else name
                stack.append((f"{path}.{key}" if path else key, item))
        elif isinstance(value, list):
            stack.extend(
                (f"{path or 'body'}[{i}]", item) for i, item in reversed(list(enumerate(value)))
            )
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def surrogate_refusal(field: str) -> str:
    return (
        f"{field} must be valid Unicode text: it holds a lone surrogate (\\ud800 to"
        " \\udfff), which UTF-8 can't encode"
    )


def actor(row: ApiToken) -> str:
    """A token's name in the audit log: never taken for a console user's."""
    return f"token:{row.name}"


def refusal(role: Role, needed: Role) -> str:
    """Why a token of ``role`` may not act at ``needed`` ("": it may); the console's words
    (access.refusal), for a token rather than a user."""
    if needed > Role.VIEWER and read_only():
        return "The console is read-only (RSMQ_READ_ONLY)."
    if role < needed:
        return f"This needs the {needed.name.lower()} role."
    return ""


class TokenAuth(HttpBearer):
    """``Authorization: Bearer rsmq_…``: a live token, within its rate, whose role may run
    ``action`` (None: read). A refused action is audited as denied, like the console's."""

    def __init__(self, action: Action | None = None) -> None:
        super().__init__()
        self.action = action

    def __call__(self, request: HttpRequest) -> Any:
        # The refusal handlers audit under the action's name, a token or none.
        request.rsmq_action = self.action  # type: ignore[attr-defined]
        return super().__call__(request)

    @sensitive_variables("token")  # starred in error reports, DEBUG too
    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        kwargs = request.resolver_match.kwargs if request.resolver_match else {}
        try:
            try:
                if self.action not in COUNTED_BY_CALL or not tokens.foldable(kwargs.get("conn")):
                    raise LookupError
                # Counted by the call's own script, in the same round trip (``run``).
                row, generation = tokens.identify(token.strip())
                request.api_rate = tokens.rate_of(row, generation)  # type: ignore[attr-defined]
            except (LookupError, RedisError, RsmqError):
                row = tokens.admit(token.strip())  # counted now (in the database if Redis is down)
        except tokens.RateLimited as e:
            request.rsmq_actor = f"token:{e.name}"  # type: ignore[attr-defined]
            raise
        needed = self.action.role if self.action else Role.VIEWER
        reason = refusal(tokens.role_of(row), needed)
        if reason:
            if self.action is not None:
                place = places.resolve(kwargs.get("conn"), kwargs.get("ns"))
                audit.record(
                    request, place, self.action.audit_name, AuditEntry.Outcome.DENIED,
                    queue=kwargs.get("qname", ""), detail=reason, actor=actor(row),
                )  # fmt: skip
                request.rsmq_audited = True  # type: ignore[attr-defined]
            raise PermissionDenied(reason)
        return row


def token_of(request: HttpRequest) -> ApiToken:
    row = getattr(request, "auth", None)
    assert isinstance(row, ApiToken)  # every acting route has a TokenAuth
    return row


def run(
    request: HttpRequest,
    place: Place,
    action: Action,
    qname: str,
    work: Callable[[], tuple[T, int | None]],
    ids: Iterable[str] = (),
    params: dict[str, Any] | None = None,
    audited: bool = False,
    kept: undos.Keep | None = None,
) -> T:
    """Run ``work`` (its answer, and the count the audit row keeps) and audit its outcome,
    as the console's ``Posted.act`` does; bad input: 400, nothing changed.

    ``audited``: ``work`` runs a data-plane operation whose script writes its own record
    to Redis (``head``, queues/ops.py ``audited``); it is drained into the table later,
    and only what never reached that script (input refused before it) is written here.
    ``kept``: the stash the action kept what it removed in (dashboard/acting/undo.py): its Undo
    is tied to the audit row, or the stash forgotten when the action failed or removed
    nothing."""
    ids, name = list(ids), actor(token_of(request))

    def record(outcome: str, count: int | None, detail: str) -> AuditEntry | None:
        row = audit.record(
            request, place, action.audit_name, outcome, qname, ids, count, params, detail,
            actor=name,
        )  # fmt: skip
        request.rsmq_audited = True  # type: ignore[attr-defined]
        return row

    def attempts() -> tuple[T, int | None]:
        for attempt in range(3):
            try:
                return work()
            except ApiRefused as e:
                # Over its rate (429), or the tokens changed since this process read
                # them: read again (revoked: 401; its role now too), then again with the
                # generation now. Refused, the call changed nothing and is not audited.
                row = tokens.refused(token_of(request), e)
                reason = refusal(tokens.role_of(row), action.role)
                if reason:
                    raise PermissionDenied(reason) from None
                if attempt == 2:
                    raise
                request.api_rate = tokens.rate_of(row, e.generation)  # type: ignore[attr-defined]
        raise AssertionError("unreachable")

    if in_event_loop():
        # dashboard/serving/fast.py's fast path, in the server's event loop: Redis only. Whatever
        # needs the database (a token read again, a refusal's row, a drain) is done by a
        # thread of the pool, from where the call stands (``Deferred``).
        try:
            answer, count = work()
        except Exception as e:
            raise in_loop_failure(e, request, place, action, qname, ids, params, audited) from e
        if not audited:
            raise AssertionError("only audited calls are answered in the event loop")
        audit_drain.maybe_drain(place)  # in a thread of its own if one is due
        return answer
    try:
        try:
            answer, count = attempts()
        except BaseException:
            _forget(place, kept)  # it failed: its stash kept nothing worth an Undo
            raise
    except (ApiRefused, tokens.RateLimited, tokens.Unauthenticated, PermissionDenied):
        raise
    except INPUT_ERRORS as e:
        if getattr(e, "audited", False):  # its script recorded it: no row for the refusal
            request.rsmq_audited = True  # type: ignore[attr-defined]
            audit_drain.maybe_drain(place)
        else:
            uncounted(request)
            record(AuditEntry.Outcome.INVALID, None, str(e))
        raise BadInput(str(e)) from None
    except Exception as e:
        if getattr(e, "audited", False):
            request.rsmq_audited = True  # type: ignore[attr-defined]
            audit_drain.maybe_drain(place)
        else:
            uncounted(request)
            record(AuditEntry.Outcome.ERROR, None, str(e))
        raise
    if audited:
        audit_drain.maybe_drain(place)
    else:
        row = record(AuditEntry.Outcome.OK, count, "")
        if kept is not None and undos.remember(place, kept, row, count) is None:
            _forget(place, kept)  # it removed nothing
    return answer


def _forget(place: Place, kept: undos.Keep | None) -> None:
    """A stash its action left empty is forgotten (if Redis is down: it expires)."""
    try:
        undos.discard(place, kept)
    except (RsmqError, RedisError):
        pass


class Deferred(Exception):  # noqa: N818 (not an error: the rest of a call, elsewhere)
    """Raised in the event loop: the rest of the call is for a thread of the pool —
    ``finish`` (which raises what the call answers), or None: the whole call again, which
    changed nothing."""

    def __init__(self, finish: Callable[[], Any] | None) -> None:
        super().__init__("the rest of this call is for a thread")
        self.finish = finish
        self.request: HttpRequest | None = None  # the call's (lean.py's fast path sets it)


def in_event_loop() -> bool:
    """Whether this thread runs an event loop (the server's: dashboard/asgi.py), where
    the database may not be used (Django refuses it there)."""
    return asyncio._get_running_loop() is not None


def in_loop_failure(
    e: Exception,
    request: HttpRequest,
    place: Place,
    action: Action,
    qname: str,
    ids: Iterable[str],
    params: dict[str, Any] | None,
    audited: bool = True,
) -> Deferred:
    """What an audited call that failed in the event loop hands to a thread: over its
    rate or the tokens changed (ApiRefused: nothing ran or changed), the whole call again;
    else ``run`` with the error, which answers and audits it as the thread path does."""
    if isinstance(e, ApiRefused):
        return Deferred(None)
    again = raising(e)
    return Deferred(lambda: run(request, place, action, qname, again, ids, params, audited))


def raising(e: Exception) -> Callable[[], tuple[Any, int | None]]:
    def again() -> tuple[Any, int | None]:
        raise e

    return again


def uncounted(request: HttpRequest) -> None:
    """A call refused before its script ran is counted all the same (never fails it)."""
    r = rate(request)
    if r is None:
        return
    try:
        tokens.counter().api_rate(r.token, r.per_minute, r.window)
    except Exception:
        pass


def head(
    request: HttpRequest,
    place: Place,
    action: Action,
    qname: str,
    ids: Iterable[str] = (),
    params: dict[str, Any] | None = None,
) -> str:
    """The record an audited call's script writes (audit_drain.head), for this call's token."""
    return audit_drain.head(place, action.audit_name, actor(token_of(request)), qname, ids, params)


View = Callable[..., Any]


def placed(view: View, atomic: bool = False) -> tuple[View, View]:
    """``view`` (taking ``conn`` and ``ns``) as two views for ninja: one at the first
    connection's first namespace, one taking both from its path. ninja reads their
    signatures (the path's parameters can have no default; the other's has none).
    ``atomic``: each call in one database transaction. No route needs one now: a token's
    count is in Redis (tokens.py), a data-plane call's record too (``run``), and a
    control-plane call writes one row."""
    hints = typing.get_type_hints(view)
    signature = inspect.signature(view)
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in signature.parameters.values()
        if p.name not in ("conn", "ns")
    ]
    where = [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in ("conn", "ns")
    ]

    def first(*args: Any, **kwargs: Any) -> Any:
        return view(*args, **kwargs)

    def at(*args: Any, **kwargs: Any) -> Any:
        return view(*args, **kwargs)

    for made, ps in ((first, params), (at, params + where)):
        made.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=ps, return_annotation=hints.get("return", Any)
        )
        made.__name__, made.__doc__, made.__module__ = view.__name__, view.__doc__, view.__module__
        if atomic:
            decorate_view(transaction.atomic)(made)
    return first, at


def queue_in_url(qname: str) -> str:
    """A URL's queue name: one that can't be a queue is a 404 (the read API's answer)."""
    try:
        return v.qname(qname)
    except InvalidArgument as e:
        raise Http404(f"{e}: not a valid queue name.") from None


# -- refusals, audited --------------------------------------------------------------------


OUTCOMES = {
    401: AuditEntry.Outcome.DENIED,
    403: AuditEntry.Outcome.DENIED,
    429: AuditEntry.Outcome.THROTTLED,
}


def audit_refusal(request: HttpRequest, status: int, text: str) -> None:
    """Every refused call gets an audit row (unless its action wrote one already): with
    the action's name ("api_read" for a read), the token's name or "anonymous", and the
    answer's text. A refusal anyone can repeat at will (no token or an unknown one, a
    token over its rate, a session without the viewer role) is folded into one row a
    minute per kind (audit.record_refused); the others come from a token that each of
    them counts against its rate."""
    if getattr(request, "rsmq_audited", False) or not 400 <= status < 500:
        return
    request.rsmq_audited = True  # type: ignore[attr-defined]
    action: Action | None = getattr(request, "rsmq_action", None)
    name = action.audit_name if action is not None else READ
    row = getattr(request, "auth", None)
    token = isinstance(row, ApiToken)
    who = actor(row) if isinstance(row, ApiToken) else getattr(request, "rsmq_actor", "")
    if not who and request.user.is_authenticated:  # a session on the read API
        who = request.user.get_username()
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    try:
        place = places.resolve(kwargs.get("conn"), kwargs.get("ns"))
    except Http404:
        place = places.resolve()
    queue = str(kwargs.get("qname", ""))
    outcome = OUTCOMES.get(status, AuditEntry.Outcome.INVALID)
    detail = f"{status}: {text}"
    if status in (401, 429) or not token:  # nothing counts these calls but this
        audit.record_refused(request, place, name, outcome, queue, detail, who or ANONYMOUS)
    else:
        audit.record(request, place, name, outcome, queue, detail=detail, actor=who)


# -- answers ---------------------------------------------------------------------------


def error(status: int, text: str, request: HttpRequest | None = None) -> JsonResponse:
    """The answer; with ``request``, a refusal (4xx) is audited too."""
    if request is not None:
        audit_refusal(request, status, text)
    return JsonResponse({"error": text}, status=status)


def unauthorized(text: str, request: HttpRequest | None = None) -> JsonResponse:
    response = error(401, text, request)
    response["WWW-Authenticate"] = 'Bearer realm="rsmq-console"'
    return response


def on_unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    if isinstance(exc, AuthenticationError):
        return unauthorized(
            "Authentication required: an API token, as Authorization: Bearer.", request
        )
    return unauthorized(str(exc), request)


def on_rate_limited(request: HttpRequest, exc: tokens.RateLimited) -> HttpResponse:
    response = error(429, str(exc), request)
    response["Retry-After"] = str(exc.retry_after)
    return response


def on_busy(request: HttpRequest, exc: exports.Busy) -> HttpResponse:
    response = error(503, str(exc))
    response["Retry-After"] = str(exc.retry_after)
    return response


def on_schema_error(request: HttpRequest, exc: SchemaError) -> HttpResponse:
    """A body or query of the wrong shape: the field, and what it may be."""
    texts = []
    for e in exc.errors:
        loc = [str(p) for p in e.get("loc", ()) if p not in ("body", "query", "path", "data")]
        field = loc[0] if loc else "body"
        allowed = RANGES.get(field)
        texts.append(f"{field} must be {allowed}" if allowed else f"{field}: {e.get('msg', '')}")
    return error(400, "; ".join(dict.fromkeys(texts)) or "Invalid request.", request)


def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    """ninja's own refusals (a body that is no JSON: 400), in our shape, saying why."""
    cause = exc.__cause__
    if isinstance(cause, BadInput):
        text = str(cause)
    elif isinstance(cause, RecursionError):
        text = "body must be JSON: it is nested too deeply"
    elif isinstance(cause, ValueError) and "digits" in str(cause):
        text = f"body must be JSON with numbers of at most {sys.get_int_max_str_digits()} digits"
    elif isinstance(cause, ValueError):  # json's own errors
        text = f"body must be JSON: {cause}"
    else:
        text = f"{exc.message}."
    return error(exc.status_code, text, request)


def on_bad_input(request: HttpRequest, exc: BadInput) -> HttpResponse:
    return error(400, str(exc), request)


def on_queue_exists(request: HttpRequest, exc: QueueExists) -> HttpResponse:
    return error(409, str(exc), request)


def on_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Everything else: the one table's answer (web_errors.py), as the read API gives it."""
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    found = web_error(exc, get_connection(kwargs.get("conn")))
    if found is None:
        raise exc
    return error(found.status, found.text, request)


HANDLERS: list[tuple[type[Exception], Callable[[HttpRequest, Any], HttpResponse]]] = [
    (AuthenticationError, on_unauthenticated),
    (tokens.Unauthenticated, on_unauthenticated),
    (tokens.RateLimited, on_rate_limited),
    (exports.Busy, on_busy),
    (SchemaError, on_schema_error),
    (HttpError, on_http_error),
    (BadInput, on_bad_input),
    (QueueExists, on_queue_exists),
    (PermissionDenied, on_error),
    (Http404, on_error),
    (RsmqError, on_error),
    (Exception, on_error),
]
