from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import views

place_patterns = [
    path("", views.overview, name="rsmq-overview"),
    path("create/", views.queue_create, name="rsmq-queue-create"),
    path("q/<str:qname>/", views.queue_detail, name="rsmq-queue"),
    path("q/<str:qname>/charts/", views.queue_charts, name="rsmq-queue-charts"),
    path("q/<str:qname>/act/", views.queue_action, name="rsmq-queue-action"),
    path("q/<str:qname>/m/<str:msg_id>/", views.message_detail, name="rsmq-message"),
    path("q/<str:qname>/m/<str:msg_id>/act/", views.message_action, name="rsmq-message-action"),
]

urlpatterns = [
    path("", views.home, name="rsmq-home"),
    path("audit/", views.audit_log, name="rsmq-audit"),
    path("preferences/refresh/", views.set_refresh, name="rsmq-set-refresh"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("c/<slug:conn>/<str:ns>/", include(place_patterns)),
]
