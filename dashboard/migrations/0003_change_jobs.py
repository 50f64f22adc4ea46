"""The ``change_jobs`` permission (edit, duplicate, add jobs), and the audit
trail's before/after diff of those changes with the job each one touched."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0002_audit_entry"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="queuesaccess",
            options={
                "managed": False,
                "default_permissions": (),
                "permissions": [
                    ("view_queues", "Can view queues and jobs"),
                    ("act_on_queues", "Can retry, promote, fail, remove and clean jobs"),
                    ("change_jobs", "Can edit a job's data, duplicate jobs and add jobs"),
                ],
            },
        ),
        migrations.AddField(
            model_name="auditentry",
            name="diff",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="job",
            field=models.CharField(blank=True, default="", max_length=512),
        ),
        migrations.AddIndex(
            model_name="auditentry",
            index=models.Index(fields=["queue", "job", "at"], name="audit_queue_job_at"),
        ),
    ]
