from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []

    operations = [
        migrations.CreateModel(
            name="QueuesAccess",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False)),
            ],
            options={
                "managed": False,
                "default_permissions": (),
                "permissions": [
                    ("view_queues", "Can view queues and jobs"),
                    ("act_on_queues", "Can retry, promote, fail, remove and clean jobs"),
                ],
            },
        ),
    ]
