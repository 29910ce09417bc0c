"""What the header of every page needs, error pages included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest

from dashboard.access.grants import can, role_of
from dashboard.access.roles import Role
from dashboard.models import Alert, Preference
from dashboard.places.connections import connections
from dashboard.views.forms import RefreshForm


def refresh_seconds(request: HttpRequest) -> int:
    pref = None
    if request.user.is_authenticated:
        pref = Preference.objects.filter(user=request.user).first()
    seconds = pref.refresh_seconds if pref else settings.RSMQ_REFRESH_SECONDS
    return 0 if seconds <= 0 else max(2, seconds)


def console(request: HttpRequest) -> dict[str, Any]:
    if not request.user.is_authenticated:
        return {}
    kwargs = request.resolver_match.kwargs if request.resolver_match else {}
    conns = connections()
    connection = next((c for c in conns if c.name == kwargs.get("conn")), None)
    refresh = refresh_seconds(request)
    return {
        "connection": connection,
        "namespace": kwargs.get("ns") if connection else None,
        "places": [(c, ns) for c in conns for ns in c.namespaces],
        "role": role_of(request.user).name.lower(),
        "can_operate": can(request.user, Role.OPERATOR),
        "can_admin": can(request.user, Role.ADMIN),
        "read_only": settings.RSMQ_READ_ONLY,
        "refresh": refresh,
        "refresh_form": RefreshForm(initial={"refresh_seconds": refresh}),
        # The header's count of firing alerts: one indexed count, only if a page shows it.
        "alerts_firing": firing_alerts(),
    }


def firing_alerts() -> Callable[[], int]:
    """The count of firing alerts, as a callable a template calls: counted at its first
    use, once per request (a page without a header never counts)."""
    counted: list[int] = []

    def count() -> int:
        if not counted:
            counted.append(Alert.objects.filter(state=Alert.State.FIRING).count())
        return counted[0]

    return count
