"""Request bodies that name only fields we know: a field we don't know is refused with a
400 naming it and the fields the call takes, and nothing runs — never silently ignored
(``{"vt": 20, "maxSize": 2048}`` would otherwise create a queue of the default size)."""

from __future__ import annotations

from typing import Any, ClassVar

from ninja import Schema
from ninja.schema import DjangoGetter
from pydantic import model_validator

from dashboard.api.calls import BadInput


class Known(Schema):
    """A body schema whose unknown fields are refused (400, nothing changed)."""

    #: fields a caller may send that the call doesn't list (e.g. rest-rsmq's qname)
    hidden_fields: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def known_fields(cls, data: Any) -> Any:
        fields = data._obj if isinstance(data, DjangoGetter) else data  # ninja wraps dicts
        if isinstance(fields, dict):
            unknown = [str(k) for k in fields if k not in cls.model_fields]
            if unknown:
                takes = ", ".join(f for f in cls.model_fields if f not in cls.hidden_fields)
                raise BadInput(
                    f"{', '.join(unknown)}: not a field here (it takes {takes}); nothing changed"
                )
        return data
