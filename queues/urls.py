"""Redis URLs: as they may be shown (without their secrets), and understood (`parse`).

One function for every form redis-py (and this project) accepts — ``redis://user:pw@h``,
``rediss://:pw@h``, ``unix:///s.sock?password=pw``, a password holding a raw ``@``,
``redis+sentinel://:pw@h1:26379,h2:26379/svc`` and ``redis+cluster://…`` host lists — so
pages, the API, logs and the CLI never print a password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlencode

MASK = "***"
#: query parameters whose value is a secret
SECRET_PARAMS = frozenset({"password", "sentinel_password", "pass", "pw", "token", "auth"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)(.*)$", re.S)


def redacted(url: str) -> str:
    """``url`` with every password replaced by ``***`` (user names are kept)."""
    m = _SCHEME.match(url)
    if not m:
        return _redact_query(url)
    scheme, rest = m.groups()
    # The authority ends at the first "/", "?" or "#" after the last "@" (a raw "@" may
    # stand in the password, never in a host list).
    query_at = _first(rest, "?#")
    head, tail = rest[:query_at], rest[query_at:]
    at = head.rfind("@")
    if at >= 0:
        userinfo, hosts = head[:at], head[at + 1 :]
        user, sep, _ = userinfo.partition(":")
        head = f"{user}{':' + MASK if sep else ''}@{hosts}"
        if not sep and user:
            # redis://secret@host: redis-py reads a lone userinfo as the password.
            head = f"{MASK}@{hosts}"
    return scheme + head + _redact_query(tail)


def _first(text: str, chars: str) -> int:
    found = [i for i in (text.find(c) for c in chars) if i >= 0]
    return min(found) if found else len(text)


def _redact_query(tail: str) -> str:
    q = tail.find("?")
    if q < 0:
        return tail
    frag = tail.find("#", q)
    query = tail[q + 1 : frag if frag >= 0 else len(tail)]
    pairs = [
        (k, MASK if k.lower() in SECRET_PARAMS else v)
        for k, v in parse_qsl(query, keep_blank_values=True)
    ]
    rest = tail[frag:] if frag >= 0 else ""
    return tail[: q + 1] + urlencode(pairs, safe="*") + rest


# -- Sentinel and Cluster URLs ---------------------------------------------------------

SENTINEL = "redis+sentinel://"
CLUSTER = "redis+cluster://"
PLAIN = ("redis://", "rediss://", "unix://")
SCHEMES = (*PLAIN, SENTINEL, CLUSTER)
#: query options of every URL that are this project's own, not redis-py's
WAIT_OPTIONS = ("wait_replicas", "wait_timeout")
#: the most replicas a send may wait for, and the longest wait (ms)
MAX_WAIT_REPLICAS = 100
MAX_WAIT_TIMEOUT = 60_000


@dataclass(frozen=True, slots=True)
class Target:
    """A Redis URL, understood: a plain Redis (``url`` as redis-py reads it), a Sentinel
    group's master (``hosts`` are the sentinels, ``service`` the master's name) or a
    Cluster (``hosts`` are its startup nodes)."""

    kind: Literal["redis", "sentinel", "cluster"]
    url: str = field(repr=False)
    hosts: tuple[tuple[str, int], ...] = ()
    service: str = ""
    db: int = 0
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    sentinel_password: str | None = field(default=None, repr=False)
    #: WAIT after each send: replicas that must have it, and the longest wait (ms)
    wait_replicas: int = 0
    wait_timeout: int = 1000


def parse(url: object) -> Target:
    """``url`` understood, or ValueError with one line saying what is wrong (never the
    password)."""
    if not isinstance(url, str) or not url.startswith(SCHEMES):
        shown = redacted(url) if isinstance(url, str) else repr(url)
        raise ValueError(f"url {shown!r} must start with {', '.join(SCHEMES)}")
    head, _, query = url.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    replicas, timeout = _wait(options, url)
    if url.startswith(PLAIN):
        kept = [
            (k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in WAIT_OPTIONS
        ]
        plain = head + ("?" + urlencode(kept) if kept else "")
        if not set(WAIT_OPTIONS) & set(options):
            plain = url  # as given: redis-py reads it
        return Target("redis", plain, wait_replicas=replicas, wait_timeout=timeout)
    sentinel = url.startswith(SENTINEL)
    scheme = SENTINEL if sentinel else CLUSTER
    shown = redacted(url)
    unknown = set(options) - set(WAIT_OPTIONS) - ({"sentinel_password"} if sentinel else set())
    if unknown:
        raise ValueError(f"url {shown!r}: unknown option {sorted(unknown)[0]!r}")
    rest = head[len(scheme) :]
    at = rest.rfind("@")  # a raw "@" may stand in the password, never in a host list
    userinfo, rest = (rest[:at], rest[at + 1 :]) if at >= 0 else ("", rest)
    user, sep, password = userinfo.partition(":")
    if not sep:  # redis://secret@host: a lone userinfo is the password, as redis-py reads it
        user, password = "", user
    hostlist, _, path = rest.partition("/")
    hosts = tuple(_host(h, 26379 if sentinel else 6379, shown) for h in hostlist.split(","))
    parts = [p for p in path.split("/") if p]
    service, db = "", 0
    if sentinel:
        if not parts or len(parts) > 2:
            raise ValueError(
                f"url {shown!r} must be {SENTINEL}[:password@]host:port[,host:port…]/service[/db]"
            )
        service = unquote(parts[0])
        db = _db(parts[1], shown) if len(parts) == 2 else 0
    elif parts:
        raise ValueError(
            f"url {shown!r} must be {CLUSTER}[:password@]host:port[,host:port…] "
            "(a Cluster has only db 0)"
        )
    return Target(
        "sentinel" if sentinel else "cluster", url, hosts, service, db,
        unquote(user) or None, unquote(password) or None,
        options.get("sentinel_password") or None, replicas, timeout,
    )  # fmt: skip


def _host(text: str, default_port: int, shown: str) -> tuple[str, int]:
    host, port = text, str(default_port)
    if text.startswith("["):  # [::1]:26379
        end = text.find("]")
        host, port = text[1:end], text[end + 2 :] or port
    elif ":" in text:
        host, port = text.rsplit(":", 1)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"url {shown!r}: {text!r} must be host:port, port 1 to 65535")
    return host, int(port)


def _db(text: str, shown: str) -> int:
    if not text.isdigit() or int(text) > 10_000:
        raise ValueError(f"url {shown!r}: db must be a number from 0 to 10000, not {text!r}")
    return int(text)


def _wait(options: dict[str, str], url: str) -> tuple[int, int]:
    """``?wait_replicas=&wait_timeout=``: (replicas, timeout ms)."""
    found = {"wait_replicas": 0, "wait_timeout": 1000}
    for name, top in (("wait_replicas", MAX_WAIT_REPLICAS), ("wait_timeout", MAX_WAIT_TIMEOUT)):
        if name in options:
            text = options[name]
            if not text.isdigit() or not 0 <= int(text) <= top:
                raise ValueError(
                    f"url {redacted(url)!r}: {name} must be between 0 and {top}, not {text!r}"
                )
            found[name] = int(text)
    return found["wait_replicas"], found["wait_timeout"]


def hash_tag(ns: str) -> str | None:
    """The hash tag every key of namespace ``ns`` is placed by on a Cluster, or None when
    its keys would be spread over slots (no ``{tag}`` in ``ns`` itself)."""
    start = ns.find("{")
    end = ns.find("}", start + 1) if start >= 0 else -1
    return ns[start + 1 : end] if end > start + 1 else None


def cluster_namespace_problem(ns: str) -> str | None:
    """Why namespace ``ns`` can't be used on a Redis Cluster (one line), or None."""
    if hash_tag(ns) is not None:
        return None
    return (
        f"namespace {ns!r} has no hash tag: on a Redis Cluster every key of a namespace "
        f"must share one slot (scripts touch several at once), so name it like "
        f"'{{{ns.replace('{', '').replace('}', '') or 'rsmq'}}}' or '{{shop}}:{ns}'"
    )
