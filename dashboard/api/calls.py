"""What every API call goes through: who calls (an API token: its role, its rate), the
action's row in the console's tables (the role it needs, its name in the audit log), the
call's one audit row, and the one answer for each failure (web/errors.py's table; 400 for
input). django-ninja runs it for every route; the fast path (dashboard/serving/fast.py)
runs the same pieces for the plain data-plane calls."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

from django.core.exceptions import PermissionDenied
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from ninja.errors import HttpError
from ninja.errors import ValidationError as SchemaError
from redis.exceptions import RedisError

from dashboard.access import tokens
from dashboard.access.callers import Caller, Refused, reader
from dashboard.access.grants import refusal
from dashboard.acting import exports
from dashboard.acting import undo as undos
from dashboard.audit import drain
from dashboard.audit import log as audit
from dashboard.models import AuditEntry
from dashboard.places import place as places
from dashboard.places.connections import get_connection
from dashboard.places.place import Place
from dashboard.web.errors import NotAudited, web_error
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

T = TypeVar("T")
log = logging.getLogger(__name__)

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
    # pause / throttle (api/flow.py)
    "rate": "a number of receives a second, 0.01 to 100,000",
    "reason": "a string of at most 500 characters",
    "duration": "a duration: seconds, or 90s, 10m, 2h, 1d",
}

ANONYMOUS = "anonymous"  # the audit log's actor of a call without a token it knows
READ = "api_read"  # the audit log's action of a refused read


class BadInput(Exception):
    """The call's input, refused before anything ran: 400."""


class Conflict(Exception):
    """The call can't run as things stand (a cap on live jobs reached): 409."""


def run(
    who: Caller,
    place: Place,
    qname: str,
    work: Callable[[], tuple[T, int | None]],
    ids: Iterable[str] = (),
    params: Mapping[str, Any] | None = None,
    audited: bool = False,
    kept: undos.Keep | None = None,
    rows: list[AuditEntry] | None = None,
) -> T:
    """Run ``work`` (its answer, and the count the audit row keeps) with its one audit
    row, as the console's ``Posted.act`` does: written before ``work`` runs (if it can't
    be, nothing runs: 503) and finished after it — a row that can't be finished leaves the
    answer standing, never a 500 after an effect (audit/log.py). Bad input: 400, nothing
    changed. Whatever it raises afterwards says it was audited (``audited``).

    ``audited``: ``work`` runs a data-plane operation whose script writes its own record
    to Redis (``DataCall``); only what never reached that script is written here.
    ``kept``: the stash the action kept what it removed in (dashboard/acting/undo.py):
    its Undo is tied to the audit row, or the stash forgotten when the action failed or
    removed nothing. ``rows``: gets the finished row (an export counts its lines into it
    at its end)."""
    ids = list(ids)
    row: AuditEntry | None = None
    if not audited:
        try:
            row = audit.start(place, who.action.audit_name, actor=who.actor, queue=qname,
                              ids=ids, params=params)  # fmt: skip
        except NotAudited:
            _forget(place, kept)
            raise

    def record(outcome: str, count: int | None, detail: str) -> AuditEntry:
        if row is not None:
            audit.finish(row, outcome, count=count, params=params, detail=detail, ids=ids)
            return row
        return audit.write(place, who.action.audit_name, outcome, actor=who.actor, queue=qname,
                           ids=ids, count=count, params=params, detail=detail)  # fmt: skip

    try:
        try:
            answer, count = _attempts(who, work)
        except BaseException:
            _forget(place, kept)  # it failed: its stash kept nothing worth an Undo
            raise
    except (ApiRefused, Refused):
        audit.forget(row)  # it never ran: the refusal is audited as one
        raise
    except Exception as e:
        if getattr(e, "audited", False):  # its script recorded it
            drain.maybe_drain(place)
            audit.forget(row)
        else:
            _uncounted(who)
            refused = isinstance(e, INPUT_ERRORS)
            record(AuditEntry.Outcome.INVALID if refused else AuditEntry.Outcome.ERROR, None,
                   str(e))  # fmt: skip
        if isinstance(e, INPUT_ERRORS):
            raise _audited(BadInput(str(e))) from None
        raise _audited(e) from None
    if audited:
        drain.maybe_drain(place)
        return answer
    done = record(AuditEntry.Outcome.OK, count, "")
    if rows is not None:
        rows.append(done)
    try:
        if kept is not None and undos.remember(place, kept, done, count) is None:
            _forget(place, kept)  # it removed nothing
    except DatabaseError:  # its stash expires by itself: the action's answer stands
        log.exception("the undo of %s on %s not remembered", who.action.audit_name, qname)
    return answer


def _attempts(who: Caller, work: Callable[[], tuple[T, int | None]]) -> tuple[T, int | None]:
    """``work``, called again when its script refused the token's count (ApiRefused):
    over its rate (429), or the tokens changed since this process read them: read
    again (revoked: 401; its role now too), then again with the generation now. Refused,
    the call changed nothing and is not audited here (the refusal is)."""
    for attempt in range(3):
        try:
            return work()
        except ApiRefused as e:
            try:
                row = tokens.refused(who.token, e)
            except tokens.Unauthenticated as u:
                raise Refused(401, str(u), who.action) from None
            except tokens.RateLimited as r:
                raise Refused(429, str(r), who.action, who.actor, r.retry_after) from None
            reason = refusal(tokens.role_of(row), who.action.role)
            if reason:
                raise Refused(403, reason, who.action, who.actor) from None
            if attempt == 2:
                raise
            who.rate = tokens.rate_of(row, e.generation)
    raise AssertionError("unreachable")


def _audited(e: Exception) -> Exception:
    e.audited = True  # type: ignore[attr-defined]  # its row is written: no refusal row
    return e


def raising(e: Exception) -> Callable[[], tuple[Any, int | None]]:
    def again() -> tuple[Any, int | None]:
        raise e

    return again


def _forget(place: Place, kept: undos.Keep | None) -> None:
    """A stash its action left empty is forgotten (if Redis is down: it expires)."""
    try:
        undos.discard(place, kept)
    except (RsmqError, RedisError):
        pass


def _uncounted(who: Caller) -> None:
    """A call refused before its script ran is counted all the same (never fails it)."""
    if who.rate is None:
        return
    try:
        tokens.counter().api_rate(who.rate.token, who.rate.per_minute, who.rate.window)
    except Exception:
        pass


def queue_in_url(qname: str) -> str:
    """A URL's queue name: one that can't be a queue is a 404 (the read API's answer)."""
    try:
        return v.qname(qname)
    except InvalidArgument as e:
        raise Http404(f"{e}: not a valid queue name.") from None


# -- answers: one table for every failure ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """What a failed call answers: its status, its text, and headers of its own."""

    status: int
    text: str
    headers: tuple[tuple[str, str], ...] = ()

    def response(self) -> JsonResponse:
        response = JsonResponse({"error": self.text}, status=self.status)
        for name, value in self.headers:
            response[name] = value
        return response


UNAUTHENTICATED = (("WWW-Authenticate", 'Bearer realm="rsmq-console"'),)


def failure(e: Exception, conn: str | None) -> Failure | None:
    """The answer to ``e`` raised by a call on connection ``conn`` (None: not ours to
    answer: a 500). Pure: the fast path answers from it in the event loop."""
    if isinstance(e, Refused) and e.status == 403 and e.action is not None:
        e = PermissionDenied(str(e))  # an action: worded as the pages word it
    elif isinstance(e, Refused):
        extra: tuple[tuple[str, str], ...] = UNAUTHENTICATED if e.status == 401 else ()
        if e.retry_after is not None:
            extra += (("Retry-After", str(e.retry_after)),)
        return Failure(e.status, str(e), extra)
    if isinstance(e, exports.Busy):
        return Failure(503, str(e), (("Retry-After", str(e.retry_after)),))
    if isinstance(e, SchemaError):
        return Failure(400, _schema_text(e))
    if isinstance(e, HttpError):
        return Failure(e.status_code, _http_text(e))
    if isinstance(e, (BadInput, *INPUT_ERRORS)):
        return Failure(400, str(e))
    if isinstance(e, (QueueExists, Conflict)):
        return Failure(409, str(e))
    found = web_error(e, get_connection(conn))
    return None if found is None else Failure(found.status, found.text)


def _schema_text(e: SchemaError) -> str:
    """A body or query of the wrong shape: the field, and what it may be."""
    texts = []
    for error in e.errors:
        loc = [str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path", "data")]
        field = loc[0] if loc else "body"
        allowed = RANGES.get(field)
        texts.append(
            f"{field} must be {allowed}" if allowed else f"{field}: {error.get('msg', '')}"
        )
    return "; ".join(dict.fromkeys(texts)) or "Invalid request."


def _http_text(e: HttpError) -> str:
    """ninja's own refusals (a body that is no JSON: 400), saying why."""
    cause = e.__cause__
    if isinstance(cause, BadInput):
        return str(cause)
    if isinstance(cause, RecursionError):
        return "body must be JSON: it is nested too deeply"
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return f"body must be JSON with numbers of at most {sys.get_int_max_str_digits()} digits"
    if isinstance(cause, ValueError):  # json's own errors
        return f"body must be JSON: {cause}"
    return f"{e.message}."


OUTCOMES = {
    401: AuditEntry.Outcome.DENIED,
    403: AuditEntry.Outcome.DENIED,
    429: AuditEntry.Outcome.THROTTLED,
}


def audit_refusal(request: HttpRequest, e: Exception, status: int, text: str) -> None:
    """Every refused call gets an audit row (unless the call wrote its own): with the
    action's name ("api_read" for a read), the token's name or "anonymous", and the
    answer's text. A refusal anyone can repeat at will (no token or an unknown one, a
    token over its rate, a session without the viewer role) is folded into one row a
    minute per kind (audit.write_folded); the others come from a token that each of them
    counts against its rate."""
    if getattr(e, "audited", False) or not 400 <= status < 500:
        return
    found = getattr(request, "auth", None)  # ninja's: the Caller of an acting route
    who = found if isinstance(found, Caller) else None
    if who is None and not isinstance(e, Refused):
        return  # a read's own failure (a missing queue): only refused readers are audited
    action = e.action if isinstance(e, Refused) and e.action else who.action if who else None
    actor = e.actor if isinstance(e, Refused) and e.actor else who.actor if who else ""
    if not actor and request.user.is_authenticated:  # a session on the read API
        actor = request.user.get_username()
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    try:
        place = places.resolve(kwargs.get("conn"), kwargs.get("ns"))
    except Http404:
        place = places.resolve()
    name = action.audit_name if action is not None else READ
    outcome = OUTCOMES.get(status, AuditEntry.Outcome.INVALID)
    queue = str(kwargs.get("qname", ""))
    # a role too low is worded as the pages' denied rows are: the reason
    denied = status == 403 and isinstance(e, Refused) and e.action is not None
    detail = str(e) if denied else f"{status}: {text}"
    if status in (401, 429) or not actor.startswith("token:"):  # nothing else counts these
        audit.write_folded(place, name, outcome, actor or ANONYMOUS, queue, detail)
    else:
        audit.write(place, name, outcome, actor=actor, queue=queue, detail=detail)


def answer_error(request: HttpRequest, e: Exception | type[Exception]) -> HttpResponse:
    """ninja's exception handler: the one table's answer, the refusal audited."""
    assert isinstance(e, Exception)
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    found = failure(e, kwargs.get("conn"))
    if found is None:
        raise e
    audit_refusal(request, e, found.status, found.text)
    return found.response()


def error(status: int, text: str, request: HttpRequest) -> HttpResponse:
    """An answer a view gives itself (a 413): audited as a refusal."""
    return answer_error(request, Refused(status, text))


def readers(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """A plain Django view for readers (``reader``): /metrics."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            reader(request)
        except Refused as e:
            return answer_error(request, e)
        return view(request, *args, **kwargs)

    return wrapped
