"""Which messages of a queue a request means: the one filter the message browser, the
bulk jobs (act on every match), exports and the API read from a URL's query, and hand to
``RedisSMQ.browse`` (``browse_kwargs``). The URL is the filter: ``query()`` writes it back.

Two ways to read one: ``from_params`` as the browser does (a bad value falls back to its
default: a hand-edited URL still shows a page), ``checked`` as an action does (a bad value
is refused, naming the field and its allowed range, before anything changes).

Beyond the state, received >= N and body-contains: a field filter on JSON bodies
(``where``: ``amount > 100 and status in (failed, retry)``, see queues/fields.py),
ages, as "sent more than ``older`` minutes ago" / "less than ``younger`` minutes ago",
and the failure the worker recorded last (``record_failure``): its error type
(``error``, exactly), a text in its error line (``error_text``), its attempt at least
(``attempt``: the receive count it failed at) — a failure group of the Failing view is
``error=<its type>``.
Ages are relative, not times of day, so that a bookmarked or saved filter keeps
meaning "the stale ones" tomorrow; they are measured by the Redis server's clock (the
id's send time against TIME), never the web server's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Required, TypedDict

from django.http import QueryDict

from dashboard.access.bodies import Bodies
from queues import InvalidArgument
from queues import fields as F
from queues.limits import FAILURE_TYPE_MAX, LUA_NEEDLE_MAX, MAX_AGE
from queues.models import LIST_STATES

#: the URL's name of each field
PARAMS = {
    "state": "state",
    "min_rc": "rc",
    "contains": "search",
    "where": "where",
    "older": "older",
    "younger": "younger",
    "error": "error",
    "error_text": "error_text",
    "min_attempt": "attempt",
}
RC_MAX = 2**31
#: a failure filter's bounds (queues/ops/read.py checks them too)
ERROR_MAX = FAILURE_TYPE_MAX
ERROR_TEXT_MAX = LUA_NEEDLE_MAX
#: an age's bound, in minutes
AGE_MAX = MAX_AGE // 60


class FilterError(ValueError):
    """A filter's field out of its range: ``field`` is the URL's name of it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class BrowseArgs(TypedDict, total=False):
    """What a filter hands ``RedisSMQ.browse`` (and ``queues.pacing``, ``queues.transfer``):
    the state, received at least, body contains; the field filter and ages only when set."""

    state: Required[str]
    min_rc: Required[int]
    contains: Required[str]
    where: str
    older_than: int
    younger_than: int
    error: str
    error_text: str
    min_attempt: int


@dataclass(frozen=True, slots=True)
class MessageFilter:
    state: str = "all"
    min_rc: int = 0
    contains: str = ""
    #: a field filter in its one written form (queues/fields.py's Where.text())
    where: str = ""
    #: sent at least this many minutes ago (0: any)
    older: int = 0
    #: sent less than this many minutes ago (0: any)
    younger: int = 0
    #: the last recorded failure's type, exactly ("": any)
    error: str = ""
    #: a text in the last recorded failure's error line ("": any)
    error_text: str = ""
    #: the last recorded failure came at this attempt or later (0: any)
    min_attempt: int = 0

    @property
    def narrows(self) -> bool:
        """Whether it looks inside the state (a scan), not only at the state."""
        return bool(
            self.min_rc or self.contains or self.where or self.older or self.younger
            or self.failure
        )  # fmt: skip

    @property
    def failure(self) -> bool:
        """Whether it filters on the last recorded failure."""
        return bool(self.error or self.error_text or self.min_attempt)

    def browse_kwargs(self) -> BrowseArgs:
        """``RedisSMQ.browse``'s arguments (``BrowseArgs``)."""
        out: BrowseArgs = {"state": self.state, "min_rc": self.min_rc, "contains": self.contains}
        if self.where:
            out["where"] = self.where
        if self.older:
            out["older_than"] = self.older * 60
        if self.younger:
            out["younger_than"] = self.younger * 60
        if self.error:
            out["error"] = self.error
        if self.error_text:
            out["error_text"] = self.error_text
        if self.min_attempt:
            out["min_attempt"] = self.min_attempt
        return out

    def query(self) -> dict[str, str]:
        """The URL's query for it, without the defaults."""
        out = {}
        for name, param in PARAMS.items():
            value = getattr(self, name)
            if value != getattr(DEFAULT, name):
                out[param] = str(value)
        return out

    def describe(self) -> str:
        """In words, for a confirmation and the audit log."""
        words = [f"{self.state} messages" if self.state != "all" else "all messages"]
        if self.min_rc:
            words.append(f"received at least {self.min_rc} times")
        if self.contains:
            words.append(f"whose body contains {self.contains!r}")
        if self.where:
            words.append(f"whose JSON fields match `{self.where}`")
        if self.older:
            words.append(f"sent more than {_minutes(self.older)} ago")
        if self.younger:
            words.append(f"sent less than {_minutes(self.younger)} ago")
        if self.error:
            words.append(f"whose last failure is a {self.error}")
        if self.error_text:
            words.append(f"whose last error says {self.error_text!r}")
        if self.min_attempt:
            words.append(f"that last failed at attempt {self.min_attempt} or later")
        return ", ".join(words)


def _minutes(n: int) -> str:
    return "1 minute" if n == 1 else f"{n:,} minutes"


DEFAULT = MessageFilter()


def checked(params: QueryDict | dict[str, str]) -> MessageFilter:
    """The filter of ``params``, or FilterError naming the first bad field."""
    state = params.get("state") or "all"
    if state not in LIST_STATES:
        raise FilterError("state", f"state must be one of {', '.join(LIST_STATES)}.")
    raw = (params.get("rc") or "").strip()
    try:
        min_rc = int(raw) if raw else 0
    except ValueError:
        raise FilterError("rc", f"rc must be a whole number from 0 to {RC_MAX}.") from None
    if not 0 <= min_rc <= RC_MAX:
        raise FilterError("rc", f"rc must be a whole number from 0 to {RC_MAX}.")
    try:
        where = F.parse(params.get("where") or "").text()
    except InvalidArgument as e:
        raise FilterError("where", str(e)) from None
    older, younger = _age(params, "older"), _age(params, "younger")
    if older and younger and younger <= older:
        raise FilterError(
            "younger", "younger must be more minutes than older (sent between the two)."
        )
    error = (params.get("error") or "").strip()
    if len(error) > ERROR_MAX:
        raise FilterError(
            "error", f"error must be an error type of at most {ERROR_MAX} characters."
        )
    error_text = params.get("error_text") or ""
    if len(error_text) > ERROR_TEXT_MAX:
        raise FilterError("error_text", f"error_text must be at most {ERROR_TEXT_MAX} characters.")
    raw = (params.get("attempt") or "").strip()
    try:
        attempt = int(raw) if raw else 0
    except ValueError:
        raise FilterError(
            "attempt", f"attempt must be a whole number from 0 to {RC_MAX}."
        ) from None
    if not 0 <= attempt <= RC_MAX:
        raise FilterError("attempt", f"attempt must be a whole number from 0 to {RC_MAX}.")
    return MessageFilter(
        state, min_rc, params.get("search") or "", where, older, younger, error, error_text,
        attempt,
    )  # fmt: skip


def _age(params: QueryDict | dict[str, str], name: str) -> int:
    raw = (params.get(name) or "").strip()
    what = f"{name} must be a whole number of minutes from 0 to {AGE_MAX}."
    try:
        n = int(raw) if raw else 0
    except ValueError:
        raise FilterError(name, what) from None
    if not 0 <= n <= AGE_MAX:
        raise FilterError(name, what)
    return n


def from_params(params: QueryDict | dict[str, str]) -> MessageFilter:
    """The filter of ``params``, each bad field at its default (the browser's reading)."""
    fields = {}
    for name, param in PARAMS.items():
        try:
            fields[name] = getattr(checked({param: params.get(param) or ""}), name)
        except FilterError:
            fields[name] = getattr(DEFAULT, name)
    if fields["older"] and fields["younger"] and fields["younger"] <= fields["older"]:
        fields["younger"] = 0
    return MessageFilter(**fields)


def problems(params: QueryDict | dict[str, str]) -> dict[str, str]:
    """What is wrong with each field of ``params`` (the URL's name -> why), for a page
    that shows ``from_params``'s reading and says what it left out."""
    out = {}
    for param in PARAMS.values():
        try:
            checked({param: params.get(param) or ""})
        except FilterError as e:
            out[e.field] = str(e)
    if not out:
        try:
            checked(params)
        except FilterError as e:
            out[e.field] = str(e)
    return out


#: a number this long could be a card number (13 digits and more): ordering on it would
#: tell a masked one digit by digit
LONG_NUMBER = 10**12


def body_refusal(bodies: Bodies, f: MessageFilter, strict: bool = False) -> str:
    """Why ``f`` may not run for a caller reading ``bodies`` ("": it may): a filter whose
    matches would tell what a masked part holds. A body search runs (its hits are only
    those in what the caller reads: Bodies.hit), unless ``strict`` (a job acting on
    every match, whose count would tell); a field filter on a masked path, or comparing a
    field to what a pattern masks, or ordering by a long number or a text, does not; nor
    a search of failures' error lines (they quote bodies) where patterns mask."""
    if not (bodies.masked or bodies.hidden) or not (f.contains or f.where or f.error_text):
        return ""
    if bodies.hidden:
        return "The observer role sees no body: searching or filtering bodies is not open to it."
    rules = bodies.rules
    assert rules is not None
    if f.contains and strict:
        return (
            "Body search: this queue's bodies are masked, so every match can't be acted on."
            + bodies.then()
        )
    if f.error_text and rules.patterns:
        return f"error_text: error lines are masked in this queue, so not searched.{bodies.then()}"
    for c in F.parse(f.where).conditions if f.where else ():
        field = ".".join(s for s in c.path if isinstance(s, str))
        if rules.names(field):
            return f"{field}: masked in this queue's bodies, so not filtered on.{bodies.then()}"
        if not rules.patterns:
            continue
        for kind, value in c.values:
            text = _literal(kind, value)
            ordering = c.op in ("<", "<=", ">", ">=")
            if rules.mask(text) != text or ordering and (
                kind == "s" or kind == "n" and abs(value) >= LONG_NUMBER
            ):  # fmt: skip
                return (
                    f"{field}: compared to what this queue's masking hides, so not filtered"
                    f" on.{bodies.then()}"
                )
    return ""


def _literal(kind: str, value: object) -> str:
    if kind == "n" and isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
