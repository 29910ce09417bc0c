"""Grants (a role at the queues of a place matching a glob) and API tokens' scopes and
expiry; the four role groups, and anyone holding a role's permission, become grants on *."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

#: the role groups of 0002 and 0027 and what each permission meant: now grants at every queue
ROLES = {"observer": "observe_console", "viewer": "view_console",
         "operator": "operate_messages", "admin": "administer_queues"}  # fmt: skip
ORDER = ["administer_queues", "operate_messages", "view_console", "observe_console"]


def grants_from_roles(apps, schema_editor):
    """Every group and user that held a role through its permissions holds it now as a
    grant on every connection, namespace and queue: an install behaves as before."""
    Group = apps.get_model("auth", "Group")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    Grant = apps.get_model("dashboard", "Grant")
    role_of = {codename: role for role, codename in ROLES.items()}
    holders = [
        ("group", Group.objects.all(), "permissions"),
        ("user", User.objects.filter(user_permissions__content_type__app_label="dashboard")
         .distinct(), "user_permissions"),
    ]  # fmt: skip
    for kind, rows, field in holders:
        for holder in rows:
            held = set(
                getattr(holder, field)
                .filter(content_type__app_label="dashboard")
                .values_list("codename", flat=True)
            )
            highest = next((c for c in ORDER if c in held), None)
            if highest:
                Grant.objects.get_or_create(**{kind: holder}, role=role_of[highest],
                                            connection="*", namespace="*", queues="*")  # fmt: skip


def no_grants(apps, schema_editor):
    apps.get_model("dashboard", "Grant").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("dashboard", "0027_masking"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="connection",
            field=models.CharField(default="*", max_length=100),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="namespace",
            field=models.CharField(default="*", max_length=200),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="queues",
            field=models.CharField(default="*", max_length=500),
        ),
        migrations.CreateModel(
            name="Grant",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[
                            ("observer", "observer"),
                            ("viewer", "viewer"),
                            ("operator", "operator"),
                            ("admin", "admin"),
                        ],
                        max_length=10,
                    ),
                ),
                (
                    "connection",
                    models.CharField(
                        default="*", help_text="A glob: * is every one.", max_length=100
                    ),
                ),
                (
                    "namespace",
                    models.CharField(
                        default="*", help_text="A glob: * is every one.", max_length=200
                    ),
                ),
                (
                    "queues",
                    models.CharField(
                        default="*",
                        help_text="A glob of queue names, e.g. billing-*.",
                        max_length=160,
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "group",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="rsmq_grants",
                        to="auth.group",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="rsmq_grants",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["connection", "namespace", "queues", "id"],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("user__isnull", True), ("group__isnull", True), _connector="XOR"
                        ),
                        name="grant_user_or_group",
                    )
                ],
            },
        ),
        migrations.RunPython(grants_from_roles, no_grants),
    ]
