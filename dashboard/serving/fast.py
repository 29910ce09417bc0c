"""The lean request path of the HTTP API: a call that carries an API token
(``Authorization: Bearer rsmq_…``) to ``/api/`` goes through a Django handler of its own,
without what only a browser's requests need — the session, CSRF, the user, messages,
django-axes, CSP, htmx, static files. A token call has no session and no cookie to trust,
acts only by its token (dashboard/api/calls.py), and answers JSON; every other request
takes the full stack (settings.MIDDLEWARE). The same views, the same URLs."""

from __future__ import annotations

import copy
import io
import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import ResolverMatch

log = logging.getLogger(__name__)

LEAN_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",  # ALLOWED_HOSTS, the missing slash
    "dashboard.serving.fast.NoUser",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "dashboard.web.middleware.RedisUnavailableMiddleware",
]
PREFIX = "bearer rsmq_"

StartResponse = Callable[..., Any]
Wsgi = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class NoUser:
    """A token call is nobody's session: ``request.user`` is anonymous, never looked up."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.user = AnonymousUser()
        return self.get_response(request)


class LeanHandler(WSGIHandler):
    """Django's WSGI handler with LEAN_MIDDLEWARE instead of settings.MIDDLEWARE."""

    def load_middleware(self, is_async: bool = False) -> None:
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = LEAN_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


def token_call(environ: dict[str, Any]) -> bool:
    path = environ.get("PATH_INFO", "")
    given = environ.get("HTTP_AUTHORIZATION", "")
    return path.startswith("/api/") and given[: len(PREFIX)].lower() == PREFIX


def dispatch(full: Wsgi) -> Wsgi:
    """The application: token calls to the lean handler, the rest to ``full``."""
    lean = LeanHandler()

    def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if token_call(environ):
            answer = fast(environ, start_response)
            return lean(environ, start_response) if answer is None else answer
        return full(environ, start_response)

    return application


def in_loop(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes] | None:
    """The server's event loop's answer (dashboard/asgi.py): ``fast``'s, for a token call
    whose body is within the limit (ChunkedBodies refuses the others, in a thread); None:
    a thread answers. ``fast`` there touches only Redis (the database is Django's, in
    threads: what needs it is deferred, calls.Deferred)."""
    if not token_call(environ):
        return None
    length = environ.get("CONTENT_LENGTH") or "0"
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if not length.isdigit() or (limit is not None and int(length) > limit):
        return None
    return fast(environ, start)


# -- The data plane's fast path ---------------------------------------------------------
#
# Django's request cycle and ninja's parsing cost a token call ~6× what the operation and
# gunicorn do (bench/api.py: a bare WSGI function under the same gunicorn, 2.5× rest-rsmq
# at 16 clients; the console's Django path, 0.4×). The three calls a queue's consumers
# make all day — send one, receive, delete one; native routes and rest-rsmq's, on the
# first connection's first namespace — are answered here when the request has exactly the
# plain shape (a JSON body of the right types, a token this process has read): the same
# functions as the Django views run (dashboard/api/operations.py: role, rate, audit, the
# same scripts), the same answers, the same errors (dashboard/api/calls.py's handlers).
# Anything else — another route or shape, a chunked body, an unknown token, a bad field —
# goes to the Django path untouched, before anything has run, which answers it in full.

FAST_MAX_BODY = 64 * 1024 + 1024


class _Request(HttpRequest):
    """What operations.py and calls.py read of a request (its token, the rate the call's
    script counts, no user), and what calls.py's error handlers take. HttpRequest's own
    __init__ (query dicts, files, cookies: a third of this path's time) is skipped: none
    of them is read here."""

    def __init__(self, meta: dict[str, Any], path: str, method: str | None) -> None:
        self.META = meta
        self.path = self.path_info = path
        self.method = method
        self.resolver_match = None
        self.user = AnonymousUser()
        self.auth: Any = None
        self.api_rate: Any = None
        self.rsmq_action: Any = None


def _headers(content_type: str = "application/json") -> list[tuple[str, str]]:
    out = [("Content-Type", content_type), ("X-Frame-Options", settings.X_FRAME_OPTIONS)]
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        out.append(("X-Content-Type-Options", "nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        out.append(("Referrer-Policy", str(settings.SECURE_REFERRER_POLICY)))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        out.append(("Cross-Origin-Opener-Policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY))
    return out


_STATUS = {200: "200 OK", 201: "201 Created"}
#: Host header → (the ALLOWED_HOSTS it was checked against, whether it is allowed)
_HOSTS: dict[str, tuple[Any, bool]] = {}


def _int(value: Any) -> bool:
    return type(value) is int


def fast(environ: dict[str, Any], start: StartResponse) -> Iterable[bytes] | None:
    """The answer to a plain data-plane token call, or None: the Django path answers."""
    from django.db import close_old_connections

    from dashboard.api import calls

    if settings.SECURE_SSL_REDIRECT or environ.get("wsgi.url_scheme") != "http":
        return None

    def read(n: int) -> bytes:
        raw: bytes = environ["wsgi.input"].read(n)
        environ["wsgi.input"] = io.BytesIO(raw)  # the Django path reads the same bytes
        return raw

    try:
        ready = prepare(
            environ, environ.get("REQUEST_METHOD"), environ.get("PATH_INFO", ""),
            environ.get("QUERY_STRING", ""), environ.get("HTTP_HOST", ""),
            environ.get("HTTP_AUTHORIZATION", ""), environ.get("CONTENT_LENGTH") or "",
            environ.get("CONTENT_TYPE", ""), environ.get("HTTP_TRANSFER_ENCODING"), read,
        )  # fmt: skip
        if ready is None:
            return None
        status, data = answered(ready)
    except Failed as f:
        return _respond_error(f.request, f.error, start)
    finally:
        if not calls.in_event_loop():
            close_old_connections()
    start(_STATUS[status], [*_headers(), ("Content-Length", str(len(data)))])
    return [data]


ByteHeaders = list[tuple[bytes, bytes]]
#: the request headers ``prepare`` reads, by their names in a WSGI environ
_SCOPE_HEADERS = {
    b"host": "HTTP_HOST", b"authorization": "HTTP_AUTHORIZATION",
    b"content-length": "CONTENT_LENGTH", b"content-type": "CONTENT_TYPE",
    b"transfer-encoding": "HTTP_TRANSFER_ENCODING",
}  # fmt: skip


async def in_scope(scope: dict[str, Any], body: bytes) -> tuple[int, ByteHeaders, bytes] | None:
    """``in_loop``'s answer read straight from the ASGI scope (dashboard/asgi.py): no WSGI
    environ, no start_response, and the call's round trip awaited (``awaited``).
    The same answer ``fast`` gives the environ a2wsgi builds of this request — the same
    parts of it (``prepare``), the same status, headers and body — or None: the environ
    path takes the request, as before (``in_loop``, then a thread). In the event loop;
    what needs a thread raises calls.Deferred (its request's META is the environ's to be:
    ``Threads`` sets it)."""
    ready = scope_ready(scope, body)
    if ready is None:
        return None
    status, data = await awaited(ready)
    return status, [*_byte_headers(), (b"content-length", str(len(data)).encode())], data


def scope_ready(scope: dict[str, Any], body: bytes) -> Ready | None:
    """``in_scope``'s call made ready from the scope (``prepare``), or None."""
    if scope.get("root_path") or scope.get("scheme", "http") != "http":
        return None
    if settings.SECURE_SSL_REDIRECT:
        return None
    path = scope["path"]
    if not path.startswith("/api/") or not path.isascii():
        return None  # (a2wsgi's PATH_INFO is the path's UTF-8 as latin-1: the same if ASCII)
    meta: dict[str, Any] = {"REQUEST_METHOD": scope["method"], "PATH_INFO": path}
    for name, value in scope["headers"]:
        key = _SCOPE_HEADERS.get(name.lower())
        if key is not None:
            text = value.decode("latin1")
            meta[key] = f"{meta[key]},{text}" if key in meta else text  # as a2wsgi joins
    given = meta.get("HTTP_AUTHORIZATION", "")
    if given[: len(PREFIX)].lower() != PREFIX:
        return None
    length = meta.get("CONTENT_LENGTH") or "0"
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if not length.isdigit() or (limit is not None and int(length) > limit):
        return None
    if int(length) != len(body):  # (a body not as declared: the environ path's to answer)
        return None
    try:
        query = scope["query_string"].decode("ascii")
    except UnicodeDecodeError:
        return None
    meta["QUERY_STRING"] = query
    return prepare(
        meta, scope["method"], path, query, meta.get("HTTP_HOST", ""), given,
        meta.get("CONTENT_LENGTH") or "", meta.get("CONTENT_TYPE", ""),
        meta.get("HTTP_TRANSFER_ENCODING"), lambda n: body[:n],
    )  # fmt: skip


#: settings → ``_headers()`` as the server sends them (``Threads.call``'s lower-case bytes)
_BYTE_HEADERS: dict[tuple[Any, ...], list[tuple[bytes, bytes]]] = {}


def _byte_headers() -> list[tuple[bytes, bytes]]:
    key = (
        settings.X_FRAME_OPTIONS, settings.SECURE_CONTENT_TYPE_NOSNIFF,
        settings.SECURE_REFERRER_POLICY, settings.SECURE_CROSS_ORIGIN_OPENER_POLICY,
    )  # fmt: skip
    found = _BYTE_HEADERS.get(key)
    if found is None:
        found = [(k.lower().encode("latin1"), v.encode("latin1")) for k, v in _headers()]
        _BYTE_HEADERS[key] = found
    return found


_MODULES: tuple[Any, ...] | None = None


def _modules() -> tuple[Any, ...]:
    """What ``prepare`` uses, imported once (not at this module's import: Django's apps)."""
    global _MODULES
    if _MODULES is None:
        from django.http.request import split_domain_port, validate_host

        from dashboard.access import tokens
        from dashboard.api import calls, native, operations
        from queues import validation

        _MODULES = (split_domain_port, validate_host, validation, tokens, calls, native,
                    operations)  # fmt: skip
    return _MODULES


#: (RSMQ_CONNECTIONS and RSMQ_SOCKET_TIMEOUT as they were, the first place then, whether
#: its calls are counted by their own scripts then)
_FIRST: tuple[Any, Any, Any, bool] | None = None


def _first_place() -> tuple[Any, bool]:
    """``place.resolve(None, None)`` and ``tokens.foldable(None)``, made again only when
    the settings they are made of change (each built the connections' list anew)."""
    global _FIRST
    conns, timeout = settings.RSMQ_CONNECTIONS, settings.RSMQ_SOCKET_TIMEOUT
    first = _FIRST
    if first is None or first[1] != timeout or first[0] != conns:
        from dashboard.access import tokens
        from dashboard.places import place

        first = (copy.deepcopy(conns), timeout, place.resolve(None, None),
                 tokens.foldable(None))  # fmt: skip
        _FIRST = first
    return first[2], first[3]


class Failed(Exception):  # noqa: N818 (carries an error to answer, with its request)
    """A plain call failed outside the event loop: ``error``, answered for ``request``
    as calls.py's handlers do (``_respond_error``)."""

    def __init__(self, request: HttpRequest, error: Exception) -> None:
        super().__init__(str(error))
        self.request, self.error = request, error


class Ready:
    """A plain call made ready (``prepare``): its DataCall and how its answer is sent."""

    __slots__ = ("call", "kind", "native_route", "batch")

    def __init__(self, call: Any, kind: str, native_route: bool, batch: bool) -> None:
        self.call, self.kind, self.native_route, self.batch = call, kind, native_route, batch

    def answer(self, got: Any) -> tuple[int, bytes]:
        """The status and JSON of the call's answer ``got`` (DataCall's)."""
        native = _modules()[5]
        answer: Any
        if self.kind == "send" and self.batch:
            status, answer = 201, {"ids": got}
        elif self.kind == "send":
            status, answer = 201 if self.native_route else 200, {"id": got[0]}
        elif self.kind == "receive":
            if self.native_route:
                answer = {"messages": [native.message_json(m) for m in got]}
            else:
                answer = native.message_json(got[0]) if got else {}
            status = 200
        else:
            status, answer = 200, {"result": got if self.native_route else int(got)}
        return status, json.dumps(answer).encode()

    def failed(self, e: Exception) -> Exception:
        return _failure(self.call.request, e)


def _failure(request: HttpRequest, e: Exception) -> Exception:
    """What a plain call raises for ``e``, raised by it: in the event loop, a
    calls.Deferred (the rest is for a thread: ``finish``); outside it, ``Failed``."""
    calls = _modules()[4]
    if isinstance(e, calls.Deferred):
        e.request = request
        return e
    if calls.in_event_loop():
        later = calls.Deferred(calls.raising(e))
        later.request = request
        return later
    return Failed(request, e)


def answered(ready: Ready) -> tuple[int, bytes]:
    """A plain call's status and JSON body, its round trip blocking (``fast``: in a thread,
    or the environ path in the event loop). In the event loop, what needs a thread raises
    calls.Deferred; outside it, an error raises ``Failed``."""
    try:
        got = ready.call()
    except Exception as e:
        raise ready.failed(e) from e
    return ready.answer(got)


async def awaited(ready: Ready) -> tuple[int, bytes]:
    """``answered``'s answer in the event loop, the round trip awaited (DataCall's
    ``awaited``): meanwhile the loop reads, answers and sends other calls, and their
    round trips share writes to Redis (bench/RESULTS.md, "HTTP API vs rest-rsmq")."""
    try:
        got = await ready.call.awaited()
    except Exception as e:
        raise ready.failed(e) from e
    return ready.answer(got)


def prepare(
    meta: dict[str, Any],
    method: str | None,
    path: str,
    query: str,
    given_host: str,
    authorization: str,
    length: str,
    content_type: str,
    chunked: str | None,
    read: Callable[[int], bytes],
) -> Ready | None:
    """A plain data-plane call made ready to run, or None: not one (the Django path
    answers it). Its request's parts as a WSGI environ has them (``fast``; ``in_scope``
    reads them from the ASGI scope): ``meta`` the request's META, ``read(n)`` its body's
    first n bytes. Nothing has run yet; a call refused as it is made raises as
    ``answered`` says."""
    split_domain_port, validate_host, v, tokens, calls, native, ops = _modules()

    hosts = settings.ALLOWED_HOSTS
    known = _HOSTS.get(given_host)
    if known is None or known[0] != hosts:  # Django's check, once a Host a process
        host, _ = split_domain_port(given_host)
        known = (list(hosts), bool(host) and validate_host(host, hosts))
        if len(_HOSTS) > 1000:
            _HOSTS.clear()
        _HOSTS[given_host] = known
    if not known[1]:
        return None
    parts = path.split("/")  # "", "api", …
    body: Any = None
    # Which call, and its arguments, or None.
    if parts[2:3] == ["queues"] and len(parts) >= 6 and parts[-1] == "" and not query:
        qname, native_route = parts[3], True
        if method == "POST" and len(parts) == 6 and parts[4] == "messages":
            kind = "send"
        elif method == "POST" and len(parts) == 6 and parts[4] == "receive":
            kind = "receive"
        elif method == "DELETE" and len(parts) == 7 and parts[4] == "messages":
            kind = "delete"
        else:
            return None
    elif parts[2:4] == ["rest-rsmq", "messages"] and len(parts) in (5, 6) and all(parts[3:]):
        qname, native_route = parts[4], False
        if method == "POST" and len(parts) == 5 and not query:
            kind = "send"
        elif method == "GET" and len(parts) == 5:
            kind = "receive"
        elif method == "DELETE" and len(parts) == 6 and not query:
            kind = "delete"
        else:
            return None
    else:
        return None
    # The body: JSON of exactly the plain shape, read whole (a Content-Length; no chunks).
    if chunked:
        return None
    if kind == "send" or (kind == "receive" and native_route and length not in ("", "0")):
        if not length.isdigit() or int(length) > FAST_MAX_BODY:
            return None
        if content_type.split(";")[0].strip() != "application/json":
            return None
        raw = read(int(length))
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):  # the Django path says why
            return None
        if not isinstance(body, dict) or calls.unpaired(body) is not None:
            return None
    elif length not in ("", "0"):
        return None
    vt: int | None = None
    n, delay, message = 1, None, None
    batch: list[str] | None = None
    if kind == "send" and native_route and "messages" in body:  # a batch, all or none
        batch, delay = body["messages"], body.get("delay")
        if set(body) - {"messages", "delay"} or type(batch) is not list:
            return None
        if not 1 <= len(batch) <= v.MAX_SEND_BATCH or any(type(m) is not str for m in batch):
            return None
        if delay is not None and not _int(delay):
            return None
    elif kind == "send":
        allowed = {"message", "delay"}
        if set(body) - allowed or not isinstance(body.get("message"), str):
            return None
        message, delay = body["message"], body.get("delay")
        if delay is not None and not _int(delay):
            return None
    elif kind == "receive" and native_route and body is not None:
        if set(body) - {"n", "vt"}:
            return None
        n, vt = body.get("n", 1), body.get("vt")
        if not _int(n) or (vt is not None and not _int(vt)):
            return None
    elif kind == "receive" and query:
        key, eq, value = query.partition("=")
        if key != "vt" or not eq or not value.isdigit() or len(value) > 9:
            return None
        vt = int(value)
    # The token: one this process holds (else the Django path reads it).
    scheme, _, given = authorization.partition(" ")
    seen = tokens.cached(given.strip())
    if seen is None:
        return None
    row, generation = seen
    action = {"send": ops.SEND, "receive": ops.RECEIVE, "delete": ops.DELETE}[kind]
    try:
        place, foldable = _first_place()
    except Exception:  # (a connection that can't be made: the Django path says why)
        return None
    if not foldable or calls.refusal(tokens.role_of(row), action.role):
        return None
    request = _Request(meta, path, method)
    request.auth = row
    request.api_rate = tokens.rate_of(row, generation)
    request.rsmq_action = action  # what a refusal is audited as (calls.audit_refusal)
    ids = {"msg_id": parts[5]} if kind == "delete" else {}
    request.resolver_match = ResolverMatch(fast, (), {"qname": qname, **ids})
    ready_call: Any = None
    try:
        if kind == "send":
            sent = batch if batch is not None else [str(message)]
            ready_call = ops.send_call(request, place, qname, sent, delay)
        elif kind == "receive":
            ready_call = ops.receive_call(request, place, qname, n, vt)
        else:
            ready_call = ops.delete_call(request, place, qname, parts[5])
    except Exception as e:  # refused as it was made (the queue's name)
        raise _failure(request, e) from e
    return Ready(ready_call, kind, native_route, batch is not None)


def finish(
    deferred: Any, again: Wsgi, environ: dict[str, Any], start: StartResponse
) -> Iterable[bytes]:
    """In a thread of the pool: the rest of a call ``fast`` began in the event loop and
    deferred (calls.Deferred) — its error answered and audited as the thread path does —
    or, when it changed nothing, the whole call again by ``again``."""
    from django.db import close_old_connections

    if deferred.finish is None:
        return again(environ, start)
    try:
        deferred.finish()  # raises what the call answers
        raise AssertionError("a deferred call's rest answers by raising")
    except Exception as e:
        return _respond_error(deferred.request, e, start)
    finally:
        close_old_connections()


def _respond_error(request: HttpRequest, e: Exception, start: StartResponse) -> list[bytes]:
    from dashboard.api import calls

    response = _error(request, e, calls)
    data = response.content
    headers = [(k, v) for k, v in response.items() if k.lower() != "content-type"]
    start(f"{response.status_code} {response.reason_phrase}",
          [*_headers(), *headers, ("Content-Length", str(len(data)))])  # fmt: skip
    return [data]


def _error(request: HttpRequest, e: Exception, calls: Any) -> HttpResponse:
    """calls.py's answer to ``e``, as the Django path gives it (ninja's handlers)."""
    for exception, handler in calls.HANDLERS:
        if isinstance(e, exception):
            try:
                response: HttpResponse = handler(request, e)
                return response
            except Exception:
                break
    log.exception("API call failed")
    return JsonResponse({"error": "Internal error."}, status=500)
