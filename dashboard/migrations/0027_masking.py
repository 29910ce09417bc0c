"""The observer role (queues and counts, never a body) as a group below viewer, every
group above it holding its permission too; reveals of masked bodies (docs/bodies.md)."""

import django.utils.timezone
from django.contrib.auth.management import create_permissions
from django.db import migrations, models

GROUPS = ("observer", "viewer", "operator", "admin")


def add_observer(apps, schema_editor):
    # Permissions are normally created after all migrations; make sure this one exists now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    observe = Permission.objects.get(
        content_type__app_label="dashboard", codename="observe_console"
    )
    for name in GROUPS:
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(observe)


def remove_observer(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="observer").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0026_sso_sessions"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="auditentry",
            options={
                "ordering": ["-at", "-id"],
                "permissions": [
                    (
                        "observe_console",
                        "Can see queues, counts and charts, never a body (observer)",
                    ),
                    ("view_console", "Can see queues and messages (viewer)"),
                    ("operate_messages", "Can send, requeue, delete and move messages (operator)"),
                    ("administer_queues", "Can create, edit, purge and delete queues (admin)"),
                ],
                "verbose_name_plural": "audit entries",
            },
        ),
        migrations.AlterField(
            model_name="apitoken",
            name="role",
            field=models.CharField(
                choices=[
                    ("observer", "observer"),
                    ("viewer", "viewer"),
                    ("operator", "operator"),
                    ("admin", "admin"),
                ],
                max_length=10,
            ),
        ),
        migrations.CreateModel(
            name="Reveal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("username", models.CharField(max_length=150)),
                ("connection", models.CharField(max_length=100)),
                ("namespace", models.CharField(max_length=200)),
                ("queue", models.CharField(max_length=160)),
                ("message", models.CharField(blank=True, max_length=200)),
                ("reason", models.TextField()),
                ("at", models.DateTimeField(default=django.utils.timezone.now)),
                ("until", models.DateTimeField(db_index=True)),
            ],
            options={
                "ordering": ["-until", "-id"],
                "indexes": [
                    models.Index(
                        fields=["username", "connection", "namespace", "queue"],
                        name="dashboard_r_usernam_23f7db_idx",
                    )
                ],
            },
        ),
        migrations.RunPython(add_observer, remove_observer),
    ]
