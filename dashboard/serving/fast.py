"""The API's fast path: the plain data-plane calls answered in the server's event loop,
straight from the ASGI scope, their Redis round trip awaited on the place's pipelined
client — the route table's pieces (dashboard/api/routes.py: the same route, body model,
call, audit and answer as its django-ninja view), without Django's request cycle around
them. Anything it would answer differently goes to Django before anything has run: a route
or shape it does not take, a body its model refuses, a token this process has not read
within its cache time, a role too low, a cookie, a gzip-accepting client, a request
Django's middleware answers itself (a disallowed Host, a redirect to https).

Its headers are Django's own: the middleware of settings.MIDDLEWARE run once around an
answer of the same shape (``Shapes``), and kept."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.core.signals import setting_changed
from django.db import close_old_connections
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.module_loading import import_string
from pydantic import TypeAdapter, ValidationError

from dashboard.access import grants, tokens
from dashboard.access.callers import Caller
from dashboard.access.grants import refusal
from dashboard.api import routes
from dashboard.api.bodies import unstorable
from dashboard.api.calls import Failure, failure
from dashboard.api.operations import DataCall
from dashboard.api.routes import Route
from dashboard.places import place as places
from queues import QueueNotFound
from queues.errors import ApiRefused, NotSent

log = logging.getLogger(__name__)

Headers = list[tuple[bytes, bytes]]
Answer = tuple[int, Headers, bytes]


class Later(NamedTuple):
    """An answer a thread of the pool finishes: the call failed before its script ran
    (Redis down), and its audit row is the database's."""

    finish: Callable[[], Answer]


INTERNAL = Failure(500, "Internal error.")


class FastPath:
    def __init__(self) -> None:
        self.routes = [(method, pattern, route) for route in routes.TABLE if route.plain
                       for method in route.methods for pattern in route.patterns()]  # fmt: skip
        #: (route, query parameter) → its type's validator; the parameters a route needs
        self.queries: dict[tuple[int, str], TypeAdapter[Any]] = {}
        self.needed: dict[int, set[str]] = {}
        for route in routes.TABLE:
            for name, kind in (route.plain.query if route.plain else {}).items():
                adapter = self.queries[id(route), name] = TypeAdapter(kind)
                try:
                    adapter.validate_python(None)
                except ValidationError:
                    self.needed.setdefault(id(route), set()).add(name)
        self.shapes = Shapes()

    async def __call__(self, scope: dict[str, Any], body: bytes) -> Answer | Later | None:
        path, method = scope["path"], scope["method"]
        if not path.startswith("/api/") or not path.isascii() or scope.get("root_path"):
            return None
        for m, pattern, candidate in self.routes:
            found = pattern.match(path) if m == method else None
            if found is not None:
                route = candidate
                break
        else:
            return None
        authorization = host = forwarded = b""
        content_type: bytes | None = None
        proxy = self.shapes.proxy_header
        for name, value in scope["headers"]:
            name = name.lower()
            if name == b"authorization":
                if authorization:
                    return None
                authorization = value
            elif name == b"host":
                host = value
            elif name == b"content-type":
                content_type = value
            elif name == b"cookie":
                return None  # a session's request: Django's
            elif name == b"accept-encoding" and b"gzip" in value.lower():
                return None  # GZipMiddleware may compress its answer
            elif name == proxy:
                forwarded = value
        shape = self.shapes.get(host, forwarded, scope.get("scheme", "http"))
        if shape is None or authorization[:12].lower() != b"bearer rsmq_":
            return None
        seen = tokens.cached(authorization[7:].strip().decode("latin1"))
        params = found.groupdict()
        conn = params.pop("conn", None)
        ns = params.pop("ns", None)
        action = route.action
        if seen is None or action is None or not tokens.foldable(conn):
            return None
        row, generation = seen
        try:  # the check of ninja's TokenAuth; out of scope: Django answers the 404
            place = places.resolve(conn, ns)
            held = grants.of_token(row).held(place.conn.name, place.ns, params.get("qname", ""))
        except (Http404, QueueNotFound):
            return None
        if refusal(held, action.role):
            return None
        made = self._made(route, scope, body, content_type, params, conn, ns,
                          Caller(row, action, tokens.rate_of(row, generation)))  # fmt: skip
        if made is None:
            return None
        call, model = made
        try:
            got = await call.awaited()
        except (ApiRefused, NotSent):
            return None  # over its rate, the tokens changed, Redis not reached: nothing ran
        except Exception as e:
            if getattr(e, "audited", False):  # its script ran and recorded it
                return self._failed(e, conn, shape)
            return Later(partial(self._finish, call, e, conn, shape))
        assert route.plain is not None
        status, payload = route.plain.answer(model, got)
        data = route.render(status, payload)
        return status, [(b"content-type", routes.CONTENT_TYPE.encode()), *shape.of(data),
                        (b"content-length", str(len(data)).encode())], data  # fmt: skip

    def _made(
        self, route: Route, scope: dict[str, Any], body: bytes, content_type: bytes | None,
        params: dict[str, str], conn: str | None, ns: str | None, who: Caller,
    ) -> tuple[DataCall, Any] | None:  # fmt: skip
        """The call and its body's model, as ninja would make them; None: not as ninja
        would (Django says why), nothing run."""
        plain = route.plain
        assert plain is not None
        model = None
        if plain.body is not None and body:
            kind = (content_type or b"").split(b";")[0].strip().lower()
            if kind != b"application/json":
                return None
            try:
                data = json.loads(body)
                if unstorable(data) is not None:
                    return None
                model = plain.body.model_validate(data)
            except Exception:
                return None
        elif body or (plain.body is not None and not plain.optional):
            return None
        query: dict[str, Any] = {}
        raw = scope.get("query_string", b"")
        try:
            pairs = parse_qsl(raw.decode("ascii"), keep_blank_values=True, strict_parsing=True)
            for name, value in pairs if raw else ():
                adapter = self.queries.get((id(route), name))
                if adapter is None or name in query:
                    return None
                query[name] = adapter.validate_python(value)
            if self.needed.get(id(route), set()) - set(query):
                return None
            return plain.make(who, places.resolve(conn, ns), params, model, query), model
        except Exception:
            return None

    def _failed(self, e: Exception, conn: str | None, shape: Shape) -> Answer:
        found = failure(e, conn)
        if found is None:
            log.error("API call failed", exc_info=e)
            found = INTERNAL
        response = found.response()
        data = response.content
        return found.status, [
            (b"content-type", response["Content-Type"].encode()), *shape.of(data),
            *((k.lower().encode(), v.encode("latin1")) for k, v in found.headers),
            (b"content-length", str(len(data)).encode()),
        ], data  # fmt: skip

    def _finish(self, call: DataCall, e: Exception, conn: str | None, shape: Shape) -> Answer:
        """In a thread: the call's failure audited and answered, as its view would."""
        try:
            call.failed(e)
        except Exception as raised:
            return self._failed(raised, conn, shape)
        finally:
            close_old_connections()
        raise AssertionError("a failed call raises")


class Shape(NamedTuple):
    """The middleware's headers for an answer of the fast path: small, and of GZip's size
    or more (it adds a Vary)."""

    small: Headers
    big: Headers

    def of(self, data: bytes) -> Headers:
        return self.big if len(data) >= GZIP_MIN else self.small


GZIP_MIN = 200  # django.middleware.gzip: a shorter answer is left as it is


class Shapes:
    """The headers settings.MIDDLEWARE gives the fast path's answers, by what they depend
    on in a request — its Host (ALLOWED_HOSTS), its scheme and the proxy's header saying
    https (HSTS, SECURE_SSL_REDIRECT) — found by running the middleware around an answer
    of each size for such a request, once, and kept (until a setting changes). None: the
    middleware answers such a request itself; Django is to."""

    def __init__(self) -> None:
        self.known: dict[tuple[bytes, bytes, str], Shape | None] = {}
        self.chain: Callable[[HttpRequest], HttpResponse] | None = None
        self.answer = HttpResponse()
        header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
        self.proxy_header = header[0][5:].lower().replace("_", "-").encode() if header else None
        setting_changed.connect(self._forget, weak=False)

    def _forget(self, **kwargs: Any) -> None:
        self.__init__()  # type: ignore[misc]

    def get(self, host: bytes, forwarded: bytes, scheme: str) -> Shape | None:
        key = (host, forwarded, scheme)
        if key not in self.known:
            if len(self.known) > 1000:
                self.known.clear()
            self.known[key] = self._find(host.decode("latin1"), forwarded.decode("latin1"), scheme)
        return self.known[key]

    def _find(self, host: str, forwarded: str, scheme: str) -> Shape | None:
        if self.chain is None:

            def handler(request: HttpRequest) -> HttpResponse:
                return self.answer

            for path in reversed(settings.MIDDLEWARE):
                handler = import_string(path)(handler)
            self.chain = handler
        found = []
        for size in (0, GZIP_MIN):
            environ = {
                "REQUEST_METHOD": "POST", "PATH_INFO": "/api/", "SCRIPT_NAME": "",
                "SERVER_NAME": "fast", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
                "HTTP_HOST": host, "HTTP_AUTHORIZATION": "Bearer rsmq_", "wsgi.url_scheme": scheme,
                "wsgi.input": io.BytesIO(), "REMOTE_ADDR": "",
            }  # fmt: skip
            if self.proxy_header is not None and forwarded:
                environ[settings.SECURE_PROXY_SSL_HEADER[0]] = forwarded
            self.answer = HttpResponse(b" " * size, content_type=routes.CONTENT_TYPE)
            try:
                got = self.chain(WSGIRequest(environ))
            except Exception:
                return None
            if got is not self.answer or got.cookies:
                return None
            found.append([
                (k.lower().encode("latin1"), v.encode("latin1")) for k, v in got.items()
                if k.lower() not in ("content-type", "content-length")
            ])  # fmt: skip
        return Shape(*found)
