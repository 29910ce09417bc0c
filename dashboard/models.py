from __future__ import annotations

import datetime as dt

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


class Snapshot(models.Model):
    """One queue's counters at one moment, as the snapshot task read them.

    ``taken_at`` is the Redis server's TIME of the reading, in epoch ms: an integer, as
    charts read thousands of them at a time (a datetime column costs 4× as much to
    read). ``created`` is the queue's creation time: when it changes, the queue was
    deleted and recreated, and its counters started again from 0.
    """

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    taken_at = models.BigIntegerField()  # epoch ms
    msgs = models.BigIntegerField()
    hiddenmsgs = models.BigIntegerField()
    inflight = models.BigIntegerField()
    delayed = models.BigIntegerField()
    totalsent = models.BigIntegerField()
    totalrecv = models.BigIntegerField()
    oldest_age = models.FloatField(null=True, blank=True)  # s; None: nothing visible
    created = models.BigIntegerField()  # epoch s

    class Meta:
        indexes = [
            # A queue's history (charts, API) and a page of queues (overview), read from
            # the index alone: a queue's rows lie together there, while the table holds
            # them in time order, one every (number of queues) rows. A week of one queue
            # out of 8 reads 1.6x faster this way on SQLite, and the gap grows with the
            # number of queues.
            models.Index(
                fields=[
                    "connection",
                    "namespace",
                    "queue",
                    "taken_at",
                    "msgs",
                    "hiddenmsgs",
                    "inflight",
                    "delayed",
                    "oldest_age",
                    "totalsent",
                    "totalrecv",
                    "created",
                ],
                name="snapshot_queue_history",
            ),  # fmt: skip
            models.Index(fields=["taken_at"], name="snapshot_time"),  # retention
        ]
        get_latest_by = "taken_at"

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue} at {self.taken:%Y-%m-%d %H:%M:%S}"

    @property
    def taken(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.taken_at / 1000, tz=dt.UTC)

    @property
    def visible(self) -> int:
        return self.msgs - self.hiddenmsgs
