"""Redis URLs as they may be shown: without their secrets.

One function for every form redis-py (and this project) accepts — ``redis://user:pw@h``,
``rediss://:pw@h``, ``unix:///s.sock?password=pw``, a password holding a raw ``@``,
``redis+sentinel://:pw@h1:26379,h2:26379/svc`` and ``redis+cluster://…`` host lists — so
pages, the API, logs and the CLI never print a password.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode

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
