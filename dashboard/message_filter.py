"""Which messages of a queue a request means: the one filter the message browser, the
bulk jobs (act on every match), exports and the API read from a URL's query, and hand to
``RedisSMQ.browse`` (``browse_kwargs``). The URL is the filter: ``query()`` writes it back.

Two ways to read one: ``from_params`` as the browser does (a bad value falls back to its
default: a hand-edited URL still shows a page), ``checked`` as an action does (a bad value
is refused, naming the field and its allowed range, before anything changes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import QueryDict

from queues.models import LIST_STATES

#: the URL's name of each field
PARAMS = {"state": "state", "min_rc": "rc", "contains": "search"}
RC_MAX = 2**31


class FilterError(ValueError):
    """A filter's field out of its range: ``field`` is the URL's name of it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class MessageFilter:
    state: str = "all"
    min_rc: int = 0
    contains: str = ""

    @property
    def narrows(self) -> bool:
        """Whether it looks inside the state (a scan), not only at the state."""
        return bool(self.min_rc or self.contains)

    def browse_kwargs(self) -> dict[str, Any]:
        return {"state": self.state, "min_rc": self.min_rc, "contains": self.contains}

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
        return ", ".join(words)


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
    return MessageFilter(state, min_rc, params.get("search") or "")


def from_params(params: QueryDict | dict[str, str]) -> MessageFilter:
    """The filter of ``params``, each bad field at its default (the browser's reading)."""
    fields = {}
    for name, param in PARAMS.items():
        try:
            fields[name] = getattr(checked({param: params.get(param) or ""}), name)
        except FilterError:
            fields[name] = getattr(DEFAULT, name)
    return MessageFilter(**fields)
