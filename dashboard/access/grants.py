"""Grants: a role at the queues of a connection and namespace whose names match a glob,
given to a user or a group (``Grant``), or carried by an API token (its scope). A
caller's role at a queue is the highest of the grants that match it; a queue at which it
holds no role is one it may not see (a 404, as a queue that does not exist).

A request's ``Scope`` is read once — a user's grants and their groups' in one query, a
token's from the row tokens.py keeps — and kept on the request (on its user, or set by
the API's auth), so a page of 1,000 queues asks the database once, whatever it checks."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import HttpRequest

from dashboard.access.roles import GROUPS, Role, read_only
from dashboard.audit import log as audit
from dashboard.models import ApiToken, AuditEntry, Grant
from dashboard.places.place import Place, configured, not_configured
from queues import QueueNotFound
from queues import validation as v

EVERY = "*"
T = TypeVar("T")
#: a glob of queue names: a queue name's characters, and fnmatch's * ? [ ] !
QUEUE_GLOB_RE = re.compile(r"[a-zA-Z0-9_\-*?\[\]!]{1,160}")
#: a glob of connection names or namespaces: anything but a separator or a space
PLACE_GLOB_RE = re.compile(r"[^\s/,]{1,200}")


@dataclass(frozen=True, slots=True)
class Rule:
    """One grant as a scope holds it."""

    role: Role
    conn: str
    ns: str
    queues: str

    def at(self, conn: str, ns: str) -> bool:
        return fnmatch.fnmatchcase(conn, self.conn) and fnmatch.fnmatchcase(ns, self.ns)


class Scope:
    """What a caller may see and do: its rules, and per place (connection, namespace) the
    rules there, worked out once."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = sorted(rules, key=lambda r: -r.role)
        self._places: dict[tuple[str, str], _Here] = {}

    @property
    def highest(self) -> Role:
        """The highest role held anywhere (the header's role, the buttons' hints)."""
        return self.rules[0].role if self.rules else Role.NONE

    @property
    def overall(self) -> Role:
        """The role held at every queue of every place (what a console-wide setting
        needs: minting tokens, every queue's alert rules)."""
        return max((r.role for r in self.rules if r.conn == r.ns == r.queues == EVERY),
                   default=Role.NONE)  # fmt: skip

    def here(self, conn: str, ns: str) -> _Here:
        found = self._places.get((conn, ns))
        if found is None:
            found = self._places[conn, ns] = _Here([r for r in self.rules if r.at(conn, ns)])
        return found

    def role_in(self, conn: str, ns: str) -> Role:
        """The highest role held at any queue of the place (NONE: it may not see it)."""
        return self.here(conn, ns).top

    def role_at(self, conn: str, ns: str, queue: str) -> Role:
        return self.here(conn, ns).role_at(queue)

    def sees(self, conn: str, ns: str, queue: str) -> bool:
        return self.role_at(conn, ns, queue) > Role.NONE

    def whole(self, conn: str, ns: str) -> bool:
        """Whether it sees every queue of the place (nothing to filter)."""
        return self.here(conn, ns).floor > Role.NONE

    def held(self, conn: str, ns: str, queue: str = "") -> Role:
        """The role held at the queue (no queue: at the place; a glob of names: where the
        grants cover it) — the check of every page, API call and the fast path. One holding
        a role somewhere but not at this place, or at this queue, gets the 404 of a place
        or a queue that does not exist; one holding none anywhere, NONE (the 403 of a
        missing role, which names nothing)."""
        if self.highest == Role.NONE:
            return Role.NONE
        if self.role_in(conn, ns) == Role.NONE:
            raise not_configured(conn, ns)
        if not queue:
            return self.role_in(conn, ns)
        found = self.role_at(conn, ns, queue)
        if found == Role.NONE and v.QNAME_RE.fullmatch(queue):
            raise QueueNotFound(queue)
        return found

    def shows(self, conn: str, ns: str, about: str) -> bool:
        """Whether a record about ``about`` — a queue, a glob of queue names (a rule's, an
        owner's, an annotation's), or "" (the whole place) — is one it may see: a glob
        when its grants cover it (``billing-eu-*`` under ``billing-*``)."""
        if not about:
            return self.role_in(conn, ns) > Role.NONE
        return self.role_at(conn, ns, about) > Role.NONE

    def hides(self, conn: str, ns: str, about: str) -> bool:
        """Whether a record is to be answered as one that does not exist: the caller
        holds a role somewhere but may not see it (one holding none gets the 403 of a
        missing role)."""
        return self.highest > Role.NONE and not self.shows(conn, ns, about)

    def visible(self, conn: str, ns: str, names: Iterable[str]) -> list[str]:
        """The names of ``names`` it may see, in their order."""
        here = self.here(conn, ns)
        if here.floor > Role.NONE:
            return list(names)
        return [n for n in names if here.any.match(n)] if here.any else []


class _Here:
    """A scope's rules at one place: the role at every queue (``floor``), the highest
    (``top``), and one compiled pattern per role for the rest."""

    def __init__(self, rules: list[Rule]) -> None:
        self.top = rules[0].role if rules else Role.NONE
        self.floor = max((r.role for r in rules if r.queues == EVERY), default=Role.NONE)
        by_role: dict[Role, list[str]] = {}
        for r in rules:
            if r.role > self.floor:
                by_role.setdefault(r.role, []).append(fnmatch.translate(r.queues))
        self.patterns = [(role, re.compile("|".join(ps))) for role, ps in by_role.items()]
        self.patterns.sort(key=lambda p: -p[0])
        every = [fnmatch.translate(r.queues) for r in rules]
        self.any = re.compile("|".join(every)) if every else None

    def role_at(self, queue: str) -> Role:
        for role, pattern in self.patterns:
            if pattern.match(queue):
                return role
        return self.floor


EMPTY = Scope(())


def everywhere(role: Role) -> Scope:
    return Scope([Rule(role, EVERY, EVERY, EVERY)])


def of_user(user: AbstractBaseUser | AnonymousUser) -> Scope:
    """A user's scope: their grants and their groups' (a superuser: admin everywhere),
    read once per user object (a request's user is one object for the request)."""
    member = user if isinstance(user, PermissionsMixin) else None
    if member is None or not user.is_authenticated or not user.is_active:
        return EMPTY
    found: Scope | None = getattr(user, "_rsmq_scope", None)
    if found is None:
        if member.is_superuser:
            found = everywhere(Role.ADMIN)
        else:
            rows = Grant.objects.filter(Q(user=user.pk) | Q(group__user=user.pk)).values_list(
                "role", "connection", "namespace", "queues"
            )
            found = Scope(Rule(GROUPS[role], c, n, q) for role, c, n, q in rows)
        user._rsmq_scope = found  # type: ignore[attr-defined]
    return found


def of_token(row: ApiToken) -> Scope:
    """An API token's scope (kept on the row, which tokens.py keeps for its cache time)."""
    found: Scope | None = getattr(row, "_rsmq_scope", None)
    if found is None:
        role = GROUPS[row.role]
        globs = [g.strip() for g in row.queues.split(",") if g.strip()]
        found = Scope(Rule(role, row.connection, row.namespace, g) for g in globs)
        row._rsmq_scope = found  # type: ignore[attr-defined]
    return found


def bind(request: HttpRequest, scope: Scope) -> Scope:
    """The request is the API's, by a token or the metrics token: its scope is that."""
    request._rsmq_scope = scope  # type: ignore[attr-defined]
    return scope


def scope_of(request: HttpRequest) -> Scope:
    """The request's scope: its token's (bound by the API's auth), else its user's."""
    found: Scope | None = getattr(request, "_rsmq_scope", None)
    return found if found is not None else of_user(request.user)


def role_at(request: HttpRequest, conn: str, ns: str, queue: str) -> Role:
    """The role the request's caller (a session's user, an API token) holds at a queue:
    NONE where it may not see it."""
    return scope_of(request).role_at(conn, ns, queue)


def visible(request: HttpRequest, place: Place, names: Iterable[str]) -> list[str]:
    """The queue names of ``names`` at ``place`` that the request's caller may see."""
    return scope_of(request).visible(place.conn.name, place.ns, names)


def shown(
    request: HttpRequest, rows: Iterable[T], where: Callable[[T], tuple[str, str, str]]
) -> Iterator[T]:
    """The rows of ``rows`` the caller may see; ``where``: a row's connection, namespace
    and the queue (or glob, or "") it is about."""
    scope = scope_of(request)
    if scope.overall > Role.NONE:
        yield from rows
        return
    for row in rows:
        if scope.shows(*where(row)):
            yield row


def kept(
    request: HttpRequest, rows: Iterable[T], where: Callable[[T], tuple[str, str, str]]
) -> Iterable[T]:
    """``rows`` as they are for a caller who sees everything (a queryset stays one);
    else the list of those it may see (``shown``)."""
    if scope_of(request).overall > Role.NONE:
        return rows
    return list(shown(request, rows, where))


def places(request: HttpRequest) -> list[tuple[str, str]]:
    """The configured (connection, namespace) places the caller holds a role at."""
    scope = scope_of(request)
    return [(c, ns) for c, ns in configured() if scope.role_in(c, ns) > Role.NONE]


def refusal(role: Role, needed: Role) -> str:
    """Why a caller holding ``role`` may not act at ``needed`` ("": it may)."""
    if needed > Role.VIEWER and read_only():
        return "The console is read-only (RSMQ_READ_ONLY)."
    if role < needed:
        return f"This needs the {needed.name.lower()} role."
    return ""


# -- console-wide checks: a role held anywhere -------------------------------------------


def role_of(user: AbstractBaseUser | AnonymousUser) -> Role:
    return of_user(user).highest


def can(user: AbstractBaseUser | AnonymousUser, role: Role) -> bool:
    """Whether the user holds ``role`` somewhere (reading is never switched off)."""
    return not refusal(of_user(user).highest, role)


def require(user: AbstractBaseUser | AnonymousUser, role: Role, overall: bool = False) -> None:
    """Go on if the user holds ``role`` somewhere (``overall``: at every queue); else 403."""
    scope = of_user(user)
    reason = refusal(scope.overall if overall else scope.highest, role)
    if reason:
        raise PermissionDenied(reason)


# -- checking what an admin writes ---------------------------------------------------------


def check_scope(connection: str, namespace: str, queues: str, many: bool = False) -> None:
    """A grant's or a token's globs, or a ValidationError naming the field and the form
    it takes (``many``: ``queues`` is a comma-separated list of globs)."""
    errors: dict[str, str] = {}
    for name, value in (("connection", connection), ("namespace", namespace)):
        if not PLACE_GLOB_RE.fullmatch(value or ""):
            errors[name] = (
                f"{name} must be a name or a glob (* for every one), without / , or spaces"
            )
    globs = [g.strip() for g in queues.split(",")] if many else [queues]
    for glob in globs:
        if not QUEUE_GLOB_RE.fullmatch(glob or "") or not _brackets_closed(glob):
            errors["queues"] = (
                f"queues must be {'globs, comma-separated' if many else 'a glob'} of queue names"
                f" (a-z A-Z 0-9 _ - and * ? [ ]), e.g. billing-*: {glob!r} is not"
            )
            break
    if errors:
        raise ValidationError(errors)


def check_role(role: str) -> None:
    if role not in GROUPS:
        raise ValidationError({"role": f"role must be one of {', '.join(GROUPS)}: {role!r} is not"})


def _brackets_closed(glob: str) -> bool:
    depth = 0
    for c in glob:
        if c == "[":
            if depth:
                return False
            depth = 1
        elif c == "]":
            if not depth:
                return False
            depth = 0
    return depth == 0


# -- grants changed: the audit log's rows -----------------------------------------------


def described(grant: Grant) -> dict[str, str]:
    """A grant as its audit row keeps it."""
    who = f"user:{grant.user.get_username()}" if grant.user else f"group:{grant.group}"
    return {"to": who, "role": grant.role, "connection": grant.connection,
            "namespace": grant.namespace, "queues": grant.queues}  # fmt: skip


def audit_change(
    request: HttpRequest, action: str, before: dict[str, str] | None, after: dict[str, str] | None
) -> None:
    """A grant made (``grant_create``), changed (``grant_change``: what it was and is) or
    deleted (``grant_delete``), by the request's user: its row in the audit log, about the
    place and queues it names (its globs)."""
    now = after or before
    assert now is not None
    audit.write((now["connection"], now["namespace"]), action, AuditEntry.Outcome.OK,
                user=request.user, queue=now["queues"], params={"before": before, "after": after},
                detail=f"{now['role']} for {now['to']}")  # fmt: skip
