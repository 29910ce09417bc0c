"""How an operation reaches Redis, the same for the sync and the asyncio client.

An operation (queues/ops/) is a generator of steps: a `Call` of a Lua script, a `Batch`
of read-only script calls in one pipeline, or a plain `Command`. `rounds` turns it into
the round trips it takes — each a list of commands, answered by a list of replies in
which an error reply is a ``ResponseError`` value — and handles NOSCRIPT for both
clients. A client (a *driver*) only carries a list of commands to Redis and back:
`RedisSMQ` on a thread's own redis-py connection, `AsyncRedisSMQ` on redis.asyncio.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from types import MethodType
from typing import (
    Any,
    Concatenate,
    Generic,
    NamedTuple,
    ParamSpec,
    Protocol,
    TypeVar,
    overload,
)

import hiredis
import redis.connection
from redis.exceptions import DataError, NoScriptError, ResponseError

from . import validation as v
from .errors import (
    InvalidArgument,
    MessageTooLong,
    NotReplicated,
    QueueExists,
    QueueNotFound,
    QueueUnreadable,
)
from .scripts import SEND, Script
from .urls import Target, parse

T = TypeVar("T")
P = ParamSpec("P")
R_co = TypeVar("R_co", covariant=True)

#: one Redis command: its name and arguments
Cmd = tuple[Any, ...]


def error_for(e: ResponseError, names: str | tuple[str, str]) -> Exception:
    """The RSMQ error a script's error reply stands for (or the reply itself)."""
    text = str(e)
    if "queueNotFound" in text:
        if isinstance(names, tuple):  # (source, destination)
            names = names[1] if "queueNotFound dst" in text else names[0]
        return QueueNotFound(names)
    if "queueExists" in text:
        return QueueExists(names if isinstance(names, str) else names[0])
    if "messageTooLong" in text:
        parts = text[text.index("messageTooLong") :].split()
        return MessageTooLong(int(parts[1]), int(parts[2]))
    if "undoWrongDestination" in text:
        return InvalidArgument("keep", "keep: the undo token was opened for a move elsewhere")
    if "undoNotFound" in text or "undoInUse" in text:
        return InvalidArgument("keep", "keep: the undo token is unknown, expired or used")
    if "invalidId" in text:
        at = text[text.index("invalidId") :].split()[1:2]
        return InvalidArgument(
            "id", f"id{f' (record {at[0]})' if at else ''} must be {v.RSMQ_ID_FORMAT}"
        )
    if "invalidAt" in text:
        return InvalidArgument(
            "when", f"when must be at most {v.MAX_SECONDS} seconds from now (the Redis clock)"
        )
    # Bad data another client wrote, found by the script or by Redis: not Redis failing.
    name = names if isinstance(names, str) else names[1 if "queueUnreadable dst" in text else 0]
    if "queueUnreadable" in text:
        return QueueUnreadable(name, text[text.index("queueUnreadable") + 16 :])
    if "WRONGTYPE" in text:
        return QueueUnreadable(name, "one of its keys holds the wrong kind of Redis value")
    if "not an integer" in text:
        return QueueUnreadable(name, "a counter or receive count is not a number")
    return e


class Call(NamedTuple):
    """Run a script; ``names`` says which queue(s) a queueNotFound reply is about.

    A named tuple, not a frozen dataclass: every operation makes one, and a frozen
    dataclass is slower to make, a share of the client's own time per operation that
    shows (bench/RESULTS.md, "Figures behind the code")."""

    script: Script
    keys: Sequence[str]
    args: Sequence[Any]
    names: str | tuple[str, str] = ""

    def command(self) -> Cmd:
        return ("EVALSHA", self.script.sha, len(self.keys), *self.keys, *self.args)

    def commands(self) -> list[Cmd]:
        return [("EVALSHA", self.script.sha, len(self.keys), *self.keys, *self.args)]

    def scripts(self) -> Iterable[Script]:
        return (self.script,)

    def result(self, replies: list[Any]) -> Any:
        reply = replies[0]
        if isinstance(reply, ResponseError):
            raise error_for(reply, self.names)
        return reply


@dataclass(frozen=True, slots=True)
class Batch:
    """Read-only script calls in one pipelined round trip (safe to rerun after NOSCRIPT),
    after one read-only command ``first`` if given: the reply is then (its reply, the
    calls' replies)."""

    calls: list[Call]
    first: Cmd | None = None

    def commands(self) -> list[Cmd]:
        commands = [c.command() for c in self.calls]
        return commands if self.first is None else [self.first, *commands]

    def scripts(self) -> Iterable[Script]:
        return {c.script for c in self.calls}

    def result(self, replies: list[Any]) -> Any:
        calls = replies if self.first is None else replies[1:]
        if self.first is not None and isinstance(replies[0], ResponseError):
            raise replies[0]
        for reply, call in zip(calls, self.calls, strict=True):
            if isinstance(reply, ResponseError):
                raise error_for(reply, call.names)
        return calls if self.first is None else (replies[0], calls)


@dataclass(frozen=True, slots=True)
class Command:
    """One plain Redis command."""

    args: Cmd

    def commands(self) -> list[Cmd]:
        return [self.args]

    def scripts(self) -> Iterable[Script]:
        return ()

    def result(self, replies: list[Any]) -> Any:
        if isinstance(replies[0], ResponseError):
            raise replies[0]
        return replies[0]


Step = Call | Batch | Command
#: an operation: yields steps, is sent each step's result, returns its own
Op = Generator[Step, Any, T]


@dataclass(slots=True)
class Done(Generic[T]):
    """The operation's result: its last trip."""

    result: T


#: what one round trip brings back: the replies, or the exception that ended it
Outcome = list[Any] | Exception
#: an operation as round trips: yields each one's commands (then `Done`), is sent
#: each one's outcome
Trips = Generator[list[Cmd] | Done[T], Outcome, None]


#: after each send, ``WAIT replicas timeout_ms`` (None: no waiting)
Wait = tuple[int, int] | None


def rounds(op: Op[T], wait: Wait = None) -> Trips[T]:
    """The round trips an operation takes; a step's error goes back into the operation.

    Replies hold error replies as values. A step that meets NOSCRIPT (after a Redis
    restart or SCRIPT FLUSH) runs again in one more round trip with its scripts sent
    whole (EVAL, which also loads them): a script that met NOSCRIPT never ran, and a
    Batch's calls are read-only, so nothing is applied twice.

    With ``wait``, a send is followed by ``WAIT`` in the same round trip, and is only
    acknowledged (returns) once that many replicas have it: else `NotReplicated`.
    """
    try:
        step = next(op)
        while True:
            try:
                commands = step.commands()
                # (an audited send too: its script has the same name)
                sending = isinstance(step, Call) and step.script.name == SEND.name
                waits = wait is not None and sending
                if waits:
                    commands.append(("WAIT", *wait))  # type: ignore[misc]
                replies = _replies((yield commands))
                if NoScriptError in map(type, replies):
                    # Sent whole this time: EVAL loads a script and runs it in one
                    # command, so another client's SCRIPT FLUSH can't come in between (as
                    # it could between a SCRIPT LOAD and the EVALSHA after it).
                    replies = _replies((yield _whole(commands, step.scripts())))
                if waits:
                    _replicated(replies.pop(), replies[0], wait)
                reply = step.result(replies)
            except Exception as e:
                step = op.throw(e)
            else:
                step = op.send(reply)
    except StopIteration as stop:
        yield Done(stop.value)


#: packed commands up to this size go out as one piece (one write); larger are not copied
PACK_JOIN = 65536
#: the connection options ``packer`` reads
ENCODING = ("encoding", "encoding_errors")


def packer(encoding: dict[str, Any]) -> Callable[[list[Cmd]], list[bytes]]:
    """How a client encodes its round trips (``encoding``: its connections' encoding and
    encoding_errors, if set): hiredis's packer — the same bytes as redis-py's, made
    faster ({R}) — when they encode as redis-py does by default (UTF-8, strict),
    else redis-py's own."""
    name = str(encoding.get("encoding") or "utf-8").lower().replace("_", "-")
    if name not in ("utf-8", "utf8") or encoding.get("encoding_errors", "strict") != "strict":
        own: Any = redis.connection.Connection(**encoding)  # type: ignore[no-untyped-call]
        return own.pack_commands  # type: ignore[no-any-return]
    return _pack


def resp2(options: dict[str, Any]) -> dict[str, Any]:
    """The options of the connections a client reads replies off itself (the sync
    client's connection per thread, the async client's lanes): RESP2 whatever redis-py's
    default (RESP3 from redis-py 8 on), so that every supported redis-py gives the
    operations the same replies, and no RESP3 push message comes between them. A
    client asked for RESP3 (``?protocol=3``, a ``client`` made with it) is refused."""
    protocol = options.get("protocol")
    if protocol is not None and str(protocol) != "2":
        raise InvalidArgument(
            "protocol", f"protocol {protocol}: the RSMQ client speaks RESP2 (protocol 2) only"
        )
    return {**options, "protocol": 2}


def _pack(commands: list[Cmd]) -> list[bytes]:
    try:
        packed = [hiredis.pack_command(c) for c in commands]
    except TypeError as e:  # a value that is no str, bytes, int or float: as redis-py says
        raise DataError(str(e)) from None
    if len(packed) > 1 and sum(map(len, packed)) <= PACK_JOIN:
        return [b"".join(packed)]
    return packed


def _whole(commands: list[Cmd], scripts: Iterable[Script]) -> list[Cmd]:
    """``commands`` with each EVALSHA an EVAL of its script's source."""
    sources = {s.sha: s.source for s in scripts}
    return [("EVAL", sources[c[1]], *c[2:]) if c[0] == "EVALSHA" else c for c in commands]


def _replicated(acked: Any, sent: Any, wait: Wait) -> None:
    if wait is None or isinstance(sent, ResponseError):
        return  # the send itself failed: its own error says so
    if isinstance(acked, ResponseError):
        raise acked
    if acked < wait[0]:
        raise NotReplicated(acked, *wait)


def _replies(outcome: Outcome) -> list[Any]:
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


class SyncDriver(Protocol):
    """A client that carries an operation out and returns its result (RedisSMQ)."""

    def _drive(self, op: Op[T]) -> T: ...


class AsyncDriver(Protocol):
    """A client whose operations are awaited (AsyncRedisSMQ)."""

    def _drive(self, op: Op[T]) -> Awaitable[T]: ...


A = TypeVar("A", bound=AsyncDriver)
S = TypeVar("S", bound=SyncDriver)


class operation(Generic[P, T]):  # noqa: N801 (a decorator, named like one)
    """A public method made of an operation: the client's driver carries it out.

    On a `SyncDriver` the method returns the operation's result; on an `AsyncDriver` an
    awaitable of it. Type checkers see both, with the operation's own parameters.
    """

    __wrapped__: Callable[..., Any]

    def __init__(self, fn: Callable[Concatenate[Any, P], Op[T]]) -> None:
        @functools.wraps(fn)
        def method(client: SyncDriver | AsyncDriver, /, *args: Any, **kwargs: Any) -> Any:
            return client._drive(fn(client, *args, **kwargs))

        self.method = method
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    @overload
    def __get__(
        self, client: None, owner: type[A]
    ) -> Callable[Concatenate[A, P], Awaitable[T]]: ...
    @overload
    def __get__(self, client: None, owner: type[S]) -> Callable[Concatenate[S, P], T]: ...
    @overload
    def __get__(
        self, client: AsyncDriver, owner: type | None = None
    ) -> Callable[P, Awaitable[T]]: ...
    @overload
    def __get__(self, client: SyncDriver, owner: type | None = None) -> Callable[P, T]: ...
    def __get__(self, client: object, owner: type | None = None) -> Any:
        if client is None:  # on the class: the function, called with a client first
            return self.method
        return MethodType(self.method, client)


class ClientFactory(Protocol[R_co]):
    """A redis-py client or connection pool class: made from a URL or from host, port, …"""

    def __call__(self, *args: Any, **kwargs: Any) -> R_co: ...

    def from_url(self, url: str, **kwargs: Any) -> R_co: ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a client the library makes for itself connects: ``url``, else host, port, db
    and password; with a socket timeout either way."""

    url: str | None = None
    host: str = "127.0.0.1"
    port: int = 6379
    db: int = 0
    password: str | None = None
    socket_timeout: float | None = None
    #: WAIT after each send (0: don't): replicas, and the longest wait in ms
    wait_replicas: int = 0
    wait_timeout: int = 1000

    def target(self) -> Target | None:
        """The URL understood (None without one), or InvalidArgument naming what's wrong."""
        if not self.url:
            return None
        try:
            return parse(self.url)
        except ValueError as e:
            raise InvalidArgument("url", str(e)) from None

    def wait(self, target: Target | None) -> Wait:
        """WAIT after sends: as the client was told, else as its URL says."""
        if self.wait_replicas:
            return (self.wait_replicas, self.wait_timeout)
        if target is not None and target.wait_replicas:
            return (target.wait_replicas, target.wait_timeout)
        return None

    def make(self, factory: ClientFactory[R_co], **options: Any) -> R_co:
        """A client of a plain Redis (Sentinel and Cluster: queues/topology.py)."""
        target = self.target()
        if target is not None:
            return factory.from_url(target.url, socket_timeout=self.socket_timeout, **options)
        return factory(
            host=self.host, port=self.port, db=self.db, password=self.password,
            socket_timeout=self.socket_timeout, **options,
        )  # fmt: skip
