"""Masking rules for message bodies (RSMQ_MASKING, docs/bodies.md): which queues, which
JSON fields (``card.number``, ``*.email``: a ``*`` segment is any key, a list is looked
through), which patterns in free text, and the role that may reveal them. Pure text in,
text out: who sees what is dashboard/access/bodies.py's.

A queue no rule names costs one cached lookup and no parse; a body is masked as it is
shown (a preview is masked as its preview, never the whole body)."""

from __future__ import annotations

import fnmatch
import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

MASK = "[masked]"
ROLES = ("viewer", "operator", "admin")
#: a rule's clear_role when nobody reads its parts clear without a reveal
NOBODY = "nobody"
FIELDS = ("queues", "paths", "patterns", "reveal_role", "clear_role")

#: digit runs of a card's length (13 to 19, single spaces or dashes between), kept only
#: when their Luhn sum holds: an order number of 16 digits stays readable
CARD = r"(?<![\d])\d(?:[ -]?\d){12,18}(?![\d])"
#: bounded runs (RFC 5321's lengths): a long run of letters with no "@" costs a bounded
#: look from each place, never the rest of an 8 MB body
EMAIL = (
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}"
    r"@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)
#: unset RSMQ_MASKING: what a viewer reads is masked where it looks like a card number or
#: an e-mail address; operators and admins, who act on messages, read them as they are
DEFAULTS: list[dict[str, Any]] = [
    {
        "queues": "*",
        "patterns": ["card", "email"],
        "reveal_role": "operator",
        "clear_role": "operator",
    }
]
#: names a rule's patterns may use for the built-in ones
BUILT_IN = {"card": CARD, "email": EMAIL}


class MaskingError(ValueError):
    """RSMQ_MASKING is wrong: the message names the field."""


@dataclass(frozen=True, slots=True)
class Rule:
    queues: str  # a glob over queue names
    paths: tuple[tuple[str, ...], ...]
    patterns: tuple[re.Pattern[str], ...]
    reveal_role: str
    clear_role: str  # the least role that reads clear without a reveal (NOBODY: none)


@dataclass(frozen=True, slots=True)
class Rules:
    """What every rule naming one queue masks, together."""

    paths: tuple[tuple[str, ...], ...]
    patterns: tuple[re.Pattern[str], ...]
    reveal_role: str  # the highest of its rules': the least that may reveal them all
    clear_role: str  # the highest of its rules': the least that reads them all clear
    keys: re.Pattern[str] | None  # a path's last key, for text that is not whole JSON
    any_key: bool  # a path ends in ``*``: text that is not whole JSON can't be cut by key

    def mask(self, text: str) -> str:
        """``text`` with what the rules name replaced by MASK."""
        if not text:
            return text
        if self.paths:
            head = text.lstrip()[:1]
            if head in ("{", "["):
                try:
                    parsed = json.loads(text)
                except (ValueError, RecursionError):
                    parsed = None
                if isinstance(parsed, (dict, list)):
                    for path in self.paths:
                        _mask_path(parsed, path)
                    text = json.dumps(parsed, ensure_ascii=False)
                elif self.any_key:
                    return MASK  # a cut or broken JSON text: no telling where a field is
                elif self.keys is not None:
                    text = self.keys.sub(_keep_key, text)
            elif self.keys is not None:
                text = self.keys.sub(_keep_key, text)
        for pattern in self.patterns:
            if _may_match(pattern, text):
                text = pattern.sub(_replace, text)
        return text

    def names(self, field: str) -> bool:
        """Whether a filter on JSON field ``field`` (dotted) touches a masked path."""
        asked = tuple(field.split("."))
        for path in self.paths:
            # at or under a masked path (its parent holds no value to compare)
            n = len(path)
            if len(asked) >= n and all(p in ("*", a) for p, a in zip(path, asked[:n], strict=True)):
                return True
        return False


def _may_match(pattern: re.Pattern[str], text: str) -> bool:
    """False when ``pattern`` can't match ``text`` by a cheaper look (an address needs
    its "@"): the regular expression's pass over a long body is spared."""
    return pattern.pattern != EMAIL or "@" in text


def _replace(match: re.Match[str]) -> str:
    found = match.group(0)
    if match.re.pattern == CARD and not luhn(found):
        return found
    return MASK


def _keep_key(match: re.Match[str]) -> str:
    return match.group(1) + json.dumps(MASK)


def luhn(text: str) -> bool:
    digits = [int(c) for c in text if c.isdigit()]
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _mask_path(node: Any, path: tuple[str, ...]) -> None:
    """Replace, in place, every value at ``path`` (lists are looked through)."""
    for loc, _ in list(_locations(node, path, ())):
        _set(node, loc, MASK)


def parse(raw: str | list[Any] | None) -> tuple[Rule, ...]:
    """The rules RSMQ_MASKING says (unset: DEFAULTS); MaskingError names what is wrong."""
    if raw is None:
        data: Any = DEFAULTS
    elif isinstance(raw, str):
        try:
            data = json.loads(raw)
        except ValueError as e:
            raise MaskingError(f"RSMQ_MASKING is not JSON: {e}") from None
    else:
        data = raw
    if not isinstance(data, list):
        raise MaskingError("RSMQ_MASKING must be a JSON list of rules")
    return tuple(_rule(i, item) for i, item in enumerate(data))


def _rule(i: int, item: Any) -> Rule:
    at = f"RSMQ_MASKING[{i}]"
    if not isinstance(item, dict):
        raise MaskingError(f"{at} must be an object with {', '.join(FIELDS)}")
    unknown = sorted(set(item) - set(FIELDS))
    if unknown:
        raise MaskingError(f"{at}.{unknown[0]}: not a field of a rule ({', '.join(FIELDS)})")
    queues = item.get("queues", "*")
    if not isinstance(queues, str) or not queues:
        raise MaskingError(f'{at}.queues must be a glob of queue names, e.g. "orders-*"')
    paths = _strings(item.get("paths", []), f"{at}.paths")
    for j, p in enumerate(paths):
        if any(not seg for seg in p.split(".")):
            raise MaskingError(
                f"{at}.paths[{j}] {p!r}: a path is keys between dots, e.g. card.number"
            )
    patterns: list[re.Pattern[str]] = []
    for j, p in enumerate(_strings(item.get("patterns", []), f"{at}.patterns")):
        try:
            patterns.append(re.compile(BUILT_IN.get(p, p)))
        except re.error as e:
            raise MaskingError(
                f"{at}.patterns[{j}] {p!r} is not a regular expression: {e}"
            ) from None
        if patterns[-1].match(""):
            raise MaskingError(f"{at}.patterns[{j}] {p!r} matches empty text")
    role = item.get("reveal_role", "operator")
    if role not in ROLES:
        raise MaskingError(f"{at}.reveal_role must be one of {', '.join(ROLES)}, not {role!r}")
    clear = item.get("clear_role", NOBODY)
    if clear not in (*ROLES, NOBODY):
        raise MaskingError(
            f"{at}.clear_role must be one of {', '.join((*ROLES, NOBODY))}, not {clear!r}"
        )
    if not paths and not patterns:
        raise MaskingError(f"{at} masks nothing: give paths or patterns")
    return Rule(queues, tuple(tuple(p.split(".")) for p in paths), tuple(patterns), role, clear)


def _strings(value: Any, at: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise MaskingError(f"{at} must be a list of strings")
    return value


@functools.lru_cache(maxsize=4)
def _configured(raw: str | None) -> tuple[Rule, ...]:
    return parse(raw)


def _raw() -> str | None:
    raw = getattr(settings, "RSMQ_MASKING", None)
    return raw if raw is None or isinstance(raw, str) else json.dumps(raw)


def configured() -> tuple[Rule, ...]:
    return _configured(_raw())


def rules_for(queue: str) -> Rules | None:
    """The rules naming ``queue`` together, None when none does: cached per setting and
    name (a consumer's receive on the fast path asks it on every call)."""
    return _for(_raw(), queue)


@functools.lru_cache(maxsize=4096)
def _for(raw: str | None, queue: str) -> Rules | None:
    mine = [r for r in _configured(raw) if fnmatch.fnmatchcase(queue, r.queues)]
    if not mine:
        return None
    paths = tuple(dict.fromkeys(p for r in mine for p in r.paths))
    patterns = tuple(dict.fromkeys(p for r in mine for p in r.patterns))
    role = max((r.reveal_role for r in mine), key=ROLES.index)
    clear = max((r.clear_role for r in mine), key=(*ROLES, NOBODY).index)
    last = sorted({p[-1] for p in paths if p[-1] != "*"})
    keys = None
    if last:
        names = "|".join(re.escape(json.dumps(k)[1:-1]) for k in last)
        # "key": then a string (perhaps cut short) or a scalar
        keys = re.compile(rf'("(?:{names})"\s*:\s*)(?:"(?:[^"\\]|\\.)*(?:"|\\?$)|[^,}}\]\s]+)')
    return Rules(paths, patterns, role, clear, keys, any(p[-1] == "*" for p in paths))


def fields_of(rules: Rules | None, fields: Iterable[str]) -> list[str]:
    """Which of a filter's JSON ``fields`` name a masked path."""
    return [f for f in fields if rules is not None and rules.names(f)]


class Kept(ValueError):
    """An edited body can't be sent: a masked part would be lost or moved (the message
    says which)."""


#: a masked part as the edit-and-resend form shows it: ``[masked:3]``
PLACEHOLDER = re.compile(r"\[masked:(\d+)\]")
Location = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Numbered:
    """A body with each masked part numbered: ``text`` shows ``[masked:N]`` where part N
    was; ``at``: a JSON value's place (when a path masked it), ``parts``: the original
    text of one a pattern or a key masked."""

    text: str
    at: dict[int, tuple[Location, Any]]
    parts: dict[int, tuple[str, re.Pattern[str] | None]]


def numbered(rules: Rules, text: str) -> Numbered:
    """``text`` masked as ``Rules.mask`` masks it, each part numbered (the form shows
    this; ``restore`` puts the parts the operator left alone back)."""
    at: dict[int, tuple[Location, Any]] = {}
    parts: dict[int, tuple[str, re.Pattern[str] | None]] = {}
    n = 0

    def number() -> str:
        nonlocal n
        n += 1
        return f"[masked:{n}]"

    parsed: Any = None
    if rules.paths and text.lstrip()[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
    if isinstance(parsed, (dict, list)):
        for path in rules.paths:
            for loc, value in list(_locations(parsed, path, ())):
                mark = number()
                at[n] = (loc, value)
                _set(parsed, loc, mark)
        text = json.dumps(parsed, ensure_ascii=False, indent=2)
    elif rules.keys is not None:

        def key(match: re.Match[str]) -> str:
            mark = number()
            # the value as written (a string with its quotes); shown as "[masked:N]"
            parts[n] = (match.group(0)[len(match.group(1)) :], None)
            return match.group(1) + json.dumps(mark)

        text = rules.keys.sub(key, text)
    for pattern in rules.patterns:
        if not _may_match(pattern, text):
            continue

        def one(match: re.Match[str], pattern: re.Pattern[str] = pattern) -> str:
            if pattern.pattern == CARD and not luhn(match.group(0)):
                return match.group(0)
            mark = number()
            parts[n] = (match.group(0), pattern)
            return mark

        text = pattern.sub(one, text)
    return Numbered(text, at, parts)


def restore(rules: Rules, original: str, edited: str) -> str:
    """The body to send for ``edited`` (the form's text): each ``[masked:N]`` the operator
    left where it was put back as it was in ``original``. A placeholder moved (a path's
    to another field, a pattern's into text that no longer masks it) or unknown: Kept."""
    if not PLACEHOLDER.search(edited):
        return edited
    before = numbered(rules, original)
    if before.at:
        try:
            doc = json.loads(edited)
        except (ValueError, RecursionError):
            raise Kept("The body is no longer JSON, so its masked fields can't be kept:"
                       " fix it, or reveal and edit them.") from None  # fmt: skip
        for n, (loc, value) in before.at.items():
            if _get(doc, loc) == f"[masked:{n}]":
                _set(doc, loc, value)
        edited = json.dumps(doc, ensure_ascii=False)
    spans: list[tuple[int, int, re.Pattern[str] | None]] = []
    out: list[str] = []
    last = 0
    for match in PLACEHOLDER.finditer(edited):
        n = int(match.group(1))
        if n not in before.parts:
            raise Kept(f"[masked:{n}] is not where it was: leave masked fields in their place,"
                       " or replace them with a value of your own.")  # fmt: skip
        text, pattern = before.parts[n]
        out.append(edited[last : match.start()])
        start = sum(len(p) for p in out)
        # a key's value was shown quoted: the quotes go with it
        quoted = pattern is None and edited[match.start() - 1 : match.start()] == '"'
        if quoted:
            out[-1] = out[-1][:-1]
            start -= 1
            last = match.end() + (1 if edited[match.end() : match.end() + 1] == '"' else 0)
        else:
            last = match.end()
        out.append(text)
        spans.append((start, start + len(text), pattern))
    out.append(edited[last:])
    result = "".join(out)
    for start, end, pattern in spans:
        if pattern is None:
            continue
        held = any(m.span() == (start, end) for m in pattern.finditer(result))
        if not held:
            raise Kept("A masked part would no longer be masked where it is now (text put"
                       " against it): keep it apart, or reveal and edit it.")  # fmt: skip
    if len({s[:2] for s in spans}) != len(spans) or len(spans) != len(
        {int(m.group(1)) for m in PLACEHOLDER.finditer(edited)}
    ):
        raise Kept("A masked part is in the body twice: keep it once, where it was.")
    return result


def _locations(node: Any, path: tuple[str, ...], here: Location) -> Any:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _locations(item, path, (*here, i))
        return
    if not isinstance(node, dict):
        return
    first, rest = path[0], path[1:]
    for key in list(node):
        if first != "*" and key != first:
            continue
        if rest:
            yield from _locations(node[key], rest, (*here, key))
        elif not (isinstance(node[key], str) and PLACEHOLDER.fullmatch(node[key])):
            yield (*here, key), node[key]


def _get(doc: Any, loc: Location) -> Any:
    for step in loc:
        try:
            doc = doc[step]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


def _set(doc: Any, loc: Location, value: Any) -> None:
    for step in loc[:-1]:
        doc = doc[step]
    doc[loc[-1]] = value
