"""The dashboard's own tables: the audit trail of admin actions, and one
unmanaged model that only carries the dashboard's permissions."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.db import models
from django.utils import timezone


class QueuesAccess(models.Model):
    """``view_queues`` lets a staff user see queues; ``act_on_queues`` lets them
    act (retry, promote, fail, remove, clean, pause); ``change_jobs`` lets them
    change what a job is (edit its data, duplicate it, add a job): more than
    acting, since the next run does something nobody wrote, so granted apart."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("view_queues", "Can view queues and jobs"),
            ("act_on_queues", "Can retry, promote, fail, remove and clean jobs"),
            ("change_jobs", "Can edit a job's data, duplicate jobs and add jobs"),
        ]


class AuditEntry(models.Model):
    """One admin action as ``dashboard.acting.actions`` ran it (retry, promote, fail,
    remove, retry all, promote all, clean, pause, resume) or
    ``dashboard.acting.job_edits`` (edit data, duplicate, add), whatever it moved:
    the audit trail, and the markers on the queue page's chart."""

    at = models.DateTimeField(default=timezone.now)
    user = models.CharField(max_length=150)
    action = models.CharField(max_length=32)
    queue = models.TextField()  # "<prefix>:<name>" (QueueRef.qualified)
    # The Redis connection acted on (dashboard.core.connections): "default" for the
    # rows from before there were several.
    connection = models.CharField(max_length=40, default="default")
    jobs = models.TextField()  # the ids acted on (the first 20) or "state=failed"
    count = models.IntegerField(default=0)  # jobs moved
    result = models.TextField()  # the message the user was shown
    # What an edit, duplicate or add changed: a unified diff of the job's
    # name, data and options before and after ("" for the moves).
    diff = models.TextField(blank=True, default="")
    # The one job a change edited or made (its page lists its changes), else "".
    job = models.CharField(max_length=512, blank=True, default="")

    class Meta:
        default_permissions = ()
        # The chart asks for one queue's last hour; the trail is read newest first.
        indexes = [
            models.Index(fields=["queue", "at"], name="audit_queue_at"),
            # A job page reads its job's changes, newest first: O(changes shown).
            models.Index(fields=["queue", "job", "at"], name="audit_queue_job_at"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.at:%Y-%m-%d %H:%M:%S} {self.user} {self.action} {self.connection} {self.queue}"
        )

    @classmethod
    def on_queue_since(
        cls, queue: str, since: dt.datetime, limit: int, connection: str = "default"
    ) -> list[AuditEntry]:
        """A queue's entries from ``since`` on, oldest first; the newest ``limit`` of them."""
        entries = cls.objects.filter(queue=queue, connection=connection, at__gte=since)
        newest = entries.order_by("-at")[:limit]
        return list(reversed(newest))

    @classmethod
    def changes_of_job(
        cls,
        queue: str,
        job_id: str,
        actions: Sequence[str],
        limit: int,
        connection: str = "default",
        since: dt.datetime | None = None,
    ) -> list[AuditEntry]:
        """The newest ``limit`` entries of ``actions`` that changed one job
        (refusals left out), newest first; with ``since``, only those made from
        then on (a job id used again belongs to another job before)."""
        entries = cls.objects.filter(
            queue=queue, connection=connection, job=job_id, action__in=actions, count__gt=0
        )
        if since is not None:
            entries = entries.filter(at__gte=since)
        return list(entries.order_by("-at")[:limit])
