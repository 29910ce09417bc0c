from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "RSMQ Console"

    def ready(self) -> None:
        from . import checks  # noqa: F401 (registers the configuration check)
