"""The queue page's owner card (templates/_queue_owner.html), loaded by the include itself
so that the queue page's view needs no change."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.triage.owners import owner_of

register = template.Library()


@register.inclusion_tag("_queue_owner.html", takes_context=True)
def queue_owner(context: template.Context, conn: str, ns: str, qname: str) -> dict[str, Any]:
    return {
        "ownership": owner_of(conn, ns, qname), "can_admin": context.get("can_admin"),
        # "add one" opens the owners page's form filled in with this queue
        "place_key": f"{conn}/{ns}", "qname": qname,
    }  # fmt: skip
