"""The audit log's writer: one row per mutating action, allowed, failed or denied."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest

from .models import AuditEntry

if TYPE_CHECKING:  # place.py audits denied access: a runtime import would be a cycle
    from .place import Place

MAX_IDS, MAX_DETAIL = 1000, 2000  # a bulk action over a whole state names no more


def record(
    request: HttpRequest,
    place: Place,
    action: str,
    outcome: str,
    queue: str = "",
    ids: Iterable[str] = (),
    count: int | None = None,
    params: dict[str, Any] | None = None,
    detail: str = "",
) -> None:
    user = request.user
    AuditEntry.objects.create(
        user=user if user.is_authenticated else None,
        username=user.get_username(),
        connection=place.conn.name,
        namespace=place.ns,
        queue=queue,
        action=action,
        ids=list(ids)[:MAX_IDS],
        count=count,
        params=params or {},
        outcome=outcome,
        detail=detail[:MAX_DETAIL],
    )
