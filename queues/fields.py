"""Field filters: conditions on a JSON body's fields, such as ``amount > 100 and
status in (failed, retry)``.

``parse`` reads an expression (refusing a bad one with its position); ``Where.lua_arg``
is what browse.lua's ``matches()`` evaluates with Redis's cjson, and ``Where.matches``
the same rules in Python, for the bodies a script does not read (over ``LUA_BODY_MAX``).
The two are held equal by tests/core/test_field_filters.py on the same cases.

The syntax, conditions joined with ``and``::

    path = value        path != value      (also >, >=, <, <=)
    path in (v1, v2, ...)
    exists path         missing path

A path is a field name, then ``.name`` or ``[index]`` steps: ``order.items[0].sku``; a
name of other characters is quoted: ``"first name"``. A value is a number (``100``,
``-2.5e3``), ``true`` / ``false`` / ``null``, a quoted text (``"a b"``, ``'x'``) or a
bare word (``cust-42``). The rules:

* a body that is not JSON (nor JSON nested deeper than ``MAX_DEPTH``) matches no field
  filter at all, ``missing`` included;
* a number compares with numbers only, as numbers; a text with texts only, byte by byte
  (UTF-8); ``true`` / ``false`` / ``null`` with themselves (``=`` / ``!=`` / ``in``);
* ``!=`` needs the field to be there (``missing x`` finds those without it); a field
  holding an object or a list equals no value;
* ``exists`` is true of a field holding ``null``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from .errors import InvalidArgument

#: the argument's name in errors (browse's ``where``)
FIELD = "where"
#: an expression's length, conditions, a path's steps, an ``in`` list's values at most
MAX_LENGTH = 1000
MAX_CONDITIONS = 10
MAX_STEPS = 16
MAX_VALUES = 20
#: objects / lists nested deeper than this: not JSON for a filter (cjson's and Python's
#: own limits differ; this one is far below both, and the same in both)
MAX_DEPTH = 64
ORDERING = (">=", "<=", "!=", ">", "<", "=")
OPS = (*ORDERING, "in", "exists", "missing")

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_BARE = re.compile(r"[^\s,()\"'=<>!]+")
_SPACE = re.compile(r"\s*")
_INDEX = re.compile(r"\[\s*([0-9]+)\s*\]")

#: a literal: ("n", float), ("s", str), ("b", bool) or ("z", None)
Literal = tuple[str, Any]
Step = str | int


@dataclass(frozen=True, slots=True)
class Condition:
    op: str
    path: tuple[Step, ...]
    values: tuple[Literal, ...] = ()

    def text(self) -> str:
        path = _path_text(self.path)
        if self.op in ("exists", "missing"):
            return f"{self.op} {path}"
        if self.op == "in":
            return f"{path} in ({', '.join(_literal_text(v) for v in self.values)})"
        return f"{path} {self.op} {_literal_text(self.values[0])}"


@dataclass(frozen=True, slots=True)
class Where:
    """A parsed expression: all its conditions must hold."""

    conditions: tuple[Condition, ...]

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def text(self) -> str:
        """The expression in its one written form (``parse(w.text()) == w``)."""
        return " and ".join(c.text() for c in self.conditions)

    def lua_arg(self) -> str:
        """The conditions as browse.lua reads them (cjson): [op, path, values] each, a
        path's index steps 0-based numbers, a literal [kind, value]."""
        rows = [[c.op, list(c.path), [list(v) for v in c.values]] for c in self.conditions]
        return json.dumps(rows, separators=(",", ":"), allow_nan=False) if rows else ""

    def matches(self, body: bytes | str) -> bool:
        """Whether a body matches, by the rules browse.lua's matches() follows."""
        doc = load(body)
        if doc is _NOT_JSON:
            return False
        return all(_holds(c, doc) for c in self.conditions)


NOTHING = Where(())


def _path_text(path: tuple[Step, ...]) -> str:
    out = ""
    for i, step in enumerate(path):
        if isinstance(step, int):
            out += f"[{step}]"
        else:
            name = step if _NAME.fullmatch(step) else json.dumps(step, ensure_ascii=False)
            out += name if i == 0 else f".{name}"
    return out


def _literal_text(v: Literal) -> str:
    kind, value = v
    if kind == "n":
        return repr(int(value)) if value == int(value) and abs(value) < 2**53 else repr(value)
    if kind == "b":
        return "true" if value else "false"
    if kind == "z":
        return "null"
    if _BARE.fullmatch(value) and value.lower() not in ("true", "false", "null", "and", "in") \
            and not _NUMBER.fullmatch(value):  # fmt: skip
        return str(value)
    return json.dumps(value, ensure_ascii=False)


class _Reader:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0

    def fail(self, what: str, at: int | None = None) -> InvalidArgument:
        at = self.i if at is None else at
        near = self.s[at : at + 20]
        where = f"at position {at + 1}" + (f" ({near!r})" if near else " (the end)")
        return InvalidArgument(FIELD, f"where (the field filter) {where}: {what}. {SYNTAX}")

    def space(self) -> None:
        m = _SPACE.match(self.s, self.i)
        self.i = m.end() if m else self.i

    def done(self) -> bool:
        self.space()
        return self.i >= len(self.s)

    def word(self, *words: str) -> str | None:
        """One of ``words`` (case-insensitive) as a whole word here, taken."""
        self.space()
        for w in words:
            end = self.i + len(w)
            if self.s[self.i : end].lower() == w and not (
                end < len(self.s) and (self.s[end].isalnum() or self.s[end] in "_-.[")
            ):
                self.i = end
                return w
        return None

    def quoted(self) -> str | None:
        self.space()
        if self.i >= len(self.s) or self.s[self.i] not in "\"'":
            return None
        q, start = self.s[self.i], self.i
        out, j = [], self.i + 1
        while j < len(self.s):
            c = self.s[j]
            if c == "\\" and j + 1 < len(self.s):
                out.append(self.s[j + 1])
                j += 2
                continue
            if c == q:
                self.i = j + 1
                return "".join(out)
            out.append(c)
            j += 1
        raise self.fail("a quoted text without its closing quote", start)

    def name(self) -> str:
        start = self.i
        q = self.quoted()
        if q is not None:
            return _utf8(q, self, start)
        m = _NAME.match(self.s, self.i)
        if not m:
            raise self.fail("expected a field name (letters, digits, _ or -; or quoted)")
        self.i = m.end()
        return m.group()

    def path(self) -> tuple[Step, ...]:
        self.space()
        steps: list[Step] = [self.name()]
        while self.i < len(self.s):
            if self.s[self.i] == ".":
                self.i += 1
                steps.append(self.name())
            elif self.s[self.i] == "[":
                m = _INDEX.match(self.s, self.i)
                if not m:
                    raise self.fail("expected an index such as [0]")
                index = int(m.group(1))
                if index > 2**31:
                    raise self.fail(f"an index is at most {2**31}")
                steps.append(index)
                self.i = m.end()
            else:
                break
            if len(steps) > MAX_STEPS:
                raise self.fail(f"a path has at most {MAX_STEPS} steps")
        return tuple(steps)

    def literal(self) -> Literal:
        self.space()
        start = self.i
        q = self.quoted()
        if q is not None:
            return ("s", _utf8(q, self, start))
        m = _BARE.match(self.s, self.i)
        if not m:
            raise self.fail("expected a value (a number, a word, or a quoted text)")
        self.i = m.end()
        word = m.group()
        if word.lower() in ("true", "false"):
            return ("b", word.lower() == "true")
        if word.lower() == "null":
            return ("z", None)
        if _NUMBER.fullmatch(word):
            n = float(word)
            if math.isinf(n):
                raise self.fail("a number too large", start)
            return ("n", n)
        return ("s", _utf8(word, self, start))

    def condition(self) -> Condition:
        start = self.i
        op = self.word("exists", "missing")
        if op:
            return Condition(op, self.path())
        path = self.path()
        self.space()
        if self.word("in"):
            self.space()
            if not self.s.startswith("(", self.i):
                raise self.fail("expected ( after in")
            self.i += 1
            values = [self.literal()]
            while True:
                self.space()
                if self.s.startswith(",", self.i):
                    self.i += 1
                    values.append(self.literal())
                    if len(values) > MAX_VALUES:
                        raise self.fail(f"an in list has at most {MAX_VALUES} values")
                elif self.s.startswith(")", self.i):
                    self.i += 1
                    break
                else:
                    raise self.fail("expected , or ) in the in list")
            return Condition("in", path, tuple(values))
        for op in ORDERING:
            if self.s.startswith(op, self.i):
                self.i += len(op)
                self.space()
                at = self.i
                value = self.literal()
                if op not in ("=", "!=") and value[0] not in ("n", "s"):
                    raise self.fail(f"{op} compares with a number or a text", at)
                return Condition(op, path, (value,))
        del start
        raise self.fail(f"expected an operator ({', '.join(ORDERING)} or in) after the field")


def _utf8(text: str, r: _Reader, at: int) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise r.fail("a text that is not valid Unicode", at) from None
    return text


SYNTAX = (
    "Allowed: conditions joined with 'and', each 'path = value' (or !=, >, >=, <, <=), "
    "'path in (a, b)', 'exists path' or 'missing path'; a path such as order.items[0].sku."
)


def parse(text: str) -> Where:
    """The expression ``text`` (empty: no field filter), or InvalidArgument naming
    ``where`` with the position of what is wrong and what is allowed."""
    if not isinstance(text, str):
        raise InvalidArgument(FIELD, "where must be a string")
    if len(text) > MAX_LENGTH:
        raise InvalidArgument(FIELD, f"where (the field filter): at most {MAX_LENGTH} characters")
    r = _Reader(text)
    if r.done():
        return NOTHING
    conditions = [r.condition()]
    while not r.done():
        if not r.word("and", "&&"):
            raise r.fail("expected 'and' between conditions")
        if r.done():
            raise r.fail("expected a condition after 'and'")
        conditions.append(r.condition())
        if len(conditions) > MAX_CONDITIONS:
            raise r.fail(f"at most {MAX_CONDITIONS} conditions")
    return Where(tuple(conditions))


# -- the rules, in Python (browse.lua's matches() has the same) -------------------------


class _NotJson:
    pass


_NOT_JSON: Any = _NotJson()
_ABSENT: Any = object()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load(body: bytes | str) -> Any:
    """A body's JSON (texts as str, their raw bytes kept by surrogateescape), or
    _NOT_JSON. NaN / Infinity are refused as cjson (strict) refuses them; nesting past
    MAX_DEPTH too."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "surrogateescape")
    if body.startswith("\ufeff"):
        return _NOT_JSON  # cjson refuses a byte-order mark
    try:
        doc = json.loads(body, parse_constant=_no_constant, strict=False)
    except (ValueError, RecursionError):
        return _NOT_JSON
    return doc if _depth_ok(doc) else _NOT_JSON


def _depth_ok(doc: Any) -> bool:
    todo = [(doc, 1)]
    while todo:
        x, d = todo.pop()
        if isinstance(x, dict | list):
            if d > MAX_DEPTH:
                return False
            todo += [(y, d + 1) for y in (x.values() if isinstance(x, dict) else x)]
    return True


def _at(doc: Any, path: tuple[Step, ...]) -> Any:
    for step in path:
        if isinstance(step, int):
            if not isinstance(doc, list) or step >= len(doc):
                return _ABSENT
            doc = doc[step]
        else:
            if not isinstance(doc, dict) or step not in doc:
                return _ABSENT
            doc = doc[step]
    return doc


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _raw(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _equal(x: Any, v: Literal) -> bool:
    kind, value = v
    if kind == "n":
        n = _number(x)
        return n is not None and n == value
    if kind == "s":
        return isinstance(x, str) and _raw(x) == value.encode("utf-8")
    if kind == "b":
        return isinstance(x, bool) and x == value
    return x is None


def _holds(c: Condition, doc: Any) -> bool:
    x = _at(doc, c.path)
    if c.op == "exists":
        return x is not _ABSENT
    if c.op == "missing":
        return x is _ABSENT
    if x is _ABSENT:
        return False
    if c.op == "=":
        return _equal(x, c.values[0])
    if c.op == "!=":
        return not _equal(x, c.values[0])
    if c.op == "in":
        return any(_equal(x, v) for v in c.values)
    kind, value = c.values[0]
    a: Any
    b: Any
    if kind == "n":
        a, b = _number(x), value
    elif isinstance(x, str):
        a, b = _raw(x), value.encode("utf-8")
    else:
        return False
    if a is None:
        return False
    if c.op == ">":
        return bool(a > b)
    if c.op == ">=":
        return bool(a >= b)
    if c.op == "<":
        return bool(a < b)
    return bool(a <= b)
