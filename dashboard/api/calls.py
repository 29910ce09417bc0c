"""What every API call goes through: the token (who, at which role, how often), the
action's row in the console's tables (the role it needs, its name in the audit log), the
audit row, and the one answer for each failure (web_errors.py's table; 400 for input)."""

from __future__ import annotations

import inspect
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

from queues import (
    InvalidArgument,
    MessageNotString,
    MessageTooLong,
    NoAttributeSupplied,
    QueueExists,
    RsmqError,
)
from queues import validation as v

from .. import audit, tokens
from .. import place as places
from ..access import Role, read_only
from ..actions import Action
from ..connections import get_connection
from ..models import ApiToken, AuditEntry
from ..place import Place
from ..web_errors import web_error

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
}


class BadInput(Exception):
    """The call's input, refused before anything ran: 400."""


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

    @sensitive_variables("token")  # starred in error reports, DEBUG too
    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        row = tokens.admit(token.strip())
        needed = self.action.role if self.action else Role.VIEWER
        reason = refusal(tokens.role_of(row), needed)
        if reason:
            if self.action is not None:
                kwargs = request.resolver_match.kwargs if request.resolver_match else {}
                place = places.resolve(kwargs.get("conn"), kwargs.get("ns"))
                audit.record(
                    request, place, self.action.audit_name, AuditEntry.Outcome.DENIED,
                    queue=kwargs.get("qname", ""), detail=reason, actor=actor(row),
                )  # fmt: skip
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
) -> T:
    """Run ``work`` (its answer, and the count the audit row keeps) and audit its outcome,
    as the console's ``Posted.act`` does; bad input: 400, nothing changed."""
    ids, name = list(ids), actor(token_of(request))

    def record(outcome: str, count: int | None, detail: str) -> None:
        audit.record(
            request, place, action.audit_name, outcome, qname, ids, count, params, detail,
            actor=name,
        )  # fmt: skip

    try:
        answer, count = work()
    except INPUT_ERRORS as e:
        record(AuditEntry.Outcome.INVALID, None, str(e))
        raise BadInput(str(e)) from None
    except Exception as e:
        record(AuditEntry.Outcome.ERROR, None, str(e))
        raise
    record(AuditEntry.Outcome.OK, count, "")
    return answer


View = Callable[..., Any]


def placed(view: View, atomic: bool = True) -> tuple[View, View]:
    """``view`` (taking ``conn`` and ``ns``) as two views for ninja: one at the first
    connection's first namespace, one taking both from its path. ninja reads their
    signatures (the path's parameters can have no default; the other's has none).
    ``atomic``: each call in one database transaction (not for the session's reads)."""
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
            # The token's count, the action and its audit row in one transaction: one
            # commit (one fsync on SQLite) per call, not two.
            decorate_view(transaction.atomic)(made)
    return first, at


def queue_in_url(qname: str) -> str:
    """A URL's queue name: one that can't be a queue is a 404 (the read API's answer)."""
    try:
        return v.qname(qname)
    except InvalidArgument as e:
        raise Http404(f"{e}: not a valid queue name.") from None


# -- answers ---------------------------------------------------------------------------


def error(status: int, text: str) -> JsonResponse:
    return JsonResponse({"error": text}, status=status)


def unauthorized(text: str) -> JsonResponse:
    response = error(401, text)
    response["WWW-Authenticate"] = 'Bearer realm="rsmq-console"'
    return response


def on_unauthenticated(request: HttpRequest, exc: Exception) -> HttpResponse:
    if isinstance(exc, AuthenticationError):
        return unauthorized("Authentication required: an API token, as Authorization: Bearer.")
    return unauthorized(str(exc))


def on_rate_limited(request: HttpRequest, exc: tokens.RateLimited) -> HttpResponse:
    response = error(429, str(exc))
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
    return error(400, "; ".join(dict.fromkeys(texts)) or "Invalid request.")


def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    """ninja's own refusals (a body that is no JSON: 400), in our shape."""
    return error(exc.status_code, f"{exc.message}.")


def on_bad_input(request: HttpRequest, exc: BadInput) -> HttpResponse:
    return error(400, str(exc))


def on_queue_exists(request: HttpRequest, exc: QueueExists) -> HttpResponse:
    return error(409, str(exc))


def on_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Everything else: the one table's answer (web_errors.py), as the read API gives it."""
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    found = web_error(exc, get_connection(kwargs.get("conn")))
    if found is None:
        raise exc
    return error(found.status, found.text)


HANDLERS: list[tuple[type[Exception], Callable[[HttpRequest, Any], HttpResponse]]] = [
    (AuthenticationError, on_unauthenticated),
    (tokens.Unauthenticated, on_unauthenticated),
    (tokens.RateLimited, on_rate_limited),
    (SchemaError, on_schema_error),
    (HttpError, on_http_error),
    (BadInput, on_bad_input),
    (QueueExists, on_queue_exists),
    (PermissionDenied, on_error),
    (Http404, on_error),
    (RsmqError, on_error),
    (Exception, on_error),
]
