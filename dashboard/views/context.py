"""What the header of every page needs, error pages included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest

from dashboard.access import grants
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
    scope = grants.scope_of(request)
    ns = kwargs.get("ns") if connection else None
    # the role here: at the page's queue, else its place, else the highest held anywhere
    held = scope.highest
    if connection is not None and ns is not None:
        qname = str(kwargs.get("qname", ""))
        # (a queue out of sight: the place's, as on a queue that does not exist)
        at = scope.role_at(connection.name, ns, qname) if qname else Role.NONE
        held = at or scope.role_in(connection.name, ns)
    return {
        "connection": connection,
        "namespace": ns,
        "places": [(c, n) for c in conns for n in c.namespaces if scope.role_in(c.name, n)],
        "role": held.name.lower(),
        "can_operate": not grants.refusal(held, Role.OPERATOR),
        "can_admin": not grants.refusal(held, Role.ADMIN),
        "read_only": settings.RSMQ_READ_ONLY,
        "reveal_minutes": f"{float(settings.RSMQ_REVEAL_MINUTES):g}",
        "refresh": refresh,
        "refresh_form": RefreshForm(initial={"refresh_seconds": refresh}),
        # The header's count of firing alerts: one indexed count, only if a page shows it.
        "alerts_firing": firing_alerts(request),
    }


def firing_alerts(request: HttpRequest) -> Callable[[], int]:
    """The count of firing alerts, as a callable a template calls: counted at its first
    use, once per request (a page without a header never counts)."""
    counted: list[int] = []

    def count() -> int:
        if not counted:
            firing = Alert.objects.filter(state=Alert.State.FIRING)
            if grants.scope_of(request).overall > Role.NONE:
                counted.append(firing.count())
            else:
                where = firing.values_list("connection", "namespace", "queue")
                counted.append(sum(1 for _ in grants.shown(request, where, lambda w: w)))
        return counted[0]

    return count
