"""The four roles (observer ⊂ viewer ⊂ operator ⊂ admin), made again after every flush.

Migrations 0002 and 0027 (the observer) make them as groups, 0028 gives each group its
role on every queue (a grant on *). A transactional test (``django_db(transaction=True)``,
a live server) ends by flushing every table, the migrations' rows with them; Django then
sends ``post_migrate``, which makes the content types and permissions again, and
``remake_after_flushes`` the roles too. So a test finds the roles whatever ran before it
on its worker (pytest-xdist hands each worker its own order of tests).
"""

from __future__ import annotations

import importlib
from typing import Any


def make_roles(using: str = "default") -> None:
    """The role groups, their permissions and grants, as migrations 0002, 0027 and 0028
    make them (on the installed apps: the migrations' own functions work on a migration's
    app registry)."""
    from django.apps import apps
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Group, Permission

    from dashboard.models import Grant

    roles = dict(importlib.import_module("dashboard.migrations.0002_roles").ROLES)
    roles = {"observer": [], **roles}
    observed = importlib.import_module("dashboard.migrations.0027_masking").GROUPS
    roles = {name: [*codes, "observe_console"] if name in observed else codes
             for name, codes in roles.items()}  # fmt: skip
    create_permissions(apps.get_app_config("dashboard"), verbosity=0, using=using)
    for name, codenames in roles.items():
        group, _ = Group.objects.using(using).get_or_create(name=name)
        group.permissions.set(
            Permission.objects.using(using).filter(
                content_type__app_label="dashboard", codename__in=codenames
            )
        )
        Grant.objects.using(using).get_or_create(group=group, role=name)


def _after_migrate(sender: Any, using: str = "default", **_: Any) -> None:
    if sender.label == "dashboard":
        make_roles(using)


def remake_after_flushes() -> None:
    from django.db.models.signals import post_migrate

    post_migrate.connect(_after_migrate, dispatch_uid="rsmq-tests-roles")
