"""Which saved filters (models.SavedFilter) a user sees and may delete on a queue page:
read by the queue page (views/queue.py) and the saving views (views/saved_filters.py)."""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet

from dashboard.access.grants import can
from dashboard.access.roles import Role
from dashboard.models import SavedFilter
from dashboard.places.place import Place

#: saved filters listed on a filter bar at most
LISTED = 50


def usable(
    user: AbstractBaseUser | AnonymousUser, place: Place, qname: str
) -> QuerySet[SavedFilter]:
    """The saved filters ``user`` sees on ``qname``'s page: theirs and the shared ones,
    of this queue or every queue of the namespace."""
    return SavedFilter.objects.filter(
        Q(owner_id=user.pk) | Q(shared=True),
        Q(queue=qname) | Q(queue=""),
        connection=place.conn.name,
        namespace=place.ns,
    ).select_related("owner")


def may_delete(user: AbstractBaseUser | AnonymousUser, row: SavedFilter) -> bool:
    return row.owner_id == user.pk or can(user, Role.ADMIN)


def listed(
    user: AbstractBaseUser | AnonymousUser, place: Place, qname: str
) -> list[dict[str, object]]:
    """The filter bar's list: each saved filter, its link's query and whether ``user``
    may delete it."""
    return [{"row": row, "deletable": may_delete(user, row)}
            for row in usable(user, place, qname)[:LISTED]]  # fmt: skip
