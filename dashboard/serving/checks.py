"""The configuration, checked once at start (a Django system check: ``manage.py console``,
``check``, ``migrate`` run it, and dashboard/asgi.py / wsgi.py before the web server
serves): one clear line per problem, and nothing starts."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register

from dashboard.access import groups
from dashboard.web import masking
from queues.limits import UNDO_HOURS_MAX
from queues.urls import CLUSTER, SENTINEL, cluster_namespace_problem, parse

#: a connection's name stands in the console's URLs (/c/<name>/…)
NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,100}")
#: a namespace stands in them too, and prefixes every key (``{shop}`` on a Cluster)
NAMESPACE_RE = re.compile(r"[A-Za-z0-9_.:{}-]{1,200}")


def problems() -> list[str]:
    """Everything wrong with the configuration, one line each."""
    found = list(getattr(settings, "RSMQ_CONFIG_ERRORS", []))
    found += _connections(settings.RSMQ_CONNECTIONS)
    if str(settings.CELERY_BROKER_URL).startswith((SENTINEL, CLUSTER)):
        found.append(
            "CELERY_BROKER_URL must be set to a plain redis:// URL when RSMQ_REDIS_URL is a "
            "Sentinel or Cluster URL (Celery's broker and the console's locks can't use those)"
        )
    found += _data_dir(Path(settings.DATA_DIR))
    found += _undo()
    found += _sign_in()
    found += _masking()
    return found


def _sign_in() -> Iterable[str]:
    """Single sign-on, the proxy's headers, password logins (docs/sign-in.md)."""
    yield from groups.problems(settings.RSMQ_SSO_GROUPS)
    for name in ("RSMQ_OIDC_RECHECK_SECONDS", "RSMQ_OIDC_TIMEOUT"):
        value = getattr(settings, name)
        if not isinstance(value, (int, float)) or not 0 < value <= 86400:
            yield f"{name} is {value!r}: it must be a number of seconds more than 0 up to 86400"
    issuer, client = settings.RSMQ_OIDC_ISSUER, settings.RSMQ_OIDC_CLIENT_ID
    if bool(issuer) != bool(client):
        yield "RSMQ_OIDC_ISSUER and RSMQ_OIDC_CLIENT_ID go together: set both, or neither"
    if issuer and not re.fullmatch(r"https?://[^\s/]+(/\S*)?", issuer):
        yield f"RSMQ_OIDC_ISSUER must be the provider's https:// URL (it is {issuer[:80]!r})"
    if issuer and "openid" not in settings.RSMQ_OIDC_SCOPES:
        yield "RSMQ_OIDC_SCOPES must include openid (it is OpenID Connect's sign-in)"
    proxy = settings.RSMQ_PROXY_USER_HEADER
    if settings.RSMQ_PROXY_GROUPS_HEADER and not proxy:
        yield "RSMQ_PROXY_GROUPS_HEADER needs RSMQ_PROXY_USER_HEADER (the header naming the user)"
    if proxy and not settings.RSMQ_TRUSTED_PROXIES:
        yield (
            f"RSMQ_PROXY_USER_HEADER ({proxy}) is believed only from RSMQ_TRUSTED_PROXIES,"
            " which is empty: name the proxy's address"
        )
    if not settings.RSMQ_LOCAL_LOGIN and not (issuer or proxy or settings.RSMQ_BREAK_GLASS_USERS):
        yield (
            "RSMQ_LOCAL_LOGIN is off with no other way in: set RSMQ_OIDC_ISSUER,"
            " RSMQ_PROXY_USER_HEADER or RSMQ_BREAK_GLASS_USERS"
        )


def _masking() -> Iterable[str]:
    """RSMQ_MASKING's rules (dashboard/web/masking.py: the field named) and
    RSMQ_REVEAL_MINUTES, a number of minutes above 0."""
    try:
        masking.configured()
    except masking.MaskingError as e:
        yield str(e)
    minutes = getattr(settings, "RSMQ_REVEAL_MINUTES", None)
    try:
        ok = float(minutes) > 0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        ok = False
    if not ok:
        yield f"RSMQ_REVEAL_MINUTES is {minutes!r}: it must be a number of minutes above 0"


def _undo() -> Iterable[str]:
    """RSMQ_UNDO_HOURS, RSMQ_UNDO_MAX_MB and RSMQ_UNDO_TOTAL_MB: numbers in their ranges,
    one action's at most all of them (dashboard/acting/undo.py)."""
    bounds = {"RSMQ_UNDO_HOURS": (0, UNDO_HOURS_MAX, False), "RSMQ_UNDO_MAX_MB": (0, 1e6, True),
              "RSMQ_UNDO_TOTAL_MB": (0, 1e6, True)}  # fmt: skip
    bad = False
    for name, (low, high, zero) in bounds.items():
        value = getattr(settings, name, None)
        ok = isinstance(value, (int, float)) and (low < value or zero and value == low)
        if not ok or value > high:  # type: ignore[operator]
            bad = True
            at_least = f"from {low}" if zero else f"more than {low}"
            yield f"{name} is {value!r}: it must be a number {at_least} up to {high:g}"
    if bad:
        return
    one, total = float(settings.RSMQ_UNDO_MAX_MB), float(settings.RSMQ_UNDO_TOTAL_MB)
    if one > total:
        yield (
            f"RSMQ_UNDO_MAX_MB ({one:g}) is more than RSMQ_UNDO_TOTAL_MB ({total:g}): one"
            " action may keep at most what all of them keep"
        )


def _connections(conns: Any) -> Iterable[str]:
    if not isinstance(conns, list) or not conns:
        yield "RSMQ_CONNECTIONS must be a non-empty JSON list of connections"
        return
    seen: set[str] = set()
    for i, c in enumerate(conns, 1):
        where = f"RSMQ_CONNECTIONS[{i}]"
        if not isinstance(c, dict):
            yield f"{where} must be an object with a name and a url"
            continue
        name, url = c.get("name"), c.get("url")
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            yield (
                f"{where}: name {name!r} must be 1 to 100 letters, digits, '_' or '-' "
                "(it stands in the console's URLs)"
            )
        elif name in seen:
            yield f"{where}: name {name!r} is used twice"
        else:
            seen.add(name)
        label = f"{where} ({name})" if isinstance(name, str) else where
        target = None
        try:
            target = parse(url)
        except ValueError as e:
            yield f"{label}: {e}"
        namespaces = c.get("namespaces", ["rsmq"])
        if not isinstance(namespaces, list) or not namespaces:
            yield f"{label}: namespaces must be a non-empty list"
            continue
        for ns in namespaces:
            if not isinstance(ns, str) or not NAMESPACE_RE.fullmatch(ns):
                yield (
                    f"{label}: namespace {ns!r} must be 1 to 200 letters, digits or "
                    "'_' '-' '.' ':' '{' '}'"
                )
            elif target is not None and target.kind == "cluster":
                problem = cluster_namespace_problem(ns)
                if problem:
                    yield f"{label}: {problem}"


def _data_dir(path: Path) -> Iterable[str]:
    """The data dir (SQLite, the lake, beat's schedule): made when missing."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        yield f"RSMQ_DATA_DIR {path} can't be created: {e.strerror}"
        return
    if not os.access(path, os.W_OK | os.X_OK):
        yield f"RSMQ_DATA_DIR {path} is not writable"


@register("rsmq")
def configuration(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    return [Error(text, id="rsmq.E001") for text in problems()]
