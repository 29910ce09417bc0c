"""Which messages of a queue a request means: the one filter the message browser, the
bulk jobs (act on every match), exports and the API read from a URL's query, and hand to
``RedisSMQ.browse`` (``browse_kwargs``). The URL is the filter: ``query()`` writes it back.

Two ways to read one: ``from_params`` as the browser does (a bad value falls back to its
default: a hand-edited URL still shows a page), ``checked`` as an action does (a bad value
is refused, naming the field and its allowed range, before anything changes).

Beyond the state, received >= N and body-contains: a field filter on JSON bodies
(``where``: ``amount > 100 and status in (failed, retry)``, see queues/fields.py) and
ages, as "sent more than ``older`` minutes ago" / "less than ``younger`` minutes ago".
Ages are relative, not times of day, so that a bookmarked or saved filter keeps
meaning "the stale ones" tomorrow; they are measured by the Redis server's clock (the
id's send time against TIME), never the web server's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Required, TypedDict

from django.http import QueryDict

from queues import InvalidArgument
from queues import fields as F
from queues.limits import MAX_AGE
from queues.models import LIST_STATES

#: the URL's name of each field
PARAMS = {
    "state": "state",
    "min_rc": "rc",
    "contains": "search",
    "where": "where",
    "older": "older",
    "younger": "younger",
}
RC_MAX = 2**31
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

    @property
    def narrows(self) -> bool:
        """Whether it looks inside the state (a scan), not only at the state."""
        return bool(self.min_rc or self.contains or self.where or self.older or self.younger)

    def browse_kwargs(self) -> BrowseArgs:
        """``RedisSMQ.browse``'s arguments (``BrowseArgs``)."""
        out: BrowseArgs = {"state": self.state, "min_rc": self.min_rc, "contains": self.contains}
        if self.where:
            out["where"] = self.where
        if self.older:
            out["older_than"] = self.older * 60
        if self.younger:
            out["younger_than"] = self.younger * 60
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
    return MessageFilter(state, min_rc, params.get("search") or "", where, older, younger)


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
