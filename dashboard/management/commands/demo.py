from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from dashboard import demo
from queues import RedisSMQ


class Command(BaseCommand):
    help = "Create the demo queues (with messages in every state) and a demo login."

    def handle(self, *args: Any, **options: Any) -> None:
        with RedisSMQ(url=settings.RSMQ_REDIS_URL, ns=settings.RSMQ_NAMESPACE) as rsmq:
            created = demo.seed(rsmq)
        self.stdout.write(f"demo queues created: {', '.join(created) or 'none (already there)'}")
        ensure_demo_login()


DEMO_USER, DEMO_PASSWORD = "admin", "admin"


def ensure_demo_login() -> None:
    User = get_user_model()
    if not User.objects.filter(username=DEMO_USER).exists():
        User.objects.create_superuser(DEMO_USER, "admin@example.com", DEMO_PASSWORD)
