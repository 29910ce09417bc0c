"""The audit log's writer: one row per mutating action, allowed, failed or denied.

An action with an effect (Redis changed) writes its row before it runs (``start``:
outcome "started") and finishes it after (``finish``): a row that can't be written stops
the action before it does anything (``NotAudited``: 503), and a row that can't be
finished leaves the action's answer standing — never a 500 after an effect — with the
row saying it started. Whatever a row keeps is text a database can store (``storable``:
Postgres refuses NUL and lone surrogates)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypedDict

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import DatabaseError, transaction
from django.http import HttpRequest
from django.utils import timezone

from dashboard.models import AuditEntry
from dashboard.places.connections import Connection
from dashboard.web.errors import NotAudited
from dashboard.web.text import storable as storable_text

log = logging.getLogger(__name__)


class Place(Protocol):
    """Where an action was tried: what a row keeps of a ``place.Place`` (which audits
    denied access through ``require``, so this module does not import it)."""

    @property
    def conn(self) -> Connection: ...

    @property
    def ns(self) -> str: ...


MAX_IDS, MAX_DETAIL = 1000, 2000  # a bulk action over a whole state names no more
#: what stands for a character a database can't store (NUL, a lone surrogate)
REPLACEMENT = "\ufffd"


def _text(value: str) -> str:
    if storable_text(value):
        return value
    value = value.replace("\x00", REPLACEMENT)
    return "".join(REPLACEMENT if "\ud800" <= c <= "\udfff" else c for c in value)


def storable(value: Any) -> Any:
    """``value`` (text, or JSON's lists and objects of it) with every NUL and lone
    surrogate replaced by U+FFFD: what any database stores (Postgres refuses both in text
    and in JSON, where SQLite would take them)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [storable(v) for v in value]
    return value


def write(
    place: Place | tuple[str, str] | None,
    action: str,
    outcome: str,
    *,
    actor: str = "",
    user: AbstractBaseUser | AnonymousUser | None = None,
    queue: str = "",
    ids: Iterable[str] = (),
    count: int | None = None,
    params: Mapping[str, Any] | None = None,
    detail: str = "",
) -> AuditEntry:
    """The one way a row is written: by ``actor`` (an API token, by its name) or ``user``
    (a console user); ``place``: a Place, (connection, namespace) as a stored row names
    them, or None: an action of no place (a login, a token)."""
    person = user if isinstance(user, User) and not actor else None
    if isinstance(place, tuple):
        conn, ns = place
    else:
        conn, ns = (place.conn.name, place.ns) if place else ("", "")
    return AuditEntry.objects.create(
        user=person,
        username=_fit("username", actor or (user.get_username() if user is not None else "")),
        connection=_fit("connection", conn),
        namespace=_fit("namespace", ns),
        # Whatever was posted, never more than its column holds (Postgres would refuse).
        queue=_fit("queue", queue),
        action=_fit("action", action),
        ids=storable(list(ids)[:MAX_IDS]),
        count=count,
        params=_params(params),
        outcome=outcome,
        detail=_text(detail[:MAX_DETAIL]),
    )


def _params(params: Mapping[str, Any] | None) -> Any:
    # JSON values only: a date or a Decimal from a form is written as its text.
    return storable(json.loads(json.dumps(params or {}, default=str)))


def start(
    place: Place | None,
    action: str,
    *,
    actor: str = "",
    user: AbstractBaseUser | AnonymousUser | None = None,
    queue: str = "",
    ids: Iterable[str] = (),
    params: Mapping[str, Any] | None = None,
) -> AuditEntry:
    """The row of an action about to run, written before it does anything (outcome
    "started", ``finish`` says how it went). NotAudited when it can't be written: the
    action must not run."""
    try:
        return write(place, action, AuditEntry.Outcome.STARTED, actor=actor, user=user,
                     queue=queue, ids=ids, params=params)  # fmt: skip
    except DatabaseError as e:
        raise NotAudited(str(e)) from e


def finish(
    row: AuditEntry,
    outcome: str,
    *,
    count: int | None = None,
    params: Mapping[str, Any] | None = None,
    detail: str = "",
    ids: Iterable[str] | None = None,
) -> bool:
    """A started row, finished with what came of its action. Never raises: False when it
    could not be written (logged; the row says the action started, and the action's
    answer stands)."""
    fields: dict[str, Any] = {"outcome": outcome, "count": count, "params": _params(params),
                              "detail": _text(detail[:MAX_DETAIL])}  # fmt: skip
    if ids is not None:
        fields["ids"] = storable(list(ids)[:MAX_IDS])
    try:
        AuditEntry.objects.filter(pk=row.pk).update(**fields)
    except Exception:  # noqa: BLE001 - the action ran: its answer must not become a 500
        log.exception("audit row %s (%s) not finished: it stays 'started'", row.pk, row.action)
        return False
    for name, value in fields.items():
        setattr(row, name, value)
    return True


def forget(row: AuditEntry | None) -> None:
    """A started row whose action never ran after all (refused before it began: the
    refusal has its own row)."""
    if row is None:
        return
    try:
        AuditEntry.objects.filter(pk=row.pk, outcome=AuditEntry.Outcome.STARTED).delete()
    except DatabaseError:
        log.exception("audit row %s of an action that never ran stays 'started'", row.pk)


def record(
    request: HttpRequest,
    place: Place,
    action: str,
    outcome: str,
    queue: str = "",
    ids: Iterable[str] = (),
    count: int | None = None,
    params: Mapping[str, Any] | None = None,
    detail: str = "",
    actor: str = "",
) -> AuditEntry:
    """The request's user's action (``write``); ``actor``: who acted when no console user
    did (an API token, by its name)."""
    return write(place, action, outcome, actor=actor, user=request.user, queue=queue, ids=ids,
                 count=count, params=params, detail=detail)  # fmt: skip


FOLD_SECONDS = 60  # refusals of one kind by one actor within this long: one row, counted


def write_folded(
    place: Place | None, action: str, outcome: str, actor: str, queue: str = "", detail: str = ""
) -> None:
    """A refusal that anyone can repeat at will (no token, an unknown one, or one over its
    rate; a login while locked out): the first in FOLD_SECONDS gets a row, the repeats of
    the same actor, action and outcome count on it (``params["repeats"]``), so a flood of
    refused calls adds at most one row a minute per kind."""
    who = _fit("username", actor)
    since = timezone.now() - dt.timedelta(seconds=FOLD_SECONDS)
    with transaction.atomic():
        last = (
            AuditEntry.objects.select_for_update()
            .filter(username=who, action=_fit("action", action), outcome=outcome, at__gte=since)
            .filter(params__has_key="repeats")
            .order_by("-at", "-id")
            .first()
        )
        if last is not None:
            last.params = {**last.params, "repeats": int(last.params["repeats"]) + 1}
            last.save(update_fields=["params"])
            return
        write(place, action, outcome, actor=who, queue=queue, params={"repeats": 1},
              detail=detail)  # fmt: skip


def _fit(field: str, value: str) -> str:
    max_length = getattr(AuditEntry._meta.get_field(field), "max_length", None)
    return _text(value[:max_length] if max_length else value)


def record_lockout(
    sender: object, request: HttpRequest, username: str | None, ip_address: str, **kwargs: Any
) -> None:
    """django-axes refused a login (too many failures for this user name from this
    address), with no place (a login has none): folded as the API's refusals are — one
    row a minute per user name, counting its tries (``params["repeats"]``), so a client
    hammering the form while locked out adds no more."""
    write_folded(
        None, "login", AuditEntry.Outcome.THROTTLED, username or "",
        detail=f"Locked out after too many failed logins from {ip_address}.",
    )  # fmt: skip


#: how much of each body an edit-and-re-send's audit row keeps (the first bytes, cut at a
#: character's start): a row stays small whatever the message's size
AUDIT_BODY_BYTES = 65536


class KeptBody(TypedDict):
    """A body as an audit row keeps it: its first AUDIT_BODY_BYTES bytes (None: there was
    no body to keep, e.g. the original was gone), its whole size, and whether it was cut."""

    text: str | None
    bytes: int
    cut: bool


class ResendBodies(TypedDict):
    """What an edit and re-send's audit row keeps of the two bodies (``params["bodies"]``)."""

    before: KeptBody
    after: KeptBody


class ResendParams(TypedDict, total=False):
    """An edit and re-send's audit params, the page's and the API's alike: where it went,
    whether the original was deleted, the delay; the bodies, and the new message's id once
    it was sent."""

    to: str
    delete_original: bool
    delay: int | None
    bodies: ResendBodies
    new_id: str


def kept_body(body: str | None) -> KeptBody:
    """A body as an audit row keeps it (``KeptBody``)."""
    if body is None:
        return {"text": None, "bytes": 0, "cut": False}
    raw = body.encode("utf-8", "surrogatepass")
    text = raw[:AUDIT_BODY_BYTES].decode("utf-8", "ignore")
    return {"text": text, "bytes": len(raw), "cut": len(raw) > AUDIT_BODY_BYTES}


def resend_bodies(before: str | None, after: str) -> ResendBodies:
    return {"before": kept_body(before), "after": kept_body(after)}
