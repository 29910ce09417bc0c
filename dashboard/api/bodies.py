"""Request bodies that name only fields we know: a field we don't know is refused with a
400 naming it and the fields the call takes, and nothing runs — never silently ignored
(``{"vt": 20, "maxSize": 2048}`` would otherwise create a queue of the default size)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, model_validator

from dashboard.api.calls import BadInput


class Known(BaseModel):
    """A body schema whose unknown fields are refused (400, nothing changed). A plain
    pydantic model (ninja takes them as they are), which the fast path validates too."""

    #: fields a caller may send that the call doesn't list (e.g. rest-rsmq's qname)
    hidden_fields: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = [str(k) for k in data if k not in cls.model_fields]
            if unknown:
                takes = ", ".join(f for f in cls.model_fields if f not in cls.hidden_fields)
                raise BadInput(
                    f"{', '.join(unknown)}: not a field here (it takes {takes}); nothing changed"
                )
        return data


def unpaired(data: Any) -> str | None:
    """Where the first string (or key) of a parsed JSON body holds a lone surrogate
    (``"\\ud800"``: JSON can spell it, UTF-8 can't encode it): "message",
    "messages[1]"; None when there is none. Iterative: a body nested a thousand deep
    doesn't overflow the stack."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not _utf8(value):
                return path or "body"
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                name = key if _utf8(key) else key.encode("utf-8", "backslashreplace").decode()
                if name != key:
                    return f"{path}.{name}" if path else name
                stack.append((f"{path}.{key}" if path else key, item))
        elif isinstance(value, list):
            stack.extend(
                (f"{path or 'body'}[{i}]", item) for i, item in reversed(list(enumerate(value)))
            )
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def surrogate_refusal(field: str) -> str:
    return (
        f"{field} must be valid Unicode text: it holds a lone surrogate (\\ud800 to"
        " \\udfff), which UTF-8 can't encode"
    )
