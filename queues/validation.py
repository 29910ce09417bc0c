"""Argument checks with the original rsmq's ranges; every message names the field and range."""

from __future__ import annotations

import re

from .errors import InvalidArgument, MessageNotString
from .models import LIST_STATES

QNAME_RE = re.compile(r"[a-zA-Z0-9_-]{1,160}")
ID_RE = re.compile(r"[a-zA-Z0-9:]{32}")
MAX_SECONDS = 9_999_999
MAXSIZE_MIN, MAXSIZE_MAX = 1024, 65_536
MAX_BATCH = 1000
#: messages one send takes at most: one atomic script call, whose Redis time grows with
#: the batch (bench/RESULTS.md, "Figures behind the code")
MAX_SEND_BATCH = 10_000
MAX_PAGE = 1000


QNAME_FORMAT = "1 to 160 characters of a-z A-Z 0-9 _ -"
# {ns}:QUEUES is the set of queue names: a queue of that name would overwrite it.
RESERVED_QNAMES = frozenset({"QUEUES"})
ID_FORMAT = "32 characters of a-z A-Z 0-9 :"
#: the ids RSMQ clients make (Node rsmq, PyRSMQ, this client: 32 letters and digits;
#: go-rsmq: 22): the only ids written into a queue under a given name (an import's kept
#: id), so that none can be one of the queue hash's own fields (totalrecv, vt, x:...) or
#: another message's ``<id>:rc`` / ``<id>:fr`` (the scripts' ``rsmq_id`` says the same)
RSMQ_ID_RE = re.compile(r"[A-Za-z0-9]{32}|[A-Za-z0-9]{22}")
RSMQ_ID_FORMAT = "an RSMQ message id: 32 letters and digits (22 for go-rsmq's)"


def qname(value: object, field: str = "qname") -> str:
    if value is None or value == "":
        raise InvalidArgument(field, f"No {field} supplied ({QNAME_FORMAT})")
    if not isinstance(value, str) or not QNAME_RE.fullmatch(value):
        raise InvalidArgument(field, f"Invalid {field} format: {value!r} ({QNAME_FORMAT})")
    if value in RESERVED_QNAMES:
        raise InvalidArgument(
            field, f"Invalid {field}: {value!r} is reserved (the key of the queue list)"
        )
    return value


def rsmq_id(value: object, field: str = "id") -> str:
    """An id as RSMQ clients make them (``RSMQ_ID_RE``): what an import may keep."""
    if not isinstance(value, str) or not RSMQ_ID_RE.fullmatch(value):
        raise InvalidArgument(field, f"{field} must be {RSMQ_ID_FORMAT}")
    return value


def message_id(value: object, field: str = "id") -> str:
    if value is None or value == "":
        raise InvalidArgument(field, f"No {field} supplied ({ID_FORMAT})")
    if not isinstance(value, str) or not ID_RE.fullmatch(value):
        raise InvalidArgument(field, f"Invalid {field} format: {value!r} ({ID_FORMAT})")
    return value


def integer(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(field, f"{field} must be an integer between {low} and {high}")
    return value


def seconds(field: str, value: object) -> int:
    """vt and delay: whole seconds, 0..9,999,999."""
    return integer(field, value, 0, MAX_SECONDS)


def maxsize(value: object) -> int:
    if value == -1 and not isinstance(value, bool):
        return -1
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not (MAXSIZE_MIN <= value <= MAXSIZE_MAX)
    ):
        raise InvalidArgument(
            "maxsize",
            f"maxsize must be between {MAXSIZE_MIN} and {MAXSIZE_MAX} bytes, or -1 for unlimited",
        )
    return value


def body(value: object) -> str | bytes:
    """A message body: a str, or bytes that are valid UTF-8 (stored as they are)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            raise MessageNotString(
                f"Message must be a string of valid Unicode: {e.reason} at position {e.start}"
            ) from None
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise MessageNotString(
                f"Message must be a string: bytes are not valid UTF-8 at position {e.start}"
            ) from None
        return raw
    raise MessageNotString(f"Message must be a string, not {type(value).__name__}")


def state(value: object) -> str:
    if value not in LIST_STATES:
        raise InvalidArgument("state", f"state must be one of {', '.join(LIST_STATES)}")
    return value  # type: ignore[return-value]


#: one part of a duration: a number and its unit ("90s", "5 min", "2h", "1.5d")
_DURATION_PART = re.compile(
    r"(\d+(?:\.\d+)?)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|h|days?|d)", re.I
)
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_FORMAT = "seconds (90) or a number with a unit (90s, 10m, 2h, 1h30m, 1d)"


def duration(field: str, value: object, signed: bool = False) -> float:
    """Seconds from a duration as typed: a number (seconds), or parts with units ("90s",
    "5 min", "2h", "1h30m", "1d"); with ``signed`` a leading "-" (earlier) is kept."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if signed or value >= 0:
            return float(value)
    text = str(value).strip() if isinstance(value, str) else ""
    sign = 1.0
    if signed and text[:1] in "+-" and text:
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:].strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return sign * float(text)
    total, at = 0.0, 0
    for part in _DURATION_PART.finditer(text):
        if text[at : part.start()].strip():
            break
        total += float(part[1]) * _UNIT[part[2][0].lower()]
        at = part.end()
    else:
        if at and not text[at:].strip():
            return sign * total
    raise InvalidArgument(field, f"{field} must be {DURATION_FORMAT}")
