"""Request bodies that name only fields we know: a field we don't know is refused with a
400 naming it and the fields the call takes, and nothing runs — never silently ignored
(``{"vt": 20, "maxSize": 2048}`` would otherwise create a queue of the default size)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from django.http import HttpRequest, HttpResponse, JsonResponse
from pydantic import BaseModel, model_validator

from dashboard.api.calls import BadInput
from dashboard.web.text import refusal as refusal
from dashboard.web.text import storable


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


def unstorable(data: Any) -> tuple[str, str] | None:
    """Where the first string (or key) of a parsed body holds text a database can't store
    — a NUL (``"\\u0000"``: Postgres refuses it in text and in JSON) or a lone surrogate
    (``"\\ud800"``: JSON can spell it, UTF-8 can't encode it) — and that string:
    ("message", …), ("messages[1]", …); None when there is none. Iterative: a body
    nested a thousand deep doesn't overflow the stack."""
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if not storable(value):
                return path or "body", value
        elif isinstance(value, dict):
            for key, item in reversed(list(value.items())):
                if not storable(key):
                    name = shown(key)
                    return (f"{path}.{name}" if path else name), key
                stack.append((f"{path}.{key}" if path else key, item))
        elif isinstance(value, list):
            stack.extend(
                (f"{path or 'body'}[{i}]", item) for i, item in reversed(list(enumerate(value)))
            )
    return None


def shown(text: str) -> str:
    """``text`` as a refusal may name it (a NUL or a lone surrogate as its escape)."""
    return text.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")


def check_request(query: Iterable[tuple[str, list[str]]], path: dict[str, Any]) -> None:
    """BadInput naming the first query parameter or path part that is not ``storable``."""
    for key, values in query:
        if not storable(key):
            raise BadInput(refusal(shown(key), key))
        for value in values:
            if not storable(value):
                raise BadInput(refusal(key, value))
    for name, value in path.items():
        if isinstance(value, str) and not storable(value):
            raise BadInput(refusal(name, value))


class StorableInput:
    """Every API call's query parameters and path parts (the body: the API's parser,
    dashboard/api/__init__.py): one holding text a database can't store is a 400 naming
    it, before the route (its auth included) runs — whatever the route does with it
    later (an audit row, a job's filter), it never meets the database."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view: object, args: object, kwargs: dict[str, Any]
    ) -> HttpResponse | None:
        if not request.path_info.startswith("/api/"):
            return None
        try:
            check_request(request.GET.lists(), kwargs)
        except BadInput as e:
            return JsonResponse({"error": str(e)}, status=400)
        return None
