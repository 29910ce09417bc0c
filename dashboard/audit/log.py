"""The audit log's writer: one row per mutating action, allowed, failed or denied."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypedDict

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone

from dashboard.models import AuditEntry
from dashboard.places.connections import Connection


class Place(Protocol):
    """Where an action was tried: what a row keeps of a ``place.Place`` (which audits
    denied access through ``require``, so this module does not import it)."""

    @property
    def conn(self) -> Connection: ...

    @property
    def ns(self) -> str: ...


MAX_IDS, MAX_DETAIL = 1000, 2000  # a bulk action over a whole state names no more


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
        ids=list(ids)[:MAX_IDS],
        count=count,
        # JSON values only: a date or a Decimal from a form is written as its text.
        params=json.loads(json.dumps(params or {}, default=str)),
        outcome=outcome,
        detail=detail[:MAX_DETAIL],
    )


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
    place: Place, action: str, outcome: str, actor: str, queue: str = "", detail: str = ""
) -> None:
    """A refusal that anyone can repeat at will (no token, an unknown one, or one over its
    rate): the first in FOLD_SECONDS gets a row, the repeats of the same actor, action and
    outcome count on it (``params["repeats"]``), so a flood of refused calls adds at most
    one row a minute per kind."""
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
    return value[:max_length] if max_length else value


def record_lockout(
    sender: object, request: HttpRequest, username: str | None, ip_address: str, **kwargs: Any
) -> None:
    """django-axes refused a login (too many failures for this user name from this
    address): one row per refused try, with no place (a login has none)."""
    write(
        None, "login", AuditEntry.Outcome.THROTTLED, actor=username or "",
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
