from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import api, health, metrics
from .views import audit, failing, message, overview, preferences, queue, queue_actions

place_patterns = [
    path("", overview.overview, name="rsmq-overview"),
    path("create/", overview.queue_create, name="rsmq-queue-create"),
    path("q/<str:qname>/", queue.queue_detail, name="rsmq-queue"),
    path("q/<str:qname>/charts/", queue.queue_charts, name="rsmq-queue-charts"),
    path("q/<str:qname>/act/", queue_actions.queue_action, name="rsmq-queue-action"),
    path("q/<str:qname>/failing/", failing.failing, name="rsmq-queue-failing"),
    path("q/<str:qname>/m/<str:msg_id>/", message.message_detail, name="rsmq-message"),
    path("q/<str:qname>/m/<str:msg_id>/act/", message.message_action, name="rsmq-message-action"),
]

api_patterns = [
    path("queues/", api.queue_list, name="rsmq-api-queues"),
    path("queues/<str:qname>/", api.queue_detail, name="rsmq-api-queue"),
    path("queues/<str:qname>/failures/", failing.failing_api, name="rsmq-api-failures"),
]

urlpatterns = [
    path("", overview.home, name="rsmq-home"),
    path("audit/", audit.audit_log, name="rsmq-audit"),
    path("preferences/refresh/", preferences.set_refresh, name="rsmq-set-refresh"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("c/<slug:conn>/<str:ns>/", include(place_patterns)),
    path("metrics", metrics.metrics, name="rsmq-metrics"),
    path("healthz", health.healthz, name="rsmq-healthz"),
    path("readyz", health.readyz, name="rsmq-readyz"),
    # The short form reads the first connection's first namespace.
    path("api/", include(api_patterns)),
    path("api/c/<slug:conn>/<str:ns>/", include(api_patterns)),
]
