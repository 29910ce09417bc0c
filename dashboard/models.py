from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEntry(models.Model):
    """One mutating action in the console, written whether it succeeded, failed or was denied."""

    class Outcome(models.TextChoices):
        OK = "ok", "succeeded"
        ERROR = "error", "failed"
        DENIED = "denied", "denied"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)  # kept when the user is deleted
    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160, blank=True, db_index=True)
    action = models.CharField(max_length=40, db_index=True)
    ids = models.JSONField(default=list, blank=True)
    count = models.IntegerField(null=True, blank=True)
    params = models.JSONField(default=dict, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, db_index=True)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"
        permissions = [
            ("view_console", "Can see queues and messages (viewer)"),
            ("operate_messages", "Can send, requeue, delete and move messages (operator)"),
            ("administer_queues", "Can create, edit, purge and delete queues (admin)"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.queue}"


class Preference(models.Model):
    """Per-user console settings."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="console_preference"
    )
    refresh_seconds = models.PositiveIntegerField(default=5)  # 0: live refresh off

    def __str__(self) -> str:
        return f"{self.user}: refresh every {self.refresh_seconds} s"
