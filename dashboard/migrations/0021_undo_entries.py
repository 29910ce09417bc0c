import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0020_bulk_jobs"),
    ]

    operations = [
        migrations.CreateModel(
            name="UndoEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("token", models.CharField(max_length=32, unique=True)),
                ("connection", models.CharField(max_length=100)),
                ("namespace", models.CharField(max_length=200)),
                ("queue", models.CharField(max_length=160)),
                ("action", models.CharField(max_length=40)),
                ("count", models.IntegerField(default=0)),
                ("bytes", models.BigIntegerField(default=0)),
                ("at", models.DateTimeField(default=django.utils.timezone.now)),
                ("expires", models.DateTimeField(db_index=True)),
                ("undone_at", models.DateTimeField(blank=True, null=True)),
                ("undone_by", models.CharField(blank=True, max_length=150)),
                ("result", models.JSONField(blank=True, default=dict)),
                (
                    "audit",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="undo",
                        to="dashboard.auditentry",
                    ),
                ),
            ],
            options={"ordering": ["-at", "-id"]},
        ),
    ]
