from __future__ import annotations

import datetime as dt
import json

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditEntry(models.Model):
    """One mutating action in the console, written whether it succeeded, failed or was denied."""

    class Outcome(models.TextChoices):
        OK = "ok", "succeeded"
        ERROR = "error", "failed"
        DENIED = "denied", "denied"  # the role, or read-only
        INVALID = "invalid", "refused: invalid input"
        THROTTLED = "throttled", "refused: too many failed logins"
        # written before the action runs, finished after it (dashboard/api/calls.py run):
        # a row still "started" is an action whose end could not be written
        STARTED = "started", "started (its end not recorded)"

    # A default, not auto_now_add: a record drained from Redis keeps the time it was made.
    at = models.DateTimeField(default=timezone.now, db_index=True)
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
    # An API call's record drained from its namespace's audit stream (dashboard/audit/drain.py):
    # "<connection>/<namespace>/<stream id>", so a drain run twice writes it once.
    record = models.CharField(max_length=400, null=True, blank=True, unique=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"
        permissions = [
            ("observe_console", "Can see queues, counts and charts, never a body (observer)"),
            ("view_console", "Can see queues and messages (viewer)"),
            ("operate_messages", "Can send, requeue, delete and move messages (operator)"),
            ("administer_queues", "Can create, edit, purge and delete queues (admin)"),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.username} {self.action} {self.queue}"

    @property
    def params_json(self) -> str:
        # An edit and re-send's two bodies are shown as their difference (views/audit.py).
        shown = {k: v for k, v in self.params.items() if k != "bodies"}
        return json.dumps(shown, sort_keys=True, ensure_ascii=False)


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
    charts read thousands of them at a time (a datetime column costs several times as
    much to read: bench/RESULTS.md, "Figures behind the code"). ``created`` is the
    queue's creation time: when it changes, the queue was deleted and recreated, and its
    counters started again from 0.
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
    # Wait (send -> first receive) and processing (first receive -> delete, as the
    # project's worker recorded it) of the messages since the previous snapshot, in
    # seconds (dashboard/snapshots/timing.py); None: no message to tell.
    wait_p50 = models.FloatField(null=True, blank=True)
    wait_p95 = models.FloatField(null=True, blank=True)
    wait_p99 = models.FloatField(null=True, blank=True)
    wait_samples = models.BigIntegerField(null=True, blank=True)
    processing_p50 = models.FloatField(null=True, blank=True)
    processing_p95 = models.FloatField(null=True, blank=True)
    processing_p99 = models.FloatField(null=True, blank=True)
    processing_samples = models.BigIntegerField(null=True, blank=True)
    timings_sampled = models.BooleanField(null=True, blank=True)  # from a sample, not all
    # Of the wait_samples, those that waited longer than the queue's SLO
    # (RSMQ_OLDEST_AGE_SLO(S)): the bad events of its wait-time SLO, which burn-rate
    # alerts read (dashboard/alerting/burn.py); None where no wait was seen.
    wait_slow = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            # A queue's history (charts, API) and a page of queues (overview), read from
            # the index alone: a queue's rows lie together there, while the table holds
            # them in time order, one every (number of queues) rows: a week of one queue
            # reads faster this way on SQLite, the more so the more queues there are
            # (bench/RESULTS.md, "Figures behind the code").
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
            # A namespace's last snapshot run (the overview of a big namespace sorts by
            # it): without it SQLite reads the namespace's whole history to find it.
            models.Index(fields=["connection", "namespace", "taken_at"], name="snapshot_run"),
            # The snapshots with wait or processing times (a queue's time chart, its
            # latest times): few of a quiet namespace's rows, read without the others.
            models.Index(
                fields=["connection", "namespace", "queue", "taken_at"],
                condition=models.Q(wait_p50__isnull=False) | models.Q(processing_p50__isnull=False),
                name="snapshot_timed",
            ),
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


class Rollup(models.Model):
    """One queue over one hour (or minute), as the Spark pipeline rolled it up from the
    snapshot lake (pipeline/rollups.py). Only the hours are loaded here: the minutes
    stay in the pipeline's Parquet output."""

    class Grain(models.TextChoices):
        MINUTE = "minute"
        HOUR = "hour"

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    grain = models.CharField(max_length=6, choices=Grain.choices)
    bucket_start = models.BigIntegerField()  # epoch ms
    snapshots = models.IntegerField()
    sent = models.BigIntegerField(null=True)  # None: no interval between snapshots ends here
    received = models.BigIntegerField(null=True)
    seconds = models.FloatField(null=True)  # the intervals' real elapsed time
    send_rate = models.FloatField(null=True)  # per second
    receive_rate = models.FloatField(null=True)
    backlog_avg = models.FloatField()  # backlog: every message of the queue (msgs)
    backlog_max = models.BigIntegerField()
    backlog_last = models.BigIntegerField()
    visible_min = models.BigIntegerField()
    visible_avg = models.FloatField()
    visible_max = models.BigIntegerField()
    hidden_avg = models.FloatField()
    hidden_max = models.BigIntegerField()
    inflight_avg = models.FloatField()
    inflight_max = models.BigIntegerField()
    delayed_avg = models.FloatField()
    delayed_max = models.BigIntegerField()
    oldest_age_max = models.FloatField(null=True)  # s

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "namespace", "queue", "grain", "bucket_start"],
                name="rollup_queue_bucket",
            )
        ]
        indexes = [models.Index(fields=["grain", "bucket_start"], name="rollup_time")]

    def __str__(self) -> str:
        where = f"{self.connection}/{self.namespace}/{self.queue}"
        return f"{where} {self.grain} {self.start:%Y-%m-%d %H:%M}"

    @property
    def start(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.bucket_start / 1000, tz=dt.UTC)


class AnomalyFlag(models.Model):
    """An anomaly found by the pipeline (pipeline/anomalies.py, hourly) or by the console
    at each snapshot (dashboard/triage/conditions.py): from ``start`` until ``end``, or still
    going on (``end`` None), with the figures that triggered it. ``source`` says which:
    a pipeline run replaces its own flags only."""

    class Source(models.TextChoices):
        PIPELINE = "pipeline"
        CONSOLE = "console"

    class Kind(models.TextChoices):
        BACKLOG_GROWING = "backlog_growing", "backlog growing"
        CONSUMERS_STALLED = "consumers_stalled", "consumers stalled"
        OLDEST_AGE = "oldest_age", "oldest message over its SLO"
        REDELIVERY_STORM = "redelivery_storm", "redelivery storm"

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    start = models.BigIntegerField()  # epoch ms
    end = models.BigIntegerField(null=True, blank=True)  # epoch ms; None: still open
    intervals = models.IntegerField()  # minutes
    figures = models.JSONField(default=dict)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.PIPELINE)

    class Meta:
        ordering = ["-start", "queue"]
        indexes = [
            models.Index(fields=["connection", "namespace", "queue", "start"], name="flag_queue")
        ]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue}: {self.get_kind_display()}"

    @property
    def open(self) -> bool:
        return self.end is None


class CensusResult(models.Model):
    """What one queue's messages looked like at the last census (pipeline/census.py)."""

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    read_at = models.BigIntegerField()  # epoch ms, the Redis clock
    messages = models.BigIntegerField()
    visible = models.BigIntegerField()
    inflight = models.BigIntegerField()
    delayed = models.BigIntegerField()
    rc_max = models.BigIntegerField()
    bytes = models.BigIntegerField()
    size_max = models.BigIntegerField()
    age_max = models.FloatField()  # s
    # {"rc" | "age" | "size": [[label, messages], ...]} in bin order, empty bins included
    histograms = models.JSONField(default=dict)
    # the top poison candidates: [{"id", "rc", "sent", "fr", "age", "size", "state"}, ...]
    poison = models.JSONField(default=list)
    min_rc = models.IntegerField()  # poison candidates: received at least this often

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "namespace", "queue"], name="census_queue"
            )
        ]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue}: {self.messages} messages"


class AlertRule(models.Model):
    """An admin's alert rule (dashboard/alerting/): one queue, or the queues whose names
    match a pattern, of one connection and namespace; a snapshot metric or an anomaly
    flag compared to a threshold, for at least ``for_seconds`` before it fires."""

    class Metric(models.TextChoices):
        VISIBLE = "visible", "visible messages"
        INFLIGHT = "inflight", "messages in flight"
        OLDEST_AGE = "oldest_age", "oldest visible message's age (s)"
        SEND_RATE = "send_rate", "send rate (/s)"
        RECEIVE_RATE = "receive_rate", "receive rate (/s)"
        DEAD_LETTERS = "dead_letters", "dead letters added (per evaluation)"
        BACKLOG_GROWING = "flag:backlog_growing", "anomaly: backlog growing"
        CONSUMERS_STALLED = "flag:consumers_stalled", "anomaly: consumers stalled"
        OLDEST_OVER_SLO = "flag:oldest_age", "anomaly: oldest message over its SLO"
        REDELIVERY_STORM = "flag:redelivery_storm", "anomaly: redelivery storm"
        # The connection's Redis (dashboard/probes/redis_health.py), not a queue's: the rule's
        # queue and pattern are left empty, and its one alert has no queue.
        REDIS_AT_RISK = "redis:at_risk", "Redis: data can be lost silently (1/0)"
        REDIS_MEMORY_SHARE = "redis:memory_share", "Redis: memory used / maxmemory (0–1)"
        REDIS_EVICTED_KEYS = "redis:evicted_keys", "Redis: keys evicted since it started"
        NO_CONSUMERS = "state:no_consumers", "consumers: none"
        CRASH_LOOPING = "state:crash_looping", "consumers: crash-looping"
        FALLING_BEHIND = "state:falling_behind", "consumers: falling behind"
        # The queue's wait-time SLO (``threshold``: its target, the percentage of messages
        # that wait less than the queue's SLO) burning its error budget too fast, over two
        # windows at once (the SRE workbook's multiwindow, multi-burn-rate alerts:
        # dashboard/alerting/burn.py).
        BURN_FAST = "burn:fast", "wait SLO burn rate: fast (1 h and 5 min over 14.4)"
        BURN_SLOW = "burn:slow", "wait SLO burn rate: slow (6 h and 30 min over 6)"

    class Severity(models.TextChoices):
        HIGH = "high", "high: notify at once"
        LOW = "low", "low: in the daily digest"

    class Op(models.TextChoices):
        ABOVE = "gt", "above"
        BELOW = "lt", "below"

    name = models.CharField(max_length=100)
    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160, blank=True)  # one queue ...
    pattern = models.CharField(max_length=160, blank=True)  # ... or a glob ("orders-*")
    metric = models.CharField(max_length=30, choices=Metric.choices)
    op = models.CharField(max_length=2, choices=Op.choices, default=Op.ABOVE)
    threshold = models.FloatField(default=0)
    for_seconds = models.PositiveIntegerField(default=0)
    enabled = models.BooleanField(default=True)
    severity = models.CharField(
        max_length=4, choices=Severity.choices, default=Severity.HIGH, db_default=Severity.HIGH
    )
    # A firing alert nobody acknowledged is told again this often (0: once).
    renotify_seconds = models.PositiveIntegerField(default=0, db_default=0)
    webhook_url = models.URLField(max_length=500, blank=True)
    # The key of the webhook's HMAC-SHA256 signature, made when the rule is created.
    webhook_secret = models.CharField(max_length=64, blank=True)
    slack_url = models.URLField(max_length=500, blank=True)
    emails = models.CharField(max_length=500, blank=True)  # comma-separated
    # Counters the rule compares between evaluations (dead letters): {queue: value}.
    counters = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    @property
    def target(self) -> str:
        return self.queue or self.pattern

    @property
    def flag(self) -> str | None:
        """The anomaly kind a flag rule watches, else None."""
        return self.metric.removeprefix("flag:") if self.metric.startswith("flag:") else None

    @property
    def redis(self) -> bool:
        """Whether the rule watches the connection's Redis rather than queues."""
        return self.metric.startswith("redis:")

    @property
    def burn(self) -> str | None:
        """The burn-rate window pair a burn rule watches ("fast", "slow"), else None."""
        return self.metric.removeprefix("burn:") if self.metric.startswith("burn:") else None

    @property
    def consumer_state(self) -> str | None:
        """The consumer state a state rule watches, else None."""
        return self.metric.removeprefix("state:") if self.metric.startswith("state:") else None

    @property
    def condition(self) -> str:
        if self.flag or self.consumer_state:
            return self.get_metric_display()
        if self.burn:
            return f"{self.get_metric_display()}, target {self.threshold:,.10g}%"
        return f"{self.get_metric_display()} {self.get_op_display()} {self.threshold:,.10g}"

    @property
    def recipients(self) -> list[str]:
        return [e.strip() for e in self.emails.split(",") if e.strip()]


class Alert(models.Model):
    """One rule on one queue: pending (the condition holds, not yet for long enough),
    firing, or resolved; its changes are its history (AlertEvent)."""

    class State(models.TextChoices):
        PENDING = "pending"
        FIRING = "firing"
        RESOLVED = "resolved"

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="alerts")
    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    state = models.CharField(max_length=10, choices=State.choices)
    value = models.FloatField(null=True)
    since = models.BigIntegerField()  # epoch ms: when the condition started to hold
    changed = models.BigIntegerField()  # epoch ms of the last change of state
    # epoch ms of the last notification written of it (sent, or held by a silence)
    notified = models.BigIntegerField(null=True, blank=True)
    # the last one was held by a silence: told once the silence is over, if still firing
    held = models.BooleanField(default=False, db_default=False)
    # epoch ms an operator acknowledged this firing (no re-notify until it fires anew)
    acked = models.BigIntegerField(null=True, blank=True)
    acked_by = models.CharField(max_length=150, blank=True, default="", db_default="")

    class Meta:
        ordering = ["-changed"]
        constraints = [models.UniqueConstraint(fields=["rule", "queue"], name="alert_rule_queue")]
        indexes = [models.Index(fields=["connection", "namespace", "queue"], name="alert_queue")]

    def __str__(self) -> str:
        return f"{self.rule}: {self.queue} {self.state}"

    @property
    def changed_at(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.changed / 1000, tz=dt.UTC)

    @property
    def notified_at(self) -> dt.datetime | None:
        """When it was last told of (or held), if ever."""
        if self.notified is None:
            return None
        return dt.datetime.fromtimestamp(self.notified / 1000, tz=dt.UTC)


class AlertEvent(models.Model):
    """A change of an alert's state, kept as its history."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    at = models.BigIntegerField(db_index=True)  # epoch ms
    state = models.CharField(max_length=10, choices=Alert.State.choices)
    value = models.FloatField(null=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.alert} → {self.state}"

    @property
    def at_time(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.at / 1000, tz=dt.UTC)


class Notification(models.Model):
    """The outbox: one message to one receiver, written in the same transaction as the
    alert changes it tells of, and sent (then retried with backoff) by Celery until it
    arrives. ``key`` makes it once per evaluation, rule and receiver."""

    class Channel(models.TextChoices):
        WEBHOOK = "webhook"
        SLACK = "slack"
        EMAIL = "email"

    key = models.CharField(max_length=64, unique=True)
    rule = models.ForeignKey(
        AlertRule, null=True, on_delete=models.SET_NULL, related_name="notifications"
    )
    channel = models.CharField(max_length=10, choices=Channel.choices)
    target = models.CharField(max_length=500)  # URL, or the e-mail addresses
    secret = models.CharField(max_length=64, blank=True)  # the webhook's signing key
    payload = models.JSONField()
    created = models.DateTimeField(auto_now_add=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt = models.DateTimeField(db_index=True)
    claimed_until = models.DateTimeField(null=True)  # a worker is sending it
    sent = models.DateTimeField(null=True, db_index=True)
    last_error = models.TextField(blank=True)
    # Retries ended: an error that can't go away (a refused target, a 4xx, a bad
    # address), or too many failures; last_error says which.
    gave_up = models.DateTimeField(null=True, blank=True, db_index=True)
    # Never sent: a silence held it (its text says which, by whom, until when).
    held = models.CharField(max_length=500, blank=True, default="", db_default="")
    silence = models.ForeignKey(
        "Silence", null=True, blank=True, on_delete=models.SET_NULL, related_name="notifications"
    )

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.channel} {self.key}"


class ApiToken(models.Model):
    """A machine's key to the HTTP API (dashboard/api/), bound to a role.

    Only the SHA-256 of the token is kept: it is 32 random bytes (``secrets``), so a fast
    hash is safe here, unlike a password, and it is looked up by that hash. The request
    count of the current minute (``window``, ``used``) rate-limits it across every web
    process, in the same row."""

    class Role(models.TextChoices):
        OBSERVER = "observer", "observer"
        VIEWER = "viewer", "viewer"
        OPERATOR = "operator", "operator"
        ADMIN = "admin", "admin"

    name = models.CharField(max_length=100, unique=True)  # the audit log's actor
    role = models.CharField(max_length=10, choices=Role.choices)
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the token
    prefix = models.CharField(max_length=12)  # its first characters, to recognise it
    per_minute = models.PositiveIntegerField(default=600)  # requests, then 429
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    window = models.BigIntegerField(default=0)  # epoch minute of ``used``
    used = models.PositiveIntegerField(default=0)
    # Its scope (dashboard/access/grants.py): the connection, namespace and queues it may
    # reach, as globs ("*": every one; ``queues`` a comma-separated list of them).
    connection = models.CharField(max_length=100, default="*")
    namespace = models.CharField(max_length=200, default="*")
    queues = models.CharField(max_length=500, default="*")
    expires_at = models.DateTimeField(null=True, blank=True)  # then refused, as revoked

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.role}{', revoked' if self.revoked_at else ''})"

    @property
    def scope_text(self) -> str:
        """Where it may reach, as the tokens page and the audit log say it."""
        return f"{self.connection}/{self.namespace}/{self.queues}"


class Grant(models.Model):
    """A role given to a user or a group at the queues of a connection and namespace whose
    names match a glob (dashboard/access/grants.py: a role at a queue is the highest of
    the grants that match it)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
        related_name="rsmq_grants",
    )  # fmt: skip
    group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.CASCADE, related_name="rsmq_grants"
    )
    role = models.CharField(max_length=10, choices=ApiToken.Role.choices)
    connection = models.CharField(max_length=100, default="*", help_text="A glob: * is every one.")
    namespace = models.CharField(max_length=200, default="*", help_text="A glob: * is every one.")
    queues = models.CharField(
        max_length=160, default="*", help_text="A glob of queue names, e.g. billing-*."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["connection", "namespace", "queues", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(user__isnull=True) ^ models.Q(group__isnull=True),
                name="grant_user_or_group",
            )
        ]

    def __str__(self) -> str:
        who = f"user {self.user}" if self.user_id else f"group {self.group}"
        return f"{who}: {self.role} at {self.where}"

    @property
    def where(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queues}"


class Ownership(models.Model):
    """Who owns a queue, or the queues whose names match a pattern, of one connection and
    namespace: its owner, who is on call, and the runbook (dashboard/triage/owners.py). Shown on
    the queue page, the overview's row and in every alert's message."""

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160, blank=True)  # one queue ...
    pattern = models.CharField(max_length=160, blank=True)  # ... or a glob ("orders-*")
    owner = models.CharField(max_length=100)
    oncall = models.CharField(max_length=200, blank=True)
    runbook_url = models.URLField(max_length=500, blank=True)  # http(s) only (the form)
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["connection", "namespace", "queue", "pattern"]
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "namespace", "queue", "pattern"], name="ownership_target"
            )
        ]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.target}: {self.owner}"

    @property
    def target(self) -> str:
        return self.queue or self.pattern

    @property
    def summary(self) -> str:
        """One line: the owner, on-call and runbook (a row's hover, an alert's message)."""
        parts = [f"owner {self.owner}"]
        if self.oncall:
            parts.append(f"on call {self.oncall}")
        if self.runbook_url:
            parts.append(f"runbook {self.runbook_url}")
        return " · ".join(parts)

    def as_dict(self) -> dict[str, str]:
        return {"owner": self.owner, "oncall": self.oncall, "runbook_url": self.runbook_url,
                "matched": self.target}  # fmt: skip


class Annotation(models.Model):
    """A marker on the timeline (a deploy, a config change, "incident opened"), posted
    with ``POST /api/annotations/`` by an API token (dashboard/api/annotate.py): on a
    queue, the queues matching a pattern, or (neither) the whole namespace."""

    at = models.BigIntegerField(db_index=True)  # epoch ms
    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160, blank=True)
    pattern = models.CharField(max_length=160, blank=True)
    text = models.CharField(max_length=500)
    created_by = models.CharField(max_length=150)  # the token's name in the audit log
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["connection", "namespace", "at"], name="annotation_place")]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue or self.pattern}: {self.text}"


class QueueCondition(models.Model):
    """One queue's state as of the last snapshot (dashboard/triage/conditions.py): what its
    consumers are doing, why in words, and how urgent it is (``score``: the overview's
    default order, highest first). One row per queue, replaced at each snapshot."""

    class State(models.TextChoices):
        NO_CONSUMERS = "no_consumers", "no consumers"
        CRASH_LOOPING = "crash_looping", "crash-looping"
        FALLING_BEHIND = "falling_behind", "falling behind"
        HEALTHY = "healthy", "healthy"
        IDLE = "idle", "idle"
        # a few messages, nothing sent or received for a while: left behind, not an incident
        STALE = "stale", "stale"
        # nothing consumes it by design (a dead-letter queue, unless told otherwise)
        EXPECTED_IDLE = "expected_idle", "expected idle"

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    taken_at = models.BigIntegerField()  # epoch ms (Redis clock) of the reading
    created = models.BigIntegerField()  # the queue's creation time, epoch s
    msgs = models.BigIntegerField()
    totalsent = models.BigIntegerField()
    totalrecv = models.BigIntegerField()
    recv_since = models.BigIntegerField()  # epoch ms: totalrecv has held its value since
    state = models.CharField(max_length=20, choices=State.choices)
    reason = models.CharField(max_length=500, blank=True)  # in words, "; "-separated
    points = models.FloatField(default=0)  # how bad (state, growth, SLO, flags)
    size = models.FloatField(default=1)  # how big (backlog and rate, log scale)
    alerts = models.IntegerField(default=0)  # firing alerts
    score = models.FloatField(default=0)  # (points + alerts' points) * size
    send_rate = models.FloatField(null=True)  # /s over the last snapshot interval
    receive_rate = models.FloatField(null=True)
    figures = models.JSONField(default=dict)
    # Its outlook (dashboard/triage/forecast.py) at the snapshot: what a namespace too big to read
    # live is sorted by. wait_p95: the latest wait p95 (s); drain_key: Drain.sort_key()
    # (seconds to drain; DRAIN_NEVER: not draining; null: no trend).
    wait_p95 = models.FloatField(null=True)
    drain_key = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "namespace", "queue"], name="condition_queue"
            )
        ]
        indexes = [
            models.Index(fields=["connection", "namespace", "score"], name="condition_score"),
            models.Index(
                fields=["connection", "namespace", "send_rate"], name="condition_send_rate"
            ),
            models.Index(
                fields=["connection", "namespace", "receive_rate"], name="condition_recv_rate"
            ),
            models.Index(fields=["connection", "namespace", "wait_p95"], name="condition_wait"),
            models.Index(fields=["connection", "namespace", "drain_key"], name="condition_drain"),
        ]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue}: {self.state}"


class ConditionChange(models.Model):
    """A queue's condition whenever it changed (dashboard/triage/conditions.py writes one
    where it judges, only when the state, the reasons or the points differ from the
    queue's last): what the overview said of it, and why, from ``at`` until its next row
    (dashboard/triage/as_of.py reads it for a page "as of" a past time). Pruned with the
    snapshots (RSMQ_SNAPSHOT_RETENTION), each queue's last row before the cutoff kept."""

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    at = models.BigIntegerField()  # epoch ms (Redis clock): the judged reading's taken_at
    state = models.CharField(max_length=20, choices=QueueCondition.State.choices)
    reason = models.CharField(max_length=500, blank=True)
    points = models.FloatField(default=0)  # how bad; the score's size comes from the snapshot
    # the state it changed from ("": the queue's first judgement): the timeline's "what
    # changed" without reading the row before
    was = models.CharField(max_length=20, blank=True, default="")

    class Meta:
        indexes = [
            # a queue's condition at a time: its last row at or before it (one seek)
            models.Index(fields=["connection", "namespace", "queue", "at"], name="change_queue"),
            models.Index(fields=["at"], name="change_time"),  # retention
        ]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue}: {self.state} at {self.at}"


class SavedFilter(models.Model):
    """A message filter saved under a name (dashboard/views/saved_filters.py): for one
    queue or every queue of a connection's namespace; its owner's, or (``shared``, an
    admin's choice) everyone's. It is a link: ``query`` is the filter's URL query
    (dashboard/acting/message_filter.py's ``MessageFilter.query()``, encoded)."""

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160, blank=True)  # "": every queue
    name = models.CharField(max_length=100)
    query = models.CharField(max_length=2000)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_filters"
    )
    shared = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "connection", "namespace", "queue", "name"],
                name="saved_filter_name",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.queue or 'every queue'})"


class BulkJob(models.Model):
    """Acting on every message a filter matches (dashboard/acting/jobs.py): counted first, then
    confirmed with the count, then run by a Celery task in bounded steps, paced, with
    progress, pause / resume / cancel and, for a move or a redrive, a canary."""

    class State(models.TextChoices):
        COUNTING = "counting"
        COUNTED = "counted"  # waiting for the typed confirmation
        RUNNING = "running"
        PAUSED = "paused"
        DONE = "done"
        CANCELLED = "cancelled"
        STOPPED = "stopped"  # the canary came back
        FAILED = "failed"

    kind = models.CharField(max_length=20)  # a key of dashboard/acting/jobs.py's KINDS
    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    filter = models.JSONField(default=dict, blank=True)  # the filter's URL query
    params = models.JSONField(default=dict, blank=True)  # to, vt, keep_counts, the pace
    state = models.CharField(max_length=10, choices=State.choices, default=State.COUNTING)
    # what the operator asked the running task for: "" (run), "pause", "cancel"
    control = models.CharField(max_length=10, blank=True, default="")
    matched = models.BigIntegerField(default=0)  # the count (so far, while counting)
    done = models.BigIntegerField(default=0)
    changed = models.BigIntegerField(default=0)  # changed since read: left alone
    skipped = models.BigIntegerField(default=0)
    canary = models.IntegerField(default=0)
    bounced = models.IntegerField(default=0)
    phase = models.CharField(max_length=12, blank=True)
    # epoch ms a timed phase ends at (a canary's watch: the page counts down to it)
    phase_until = models.BigIntegerField(null=True, blank=True)
    note = models.TextField(blank=True)
    username = models.CharField(max_length=150)
    created = models.DateTimeField(default=timezone.now)
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)
    updated = models.DateTimeField(default=timezone.now)
    # Between two steps (each a Celery task of its own, dashboard/acting/jobs.py): where the
    # count or the run stands (queues.pacing.Progress.state()) and its Undo's stash ...
    walk = models.JSONField(default=dict, blank=True)
    # ... the number of the next step (a task runs only the step it was queued for: a
    # duplicate or a stale one does nothing) and when it is due (the sweep re-queues a
    # running job whose step is long overdue: its task was lost)
    turn = models.IntegerField(default=0)
    due = models.DateTimeField(null=True, blank=True)
    # the queue's `created` when it was counted: a queue deleted and created again since
    # is another queue, and the job refuses to act on it
    queue_created = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [models.Index(fields=["connection", "namespace", "queue", "-created"])]

    def __str__(self) -> str:
        return f"job {self.pk}: {self.kind} {self.queue} ({self.state})"

    @property
    def live(self) -> bool:
        return self.state in (self.State.COUNTING, self.State.RUNNING, self.State.PAUSED)


class UndoEntry(models.Model):
    """A destructive action's undo (queues/ops/undo.py keeps what it removed in Redis,
    under ``token``, until ``expires``): its audit row, what it removed, and once undone
    when, by whom and what came of it (``result``: restored and skipped counts, ids)."""

    token = models.CharField(max_length=32, unique=True)
    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    action = models.CharField(max_length=40)
    count = models.IntegerField(default=0)
    bytes = models.BigIntegerField(default=0)
    at = models.DateTimeField(default=timezone.now)
    expires = models.DateTimeField(db_index=True)
    audit = models.OneToOneField(
        AuditEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="undo"
    )
    undone_at = models.DateTimeField(null=True, blank=True)
    undone_by = models.CharField(max_length=150, blank=True)
    result = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"undo {self.action} {self.queue} ({self.token})"

    @property
    def expired(self) -> bool:
        return self.expires <= timezone.now()

    @property
    def offered(self) -> bool:
        """Whether an Undo button is shown for it: neither done nor expired."""
        return self.undone_at is None and not self.expired


class FlagAck(models.Model):
    """An operator's word on a queue's open anomaly flag of one kind (console's or the
    pipeline's): acknowledged (``until`` None: while the flag that was open then stays
    open; a flag opened after ``at`` is news again) or snoozed until ``until`` (epoch ms).
    The flag itself goes on; the overview folds it (dashboard/triage/flags.py). Written
    and removed with an audit row (views/triage.py)."""

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    kind = models.CharField(max_length=20, choices=AnomalyFlag.Kind.choices)
    at = models.BigIntegerField()  # epoch ms of the acknowledgement
    until = models.BigIntegerField(null=True, blank=True)  # epoch ms; None: while it is open
    by = models.CharField(max_length=150)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "namespace", "queue", "kind"], name="flag_ack_target"
            )
        ]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue}: {self.kind} acknowledged"

    def covers(self, flag: AnomalyFlag, now_ms: int) -> bool:
        """Whether it quiets ``flag`` now: a snooze until its time, an acknowledgement
        while the flag it was given for is open."""
        if self.until is not None:
            return now_ms < self.until
        return flag.start <= self.at


class QueueExpectation(models.Model):
    """What an operator said a queue is for, beside what its counters say: ``idle``
    True, nothing consumes it by design (never an incident: dashboard/triage/conditions.py);
    False, it must be consumed even though it is a dead-letter queue (one is expected
    idle unless told otherwise)."""

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    idle = models.BooleanField()
    by = models.CharField(max_length=150)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["connection", "namespace", "queue"], name="queue_expectation_target"
            )
        ]

    def __str__(self) -> str:
        return f"{self.connection}/{self.namespace}/{self.queue}: idle {self.idle}"


class Silence(models.Model):
    """An operator's silence: the alerts of one rule, or of the queues whose names match a
    pattern (or both), of one connection and namespace, are not notified while it is on
    (their notifications are written held: the outbox shows them). From ``starts`` until
    ``ends`` (or until expired by hand: ``ends`` set to then); a maintenance window when
    it names ``weekdays``: on then only, from ``window_start`` to ``window_end`` (UTC;
    an end before the start runs past midnight), within starts…ends (no end: for good).
    dashboard/acting/silences.py reads and writes them."""

    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    rule = models.ForeignKey(
        AlertRule, null=True, blank=True, on_delete=models.CASCADE, related_name="silences"
    )
    pattern = models.CharField(max_length=160, blank=True)  # a queue glob ("orders-*")
    reason = models.CharField(max_length=500)
    created_by = models.CharField(max_length=150)
    created = models.DateTimeField(default=timezone.now)
    starts = models.DateTimeField(default=timezone.now)
    ends = models.DateTimeField(null=True, blank=True)
    expired_by = models.CharField(max_length=150, blank=True)  # "expire now": who
    weekdays = models.JSONField(default=list, blank=True)  # 0 = Monday … 6 = Sunday
    window_start = models.TimeField(null=True, blank=True)
    window_end = models.TimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["connection", "namespace", "ends"], name="silence_place")]

    def __str__(self) -> str:
        return f"silence of {self.target} ({self.reason})"

    @property
    def target(self) -> str:
        what = [f"rule {self.rule.name}" if self.rule else "", self.pattern]
        return " on ".join(w for w in what if w)

    @property
    def window(self) -> bool:
        return bool(self.weekdays)


class SsoSession(models.Model):
    """A console session signed in through OpenID Connect: the provider's tokens, to check
    the user's groups with it again (dashboard/access/oidc.py ``Recheck``). It goes with
    its session: logged out, ended by a check, or expired (pruned with Django's sessions)."""

    session_key = models.CharField(max_length=40, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    access_token = models.TextField()
    refresh_token = models.TextField(blank=True)
    # When the access token expires (epoch s; None: the provider did not say).
    expires_at = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    checked_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user} since {self.started_at:%Y-%m-%d %H:%M}"


class SsoIdentity(models.Model):
    """Which account at the provider a console user is (its issuer and ``sub``, the one
    claim the provider never reuses or lets a user change): the user a sign-in names,
    whatever user name the provider says now (dashboard/access/oidc.py)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=400)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"


class Reveal(models.Model):
    """A user's reveal: the masked fields of one queue's bodies (or of one message's)
    shown clear to them until ``until`` (dashboard/access/bodies.py). It ends by itself:
    a reveal past ``until`` is never read as live; rows stay for the audit's sake and go
    with the audit's retention."""

    username = models.CharField(max_length=150)
    connection = models.CharField(max_length=100)
    namespace = models.CharField(max_length=200)
    queue = models.CharField(max_length=160)
    message = models.CharField(max_length=200, blank=True)  # "": the whole queue
    reason = models.TextField()
    at = models.DateTimeField(default=timezone.now)
    until = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-until", "-id"]
        indexes = [models.Index(fields=["username", "connection", "namespace", "queue"])]

    def __str__(self) -> str:
        return f"{self.username} {self.queue} until {self.until:%H:%M:%S}"
