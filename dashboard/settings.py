"""Settings, read from the environment (see docs/production.md)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import sys
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import dj_database_url
from celery.schedules import crontab

from queues.server import default_redis_url

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("RSMQ_DATA_DIR", BASE_DIR / ".data"))


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


# Under pytest (the test client; a served process never imports it).
TESTING = "pytest" in sys.modules


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG")
# The fallback is for a laptop: served with DEBUG off, dashboard/wsgi.py refuses it, and
# `manage.py check --deploy` flags it (W009). ./run on its embedded Redis makes a key of
# its own in the data dir.
INSECURE_SECRET_KEY = "django-insecure-rsmq-console-dev-only-key"
SECRET_KEY = os.environ.get("SECRET_KEY") or INSECURE_SECRET_KEY
# The names the console answers to; the loopback names always (healthchecks in a container).
ALLOWED_HOSTS = [*env_list("ALLOWED_HOSTS"), "localhost", "127.0.0.1", "[::1]"]
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

# -- Production, behind HTTPS (docs/production.md); all off by default -------------------
# "X-Forwarded-Proto": the proxy in front says the request came over HTTPS.
_proxy_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
if _proxy_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_header.upper().replace("-", "_"), "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT")
# Probes ask over plain HTTP from inside: they get an answer, not a redirect.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE")
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE")
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD")

# -- Content-Security-Policy (django-csp): scripts and styles from this site's own files
# only; no inline script, no eval (htmx is told so in base.html), no inline style.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    # Login throttling: failed logins counted per user name and address (docs/console.md: roles).
    "axes",
    "dashboard",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files, before anything else looks at the request: hashed names cached for a
    # year, served pre-compressed (gzip and brotli, made by collectstatic).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # HTML, JSON and /metrics gzipped (a /metrics scrape shrinks many times over:
    # bench/RESULTS.md, "Figures behind the code").
    "django.middleware.gzip.GZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A user named by a trusted proxy's header (RSMQ_PROXY_USER_HEADER).
    "dashboard.access.proxy.ProxyUserMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "dashboard.web.security.NoUrlList",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Every signed-in session checked again (after htmx's: an htmx request whose session
    # ended is sent to the login page): a provider's groups, a password session once
    # passwords are off.
    "dashboard.access.oidc.Recheck",
    "dashboard.web.middleware.RedisUnavailableMiddleware",
    # The API's query parameters and path parts: NUL or a lone surrogate, a 400 (its bodies:
    # its parser).
    "dashboard.api.bodies.StorableInput",
    # Last: it turns a refused login into the "locked" page.
    "axes.middleware.AxesMiddleware",
]

# -- Logins: throttled by django-axes -------------------------------------------------------
# Passwords (off but for the break-glass users when RSMQ_LOCAL_LOGIN is false), users an
# authenticating proxy names, users of the OpenID Connect provider (docs/sign-in.md).
AUTHENTICATION_BACKENDS = [
    "dashboard.access.throttle.LoginThrottle",
    "dashboard.access.local.LocalPasswords",
    "dashboard.access.proxy.ProxyUsers",
    "dashboard.access.oidc.OidcUsers",
]
# After this many failed logins for one user name from one address, that pair is locked
# out for the cool-off (each refused try is written to the audit log as "throttled").
AXES_FAILURE_LIMIT = int(os.environ.get("RSMQ_LOGIN_FAILURES", "5"))
AXES_COOLOFF_TIME = dt.timedelta(seconds=float(os.environ.get("RSMQ_LOGIN_COOLOFF", "900")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
# The user name as a user name can be (a longer one posted would not fit axes' column).
AXES_USERNAME_CALLABLE = "dashboard.access.throttle.username"
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no banner at every start; lockouts go to the audit log
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
# The client's address as the socket says: an X-Forwarded-For anyone can write would
# give a guesser a fresh count with every made-up address. Unless the socket's peer is a
# proxy of RSMQ_TRUSTED_PROXIES (comma-separated addresses or CIDRs, default none): then
# the right-most address of its X-Forwarded-For that is not a trusted proxy
# (dashboard/access/throttle.py). Throttling and the audit log's addresses are the client's
# behind the proxy; from anyone else the header is ignored.
AXES_CLIENT_IP_CALLABLE = "dashboard.access.throttle.client_ip"

ROOT_URLCONF = "dashboard.urls"
WSGI_APPLICATION = "dashboard.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.views.context.console",
                "dashboard.probes.health.snapshot_banner",
                "dashboard.probes.redis_health.redis_banner",
            ],
        },
    }
]

# The one way to choose the database: DATABASE_URL (sqlite:///…, postgres://…); unset,
# SQLite in the data dir. A URL that names no known database is reported by the check at
# start (below, RSMQ_CONFIG_ERRORS), with SQLite meanwhile so that the check can run.
SQLITE_URL = f"sqlite:///{DATA_DIR / 'db.sqlite3'}"
DATABASE_URL_SCHEMES = ("sqlite", "postgres", "postgresql")
_database_url = os.environ.get("DATABASE_URL") or SQLITE_URL
_database_error = ""
if _database_url.split("://", 1)[0] in DATABASE_URL_SCHEMES:
    # Health checks: a kept connection (60 s) that a restarted Postgres closed is
    # replaced before a request uses it, not answered with a 500.
    _database = dj_database_url.parse(_database_url, conn_max_age=60, conn_health_checks=True)
else:  # never the URL itself in the message: it may hold a password
    _database_error = (
        f"DATABASE_URL must start with one of {', '.join(s + '://' for s in DATABASE_URL_SCHEMES)}"
        f" (it starts with {_database_url.split(':', 1)[0][:20]!r})"
    )
    _database = dj_database_url.parse(SQLITE_URL, conn_max_age=60)
DATABASES = {"default": _database}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the Celery worker write to one file: each write waits for the
    # other's (short) transaction instead of failing with "database is locked". WAL with
    # synchronous=NORMAL (SQLite's advice for WAL): a commit is not an fsync, a large part
    # of an API call's audit row (bench/RESULTS.md, "Figures behind the code"); what a
    # power loss can lose is the last commits, never the file's consistency. Postgres for
    # more.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=20,
        transaction_mode="IMMEDIATE",
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    )
    # The test database is a file too, not Django's shared-cache in-memory one: its table
    # locks fail a second connection at once ("database table is locked") where a file in
    # WAL mode waits (`timeout`), and the tests run Celery worker threads beside their own.
    DATABASES["default"]["TEST"] = {
        "NAME": os.path.join(tempfile.gettempdir(), f"rsmq-console-test-{os.getpid()}.sqlite3")
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("RSMQ_STATIC_ROOT", DATA_DIR / "staticfiles"))
# Hashed, compressed names need `collectstatic` first (./run and the image run it); the
# test client renders pages without it, with plain names.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if TESTING
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

# -- RSMQ ------------------------------------------------------------------------
# RSMQ_REDIS_URL unset: `manage.py console` starts the embedded redis-server and sets it;
# other commands find that one (queues.server.default_redis_url).
RSMQ_REDIS_URL = default_redis_url(quiet=TESTING or sys.argv[1:2] == ["console"])
RSMQ_NAMESPACE = os.environ.get("RSMQ_NAMESPACE", "rsmq")
# Seconds a Redis call may take before a page gives up with a 503.
RSMQ_SOCKET_TIMEOUT = float(os.environ.get("RSMQ_SOCKET_TIMEOUT", "3"))
# More connections: RSMQ_CONNECTIONS='[{"name": "prod", "url": "redis://…",
#   "namespaces": ["rsmq"], "environment": "production"}]'
# What is wrong with the environment, reported by the check at start (dashboard/serving/checks.py).
RSMQ_CONFIG_ERRORS: list[str] = [_database_error] if _database_error else []
try:
    _connections = json.loads(os.environ.get("RSMQ_CONNECTIONS", "null"))
except json.JSONDecodeError as e:
    RSMQ_CONFIG_ERRORS.append(f"RSMQ_CONNECTIONS is not JSON: {e}")
    _connections = None
RSMQ_CONNECTIONS = _connections or [
    {
        "name": "default",
        "url": RSMQ_REDIS_URL,
        "namespaces": [n for n in RSMQ_NAMESPACE.split(",") if n],
        "environment": os.environ.get("RSMQ_ENVIRONMENT", ""),
    }
]

# Undo (dashboard/acting/undo.py): how many hours what a destructive action removed is kept
# for its Undo, and the most an action keeps (MB of bodies, estimated before it runs;
# past it the action runs without an Undo and its confirmation says so; 0: no undo), and
# the most all the Undos of one Redis keep together (past it the oldest are given up,
# audited). Checked at start (dashboard/serving/checks.py).
RSMQ_UNDO_HOURS: float | str = os.environ.get("RSMQ_UNDO_HOURS", "24")
RSMQ_UNDO_MAX_MB: float | str = os.environ.get("RSMQ_UNDO_MAX_MB", "256")
RSMQ_UNDO_TOTAL_MB: float | str = os.environ.get("RSMQ_UNDO_TOTAL_MB", "512")
for _name in ("RSMQ_UNDO_HOURS", "RSMQ_UNDO_MAX_MB", "RSMQ_UNDO_TOTAL_MB"):
    try:
        globals()[_name] = float(globals()[_name])
    except ValueError:
        pass  # kept as text: the check at start names it

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"one_line_refusals": {"()": "dashboard.serving.logs.OneLineRefusals"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # Django's own "django" logger has a console handler of its own under DEBUG: without
    # this, every 4xx/5xx line would be printed twice (once more through the root).
    "loggers": {
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.request": {"filters": ["one_line_refusals"]},
    },
}

# Error reports (the DEBUG page, mails to ADMINS) hide every URL's password and token.
DEFAULT_EXCEPTION_REPORTER_FILTER = "dashboard.web.security.ConsoleExceptionReporterFilter"

# Every action off: the console only shows.
RSMQ_READ_ONLY = env_bool("RSMQ_READ_ONLY")
# The message browser: rows per page, body preview bytes; the Redis time one page or
# scan step may spend (ms, in script calls of at most RSMQ_BROWSE_STEP messages each)
# before it says where it stopped and goes on from there.
RSMQ_PAGE_SIZE = int(os.environ.get("RSMQ_PAGE_SIZE", "50"))
RSMQ_PREVIEW_BYTES = int(os.environ.get("RSMQ_PREVIEW_BYTES", "300"))
RSMQ_BROWSE_BUDGET_MS = float(os.environ.get("RSMQ_BROWSE_BUDGET_MS", "40"))
RSMQ_BROWSE_STEP = int(os.environ.get("RSMQ_BROWSE_STEP", "500"))
# Live refresh default in seconds (users choose their own; never below 2; 0 = off).
RSMQ_REFRESH_SECONDS = int(os.environ.get("RSMQ_REFRESH_SECONDS", "5"))
# Masking rules for bodies (docs/bodies.md): JSON, a list of {queues, paths, patterns,
# reveal_role}; unset: the defaults (card numbers and e-mail addresses in every queue),
# "[]": none. Checked at start (dashboard/serving/checks.py) with the field named.
RSMQ_MASKING: str | None = os.environ.get("RSMQ_MASKING")
# How long a reveal shows masked fields clear (minutes).
RSMQ_REVEAL_MINUTES: float | str = os.environ.get("RSMQ_REVEAL_MINUTES", "15")

# -- Celery: snapshots, retention ----------------------------------------------------------


def broker_url(rsmq_url: str) -> str:
    """The queues' Redis server with a database of its own (1, or 2 when the queues are
    in 1), so the broker's keys never mix with the queues'."""
    parts = urlsplit(rsmq_url)
    if parts.scheme == "unix":  # unix:///path/redis.sock?db=0
        query = dict(parse_qsl(parts.query))
        db = 2 if query.get("db", "0") == "1" else 1
        return f"unix://{parts.path}?{urlencode({**query, 'db': db})}"
    db = 2 if parts.path.strip("/") == "1" else 1
    return urlunsplit(parts._replace(path=f"/{db}"))


# Seconds between two snapshots of every queue's counters.
RSMQ_SNAPSHOT_INTERVAL = float(os.environ.get("RSMQ_SNAPSHOT_INTERVAL", "10"))
# Annotations (POST /api/annotations/) kept per connection and namespace, dated within the
# last 366 days: one more is refused (409). Every chart reads those of its range.
RSMQ_ANNOTATIONS_MAX = int(os.environ.get("RSMQ_ANNOTATIONS_MAX", "2000"))
# Days of audit rows kept (dashboard/audit/retention.py, hourly by beat); 0: every row.
RSMQ_AUDIT_RETENTION = float(os.environ.get("RSMQ_AUDIT_RETENTION", "90"))
# Days of snapshots kept, in the database and in the lake (whole days there).
RSMQ_SNAPSHOT_RETENTION = float(os.environ.get("RSMQ_SNAPSHOT_RETENTION", "7"))
# The snapshot lake: Parquet files, partitioned by date, that the pipeline reads.
RSMQ_LAKE_DIR = Path(os.environ.get("RSMQ_LAKE_DIR", DATA_DIR / "lake"))
# Bearer token for /metrics and the JSON API (`Authorization: Bearer …`); without it
# they answer logged-in users only, like the pages.
RSMQ_METRICS_TOKEN = os.environ.get("RSMQ_METRICS_TOKEN", "")

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or broker_url(RSMQ_REDIS_URL)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_TASK_IGNORE_RESULT = True  # the tasks write their results themselves: no backend
CELERY_TIMEZONE = TIME_ZONE
# Alerts (dashboard/alerting/): the hour (UTC) of the daily digest of low-severity alerts;
# where the console is (https://console.example.com), for the acknowledge links in
# notifications (unset: they are paths on the console).
RSMQ_ALERT_DIGEST_HOUR = int(os.environ.get("RSMQ_ALERT_DIGEST_HOUR", "8"))
RSMQ_CONSOLE_URL = os.environ.get("RSMQ_CONSOLE_URL", "")
# A queue's alert that fires within this many seconds of another of the queue being told
# to the same receiver waits, and is told with the rest once they are over (one incident,
# one notification); 0: each is told at once.
RSMQ_ALERT_GROUP_SECONDS = float(os.environ.get("RSMQ_ALERT_GROUP_SECONDS", "300"))
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
# Beat as a thread of the worker (./run: one worker, so one beat); deployments with several
# workers run exactly one `celery --app dashboard.beat beat` instead (docs/production.md).
RSMQ_WORKER_BEAT = env_bool("RSMQ_WORKER_BEAT")
CELERY_BEAT_SCHEDULE = {
    "snapshot": {
        "task": "dashboard.tasks.snapshot",
        "schedule": RSMQ_SNAPSHOT_INTERVAL,
        # One still waiting when the next is due is dropped, so a worker that was down
        # does not catch up with a burst of snapshots a few ms apart.
        "options": {"expires": RSMQ_SNAPSHOT_INTERVAL},
    },
    "prune-snapshots": {
        "task": "dashboard.tasks.prune_snapshots",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    },
    "prune-audit": {
        "task": "dashboard.tasks.prune_audit",
        "schedule": 3600.0,
        "options": {"expires": 3600.0},
    },
    # The daily digest of low-severity alerts (dashboard/alerting/digest.py).
    "alert-digest": {
        "task": "dashboard.tasks.alert_digest",
        "schedule": crontab(minute=0, hour=RSMQ_ALERT_DIGEST_HOUR),
        "options": {"expires": 3600.0},
    },
    # A job's step lost with its task (a worker restarted), queued again (acting/jobs.py).
    "sweep-jobs": {
        "task": "dashboard.tasks.sweep_jobs",
        "schedule": 30.0,
        "options": {"expires": 30.0},
    },
}

# -- Jobs on every match (dashboard/acting/jobs.py): live ones (counting, counted, running,
# paused) at most this many in all, by one user (or API token), and on one queue; one more
# is refused (409, naming the cap). Each job is a chain of short Celery steps on the same
# worker as the snapshots, never holding it.
RSMQ_JOBS_MAX = int(os.environ.get("RSMQ_JOBS_MAX", "50"))
RSMQ_JOBS_PER_USER = int(os.environ.get("RSMQ_JOBS_PER_USER", "10"))
RSMQ_JOBS_PER_QUEUE = int(os.environ.get("RSMQ_JOBS_PER_QUEUE", "5"))

# -- The Spark pipeline: rollups, anomaly flags, census ------------------------------------

# Where its Parquet output and state go (rollups/, flags/, census/, _state.json).
RSMQ_PIPELINE_DIR = Path(os.environ.get("RSMQ_PIPELINE_DIR", DATA_DIR / "pipeline"))
# local[*] on this machine, or a cluster: spark://host:7077, yarn, k8s://…
RSMQ_SPARK_MASTER = os.environ.get("RSMQ_SPARK_MASTER", "local[*]")
# Seconds between two rollups runs started by beat (each its own process); 0: never.
RSMQ_PIPELINE_INTERVAL = float(os.environ.get("RSMQ_PIPELINE_INTERVAL", "3600"))
# Days of hourly rollups kept in the database (the Parquet output keeps everything).
RSMQ_ROLLUP_RETENTION = float(os.environ.get("RSMQ_ROLLUP_RETENTION", "30"))
# Anomaly flags: the oldest visible message's age SLO in seconds, and per queue
# ('{"emails": 60, "prod/rsmq/reports": 3600}': a queue name, or connection/namespace/queue);
# minutes in a row for "backlog growing" and "consumers stalled".
RSMQ_OLDEST_AGE_SLO = float(os.environ.get("RSMQ_OLDEST_AGE_SLO", "300"))
RSMQ_OLDEST_AGE_SLOS = json.loads(os.environ.get("RSMQ_OLDEST_AGE_SLOS", "{}"))
RSMQ_FLAG_INTERVALS = int(os.environ.get("RSMQ_FLAG_INTERVALS", "5"))
# The overview's "needs attention" order (dashboard/triage/thresholds.py): a key of
# RSMQ_OLDEST_AGE_SLOS may also be a pattern ("emails-*"), which only the console reads;
# a backlog is "growing" when it rose by this fraction of itself, and at least this many
# messages, over this many seconds.
RSMQ_BACKLOG_GROWTH = float(os.environ.get("RSMQ_BACKLOG_GROWTH", "0.1"))
RSMQ_BACKLOG_GROWTH_MIN = int(os.environ.get("RSMQ_BACKLOG_GROWTH_MIN", "100"))
RSMQ_BACKLOG_WINDOW = float(os.environ.get("RSMQ_BACKLOG_WINDOW", "600"))
# ... or rose by at least this many messages a second over the window (a big backlog:
# +12,000 on 195,000 in 10 min is 6%, and 20/s).
RSMQ_BACKLOG_GROWTH_RATE = float(os.environ.get("RSMQ_BACKLOG_GROWTH_RATE", "5"))
# Consumers (dashboard/triage/conditions.py, at each snapshot): "no consumers" once visible
# messages waited this many seconds with no receive; "crash-looping" once at least this
# many receives in the window were not followed by deletes and messages came back.
RSMQ_NO_CONSUMER_AFTER = float(os.environ.get("RSMQ_NO_CONSUMER_AFTER", "300"))
RSMQ_CRASH_LOOP_RECEIVES = int(os.environ.get("RSMQ_CRASH_LOOP_RECEIVES", "3"))
# The census's poison candidates: messages received at least this many times.
RSMQ_POISON_RC = int(os.environ.get("RSMQ_POISON_RC", "5"))

if RSMQ_PIPELINE_INTERVAL > 0:
    CELERY_BEAT_SCHEDULE["pipeline-rollups"] = {
        "task": "dashboard.tasks.pipeline_rollups",
        "schedule": RSMQ_PIPELINE_INTERVAL,
        "options": {"expires": RSMQ_PIPELINE_INTERVAL},
    }

# Redis at risk (dashboard/probes/redis_health.py, queues/health.py): the banner on every page,
# the Redis page, the rsmq_redis_* gauges and alert metrics. Without an AOF, a last RDB
# save older than this many seconds (with changes unsaved) is a risk; so is memory used
# over this share of maxmemory. A reading is cached this many seconds per connection.
RSMQ_REDIS_SAVE_AGE = float(os.environ.get("RSMQ_REDIS_SAVE_AGE", "3600"))
RSMQ_REDIS_MEMORY_SHARE = float(os.environ.get("RSMQ_REDIS_MEMORY_SHARE", "0.8"))
RSMQ_REDIS_HEALTH_CACHE = float(os.environ.get("RSMQ_REDIS_HEALTH_CACHE", "5"))
# Outbound requests (alert webhooks and Slack URLs, dashboard/alerting/outbound.py): host
# names and ranges (CIDR, or one address) the console may reach although they are
# loopback, private, link-local, multicast, reserved or unspecified, comma-separated:
# "hooks.internal,10.20.0.0/16". Everything else of that kind is refused.
RSMQ_OUTBOUND_ALLOW = env_list("RSMQ_OUTBOUND_ALLOW")
# Failures of a transient kind (down, timed out, 5xx, 429) before a notification is given up.
RSMQ_ALERT_MAX_ATTEMPTS = int(os.environ.get("RSMQ_ALERT_MAX_ATTEMPTS", "12"))

# -- The API's audit records (dashboard/audit/drain.py): written to Redis with each data-plane
# call, moved into the database by a web process at most this often (s), and by beat.
RSMQ_AUDIT_DRAIN_EVERY = float(os.environ.get("RSMQ_AUDIT_DRAIN_EVERY", "1"))
CELERY_BEAT_SCHEDULE["audit-drain"] = {
    "task": "dashboard.tasks.drain_audit",
    "schedule": 5.0,
    "options": {"expires": 5.0},
}

# -- Slow clients (dashboard/serving/app.py) ------------------------------------------------
# Seconds a client may take to send its request's headers (granian closes the connection
# after them), and then its body (answered 408, closed): a slow client holds no thread.
RSMQ_HEADER_TIMEOUT = float(os.environ.get("RSMQ_HEADER_TIMEOUT", "10"))
RSMQ_BODY_TIMEOUT = float(os.environ.get("RSMQ_BODY_TIMEOUT", "30"))
# Threads per web server process that run Django (./run --threads; dashboard/serving/app.py).
RSMQ_WEB_THREADS = int(os.environ.get("RSMQ_WEB_THREADS", "2"))
# Exports (dashboard/acting/exports.py): at most this many streamed at once per web
# process (they hold no thread: a piece is made when the client took the last), and the
# seconds a client may take to take a piece before its export is dropped, its slot freed.
RSMQ_EXPORTS = int(os.environ.get("RSMQ_EXPORTS", "10"))
RSMQ_EXPORT_IDLE = float(os.environ.get("RSMQ_EXPORT_IDLE", "30"))

# -- Trusted proxies (dashboard/access/throttle.py client_ip) -------------------------------
RSMQ_TRUSTED_PROXIES: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
for _proxy in env_list("RSMQ_TRUSTED_PROXIES"):
    try:
        RSMQ_TRUSTED_PROXIES.append(ipaddress.ip_network(_proxy, strict=False))
    except ValueError:
        RSMQ_CONFIG_ERRORS.append(
            f"RSMQ_TRUSTED_PROXIES: {_proxy!r} is not an IP address or a CIDR (10.0.0.0/8)"
        )

# -- Signing in (docs/sign-in.md) -------------------------------------------------------------
# Passwords: off (false) leaves the login page with the single sign-on button alone, and
# lets only RSMQ_BREAK_GLASS_USERS (comma-separated user names) log in with a password
# (at /login/?break-glass); a password session of anyone else ends at its next request.
RSMQ_LOCAL_LOGIN = env_bool("RSMQ_LOCAL_LOGIN", True)
RSMQ_BREAK_GLASS_USERS = env_list("RSMQ_BREAK_GLASS_USERS")
# OpenID Connect (authorization code flow with PKCE): the provider's issuer URL (its
# discovery document is <issuer>/.well-known/openid-configuration), the console's client
# id and secret there (no secret: a public client), the scopes asked for, the claims that
# carry the user name and the groups, what the button says.
RSMQ_OIDC_ISSUER = os.environ.get("RSMQ_OIDC_ISSUER", "").strip().rstrip("/")
RSMQ_OIDC_CLIENT_ID = os.environ.get("RSMQ_OIDC_CLIENT_ID", "").strip()
RSMQ_OIDC_CLIENT_SECRET = os.environ.get("RSMQ_OIDC_CLIENT_SECRET", "")
RSMQ_OIDC_SCOPES = os.environ.get("RSMQ_OIDC_SCOPES", "openid email profile").split()
RSMQ_OIDC_USERNAME_CLAIM = os.environ.get("RSMQ_OIDC_USERNAME_CLAIM", "preferred_username")
RSMQ_OIDC_GROUPS_CLAIM = os.environ.get("RSMQ_OIDC_GROUPS_CLAIM", "groups")
RSMQ_OIDC_BUTTON = os.environ.get("RSMQ_OIDC_BUTTON", "Sign in with single sign-on")
# Seconds between two checks of a signed-in user's groups with the provider (a refresh
# token's grant; userinfo without one): a group taken away takes its roles with it by
# then, and a session the provider ended is logged out. Seconds one call may take.
RSMQ_OIDC_RECHECK_SECONDS: float | str = os.environ.get("RSMQ_OIDC_RECHECK_SECONDS", "300")
RSMQ_OIDC_TIMEOUT: float | str = os.environ.get("RSMQ_OIDC_TIMEOUT", "5")
for _name in ("RSMQ_OIDC_RECHECK_SECONDS", "RSMQ_OIDC_TIMEOUT"):
    try:
        globals()[_name] = float(globals()[_name])
    except ValueError:
        pass  # kept as text: the check at start names it
# An authenticating proxy (oauth2-proxy, Pomerium, Authelia, a mod_auth_*): the header
# that names the user, and the one that lists their groups (comma-separated), believed
# only from RSMQ_TRUSTED_PROXIES (from anyone else they are ignored).
RSMQ_PROXY_USER_HEADER = os.environ.get("RSMQ_PROXY_USER_HEADER", "").strip()
RSMQ_PROXY_GROUPS_HEADER = os.environ.get("RSMQ_PROXY_GROUPS_HEADER", "").strip()
# The provider's (or the proxy's) groups → the console's Django groups:
# '{"rsmq-admins": ["admin"], "billing-team": ["billing"]}'. A Django group named here is
# the provider's to give: a user holds it exactly while a group of theirs maps to it.
try:
    RSMQ_SSO_GROUPS: object = json.loads(os.environ.get("RSMQ_SSO_GROUPS", "{}"))
except json.JSONDecodeError as e:
    RSMQ_CONFIG_ERRORS.append(f"RSMQ_SSO_GROUPS is not JSON: {e}")
    RSMQ_SSO_GROUPS = {}
