from django.contrib import admin

from dashboard.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = [
        "at",
        "username",
        "action",
        "queue",
        "count",
        "outcome",
        "connection",
        "namespace",
    ]
    list_filter = ["outcome", "action", "connection", "namespace"]
    search_fields = ["username", "queue", "detail"]
    date_hierarchy = "at"

    # The audit log is a record: nobody edits or deletes it from the admin.
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
