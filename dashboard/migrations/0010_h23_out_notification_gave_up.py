from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0009_api_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="notification",
            name="gave_up",
            field=models.DateTimeField(blank=True, db_index=True, null=True),
        ),
    ]
