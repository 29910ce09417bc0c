from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "RSMQ Console"

    def ready(self) -> None:
        from axes.signals import user_locked_out
        from django.contrib.auth.signals import user_login_failed

        from dashboard.access import sign_ins
        from dashboard.audit.log import record_lockout
        from dashboard.serving import checks  # noqa: F401 (registers the configuration check)

        user_locked_out.connect(record_lockout, dispatch_uid="rsmq-audit-lockout")
        user_login_failed.connect(sign_ins.login_failed, dispatch_uid="rsmq-audit-login-failed")
