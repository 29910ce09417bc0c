from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest

from dashboard.access import grants
from dashboard.models import AuditEntry, Grant, SsoIdentity


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


class GrantForm(forms.ModelForm):
    class Meta:
        model = Grant
        fields = ["user", "group", "role", "connection", "namespace", "queues"]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("user")) == bool(data.get("group")):
            raise ValidationError({"user": "user or group: give exactly one of the two"})
        grants.check_role(data.get("role", ""))
        grants.check_scope(data.get("connection", ""), data.get("namespace", ""),
                           data.get("queues", ""))  # fmt: skip
        return data


@admin.register(Grant)
class GrantAdmin(admin.ModelAdmin):
    """Who holds which role where (dashboard/access/grants.py); every change audited."""

    form = GrantForm
    list_display = ["__str__", "role", "connection", "namespace", "queues", "created_at"]
    list_filter = ["role", "connection", "namespace"]
    search_fields = ["user__username", "group__name", "queues"]

    def save_model(self, request: HttpRequest, obj: Grant, form: Any, change: bool) -> None:
        before = grants.described(Grant.objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)
        action = "grant_change" if change else "grant_create"
        grants.audit_change(request, action, before, grants.described(obj))

    def delete_model(self, request: HttpRequest, obj: Grant) -> None:
        before = grants.described(obj)
        super().delete_model(request, obj)
        grants.audit_change(request, "grant_delete", before, None)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Grant]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)
