"""The API's one route table: each route once — its method and path, the Action it runs
(the role it needs, its name in the audit log; None: a read), its view and its answers'
schemas — registered with django-ninja at a prefix of the first connection's first
namespace and at one that names both (``/c/{conn}/{ns}``). A plain data-plane route (send,
receive, delete one, change visibility) also carries its ``Plain``: its body model, its
call and its answer's shape, which its view runs and which the fast path
(dashboard/serving/fast.py) runs from the ASGI scope — the same pieces both ways."""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpRequest
from ninja import Router, Status
from ninja.renderers import JSONRenderer
from pydantic import BaseModel

from dashboard.access.callers import Caller, ReaderAuth, TokenAuth, caller
from dashboard.access.roles import Action
from dashboard.api.operations import COUNTED_BY_CALL, DataCall
from dashboard.places import place as places
from dashboard.places.place import Place

View = Callable[..., Any]
#: the path's parameters, the body (its model, validated), the query's parameters
Make = Callable[[Caller, Place, dict[str, str], Any, dict[str, Any]], DataCall]
RENDERER = JSONRenderer()
CONTENT_TYPE = f"{RENDERER.media_type}; charset={RENDERER.charset}"


@dataclass(frozen=True)
class Plain:
    """A plain data-plane call: ``make`` it from a request's parts (``body``: an instance
    of the body model, or None when none was sent and ``optional``), then ``answer`` the
    body with what the call returned: (status, payload)."""

    make: Make
    answer: Callable[[Any, Any], tuple[int, Any]]
    body: type[BaseModel] | None = None
    optional: bool = False
    query: dict[str, Any] = field(default_factory=dict)

    def run(
        self, request: HttpRequest, conn: str | None, ns: str | None, path: dict[str, str],
        body: Any = None, query: dict[str, Any] | None = None,
    ) -> Status[Any]:  # fmt: skip
        """What the route's view answers (ninja renders it as ``Route.render`` does)."""
        made = self.make(caller(request), places.resolve(conn, ns), path, body, query or {})
        return Status(*self.answer(body, made.run()))


@dataclass(frozen=True)
class Route:
    methods: tuple[str, ...]
    path: str  # under a prefix
    name: str
    action: Action | None
    view: View
    options: dict[str, Any]  # ninja's: response, exclude_none, tags, openapi_extra
    prefixes: tuple[str, str]  # the first place's, and the one naming conn and ns
    plain: Plain | None = None

    def paths(self) -> tuple[str, str]:
        """Both full paths under /api: the first place's, and the one naming the place."""
        return self.prefixes[0] + self.path, self.prefixes[1] + self.path

    def patterns(self) -> Iterator[re.Pattern[str]]:
        """Each path as Django resolves it (a parameter is one segment)."""
        for path in self.paths():
            yield re.compile("/api" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", path) + r"\Z")

    def render(self, status: int, payload: Any) -> bytes:
        """The answer's JSON as ninja renders it (the payload is in its schema's shape
        already, of JSON's own types: test_api_parity.py holds the two to the same bytes)."""
        return json.dumps(payload).encode()


#: every route of the API, in the order registered
TABLE: list[Route] = []


def register(
    router: Router,
    method: str | list[str],
    path: str,
    action: Action | None,
    name: str,
    prefixes: tuple[str, str] = ("", "/c/{conn}/{ns}"),
    plain: Plain | None = None,
    **options: Any,
) -> Callable[[View], View]:
    """Put ``view`` in the table and on ``router`` at both prefixes (operation ids
    ``name`` and ``name_at``). Acting routes take an API token (``TokenAuth``), reads any
    reader (``callers.ReaderAuth``)."""

    def add(view: View) -> View:
        methods = (method,) if isinstance(method, str) else tuple(method)
        route = Route(methods, path, name, action, view, options, prefixes, plain)
        TABLE.append(route)
        auth = TokenAuth(action, action in COUNTED_BY_CALL) if action else ReaderAuth()
        for full, made, suffix in zip(route.paths(), placed(view), ("", "_at"), strict=True):
            router.api_operation(list(methods), full, auth=auth, operation_id=name + suffix,
                                 **options)(made)  # fmt: skip
        return view

    return add


def placed(view: View) -> tuple[View, View]:
    """``view`` (taking ``conn`` and ``ns``) as two views for ninja: one at the first
    connection's first namespace, one taking both from its path. ninja reads their
    signatures (the path's parameters can have no default; the other's has none)."""
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
    return first, at
