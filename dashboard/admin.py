from django.contrib import admin

from dashboard.models import AuditEntry, SsoIdentity


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


@admin.register(SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    """Which provider account each console user is: delete a row to let another account
    (a new provider, a name reused there) sign in as that user (docs/sign-in.md)."""

    list_display = ["user", "subject", "issuer", "created_at"]
    search_fields = ["user__username", "subject"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
