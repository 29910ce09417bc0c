"""The provider's groups as the console's Django groups (RSMQ_SSO_GROUPS): a user signed in
through single sign-on or a trusted proxy holds each Django group the mapping names
exactly while one of their groups maps to it, so roles (and per-queue grants keyed on a
group) follow the provider. Django groups the mapping does not name are left alone."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import transaction

from dashboard.audit import log as audit
from dashboard.models import AuditEntry


def problems(mapping: object) -> list[str]:
    """What is wrong with RSMQ_SSO_GROUPS (one line each; none: it can be used)."""
    example = '\'{"rsmq-admins": ["admin"], "billing-team": ["billing"]}\''
    if not isinstance(mapping, dict):
        return [f"RSMQ_SSO_GROUPS must be a JSON object like {example}"]
    found = []
    for claimed, groups in mapping.items():
        names = [groups] if isinstance(groups, str) else groups
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            found.append(
                f"RSMQ_SSO_GROUPS[{claimed!r}] must be a list of Django group names, like"
                f' ["admin"] (it is {groups!r})'
            )
        elif any(len(n) > 150 for n in names):
            found.append(
                f"RSMQ_SSO_GROUPS[{claimed!r}]: a Django group name has 150 characters at most"
            )
    return found


def mapping() -> dict[str, list[str]]:
    """RSMQ_SSO_GROUPS as provider group → Django groups (a bare name taken as a list of
    one); empty when it is not usable (the check at start says why)."""
    raw: object = getattr(settings, "RSMQ_SSO_GROUPS", {})
    if problems(raw):
        return {}
    assert isinstance(raw, dict)
    return {k: [v] if isinstance(v, str) else list(v) for k, v in raw.items()}


def claimed_groups(value: object) -> list[str]:
    """A groups claim as names: a list of them, or one text (comma- or space-separated, as
    a proxy's header or some providers give it); anything else: none."""
    if isinstance(value, str):
        return [g for g in value.replace(",", " ").split() if g]
    if isinstance(value, list):
        return [g for g in value if isinstance(g, str) and g]
    return []


def sync(user: User, claimed: Iterable[str], via: str) -> tuple[list[str], list[str]]:
    """Make ``user``'s Django groups that RSMQ_SSO_GROUPS names those its ``claimed``
    groups map to (the Django groups made when missing); the change, if any, audited as
    ``sso_groups``. (added, removed)."""
    table = mapping()
    managed = {name for names in table.values() for name in names}
    claimed = sorted(set(claimed))
    wanted = {name for group in claimed for name in table.get(group, [])}
    with transaction.atomic():
        held = set(user.groups.filter(name__in=managed).values_list("name", flat=True))
        added, removed = sorted(wanted - held), sorted(held - wanted)
        if added:
            user.groups.add(*[Group.objects.get_or_create(name=name)[0] for name in added])
        if removed:
            user.groups.remove(*Group.objects.filter(name__in=removed))
        if added or removed:
            change = {"added": added, "removed": removed, "claimed": claimed, "via": via}
            audit.write(None, "sso_groups", AuditEntry.Outcome.OK, user=user, params=change)
    return added, removed
