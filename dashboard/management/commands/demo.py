from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from dashboard.management import demo
from dashboard.places.connections import connections
from queues import RedisSMQ


class Command(BaseCommand):
    help = "Create the demo queues (with messages in every state) and a demo login."

    def handle(self, *args: Any, **options: Any) -> None:
        # The first configured namespace: RSMQ_NAMESPACE="a,b" is two namespaces, not one.
        conn = connections()[0]
        with RedisSMQ(url=conn.url, ns=conn.namespaces[0]) as rsmq:
            created = demo.seed(rsmq)
        self.stdout.write(f"demo queues created: {', '.join(created) or 'none (already there)'}")
        ensure_demo_login()


DEMO_USER, DEMO_PASSWORD = "admin", "admin"
# One login per role, the password being the name: admin, operator, viewer.
DEMO_ROLES = ("admin", "operator", "viewer")


def ensure_demo_login() -> None:
    User = get_user_model()
    for role in DEMO_ROLES:
        # The demo admin is also a superuser: the Django admin (users, groups) is theirs.
        user, created = User.objects.get_or_create(
            username=role,
            defaults={
                "email": f"{role}@example.com",
                "is_staff": role == "admin",
                "is_superuser": role == "admin",
            },
        )
        if created:
            user.set_password(role)
            user.save()
            user.groups.add(Group.objects.get(name=role))
