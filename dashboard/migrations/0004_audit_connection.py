"""The Redis connection an audited action acted on (dashboard.connections)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0003_change_jobs"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="connection",
            field=models.CharField(default="default", max_length=40),
        ),
    ]
