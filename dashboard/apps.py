from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "RSMQ Console"

    def ready(self) -> None:
        from axes.signals import user_locked_out

        from dashboard.audit.log import record_lockout
        from dashboard.serving import checks  # noqa: F401 (registers the configuration check)

        user_locked_out.connect(record_lockout, dispatch_uid="rsmq-audit-lockout")
