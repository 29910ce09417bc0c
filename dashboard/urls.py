from django.contrib import admin
from django.urls import include, path

from dashboard.api import api
from dashboard.probes import health, metrics
from dashboard.views import (
    alerts,
    annotate,
    audit,
    failing,
    incidents,
    jobs,
    message,
    overview,
    owners,
    preferences,
    queue,
    queue_actions,
    redis_page,
    reveal,
    saved_filters,
    sign_in,
    tokens,
    triage,
)
from dashboard.views import transfer as transfer_views
from dashboard.views.common import favicon

place_patterns = [
    path("", overview.overview, name="rsmq-overview"),
    path("create/", overview.queue_create, name="rsmq-queue-create"),
    path("q/<str:qname>/", queue.queue_detail, name="rsmq-queue"),
    path("q/<str:qname>/charts/", queue.queue_charts, name="rsmq-queue-charts"),
    path("q/<str:qname>/act/", queue_actions.queue_action, name="rsmq-queue-action"),
    path("q/<str:qname>/failing/", failing.failing, name="rsmq-queue-failing"),
    path("q/<str:qname>/m/<str:msg_id>/", message.message_detail, name="rsmq-message"),
    path("q/<str:qname>/m/<str:msg_id>/act/", message.message_action, name="rsmq-message-action"),
    path("q/<str:qname>/filters/", saved_filters.save_filter, name="rsmq-filter-save"),
    path(
        "q/<str:qname>/filters/<int:pk>/delete/",
        saved_filters.delete_filter,
        name="rsmq-filter-delete",
    ),  # fmt: skip
    path("q/<str:qname>/failing/act/", failing.failing_action, name="rsmq-failing-action"),
    path("q/<str:qname>/triage/", triage.queue_triage, name="rsmq-queue-triage"),
    path("q/<str:qname>/annotate/", annotate.queue_annotate, name="rsmq-queue-annotate"),
    path("q/<str:qname>/jobs/", jobs.job_start, name="rsmq-job-start"),
    path("q/<str:qname>/jobs/<int:pk>/", jobs.job_page, name="rsmq-job"),
    path("q/<str:qname>/jobs/<int:pk>/<str:verb>/", jobs.job_control, name="rsmq-job-control"),
    path("q/<str:qname>/export/", transfer_views.export, name="rsmq-queue-export"),
    path("q/<str:qname>/reveal/", reveal.reveal_bodies, name="rsmq-reveal"),
]

alert_patterns = [
    path("", alerts.alerts_page, name="rsmq-alerts"),
    path("new/", alerts.rule_create, name="rsmq-alert-rule-create"),
    path("<int:pk>/", alerts.rule_edit, name="rsmq-alert-rule"),
    path("<int:pk>/delete/", alerts.rule_delete, name="rsmq-alert-rule-delete"),
    path("silences/", alerts.silence_create, name="rsmq-silence-create"),
    path("silences/<int:pk>/expire/", alerts.silence_expire, name="rsmq-silence-expire"),
    path("ack/<int:pk>/", alerts.alert_ack, name="rsmq-alert-ack"),
    path("ack/link/<str:token>/", alerts.ack_link, name="rsmq-alert-ack-link"),
]

urlpatterns = [
    path("", overview.home, name="rsmq-home"),
    path("audit/", audit.audit_log, name="rsmq-audit"),
    path("audit/export/", audit.audit_export, name="rsmq-audit-export"),
    path("alerts/", include(alert_patterns)),
    path("tokens/", tokens.token_list, name="rsmq-tokens"),
    path("preferences/refresh/", preferences.set_refresh, name="rsmq-set-refresh"),
    path("login/", sign_in.Login.as_view(), name="login"),
    path("login/sso/", sign_in.sso_start, name="login-sso"),
    path("login/sso/callback/", sign_in.sso_callback, name="login-sso-callback"),
    path("logout/", sign_in.Logout.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("c/<slug:conn>/<str:ns>/", include(place_patterns)),
    path("redis/<slug:conn>/", redis_page.redis_page, name="rsmq-redis"),
    path("incidents/", incidents.incidents, name="rsmq-incidents"),
    path("incidents/annotate/", annotate.annotate, name="rsmq-annotate"),
    path("owners/", owners.owners_page, name="rsmq-owners"),
    path("owners/<int:pk>/", owners.owner_edit, name="rsmq-owner"),
    path("owners/<int:pk>/delete/", owners.owner_delete, name="rsmq-owner-delete"),
    path("metrics", metrics.metrics, name="rsmq-metrics"),
    path("healthz", health.healthz, name="rsmq-healthz"),
    path("favicon.ico", favicon, name="rsmq-favicon"),
    path("readyz", health.readyz, name="rsmq-readyz"),
    # The HTTP API (dashboard/api/): /api/… reads the first connection's first
    # namespace, /api/c/<conn>/<ns>/… the named one.
    path("api/", api.urls),
]
