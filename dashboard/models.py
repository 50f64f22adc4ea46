"""The dashboard's own tables: the audit trail of admin actions, and one
unmanaged model that only carries the dashboard's two permissions."""

from __future__ import annotations

import datetime as dt

from django.db import models
from django.utils import timezone


class QueuesAccess(models.Model):
    """``view_queues`` lets a staff user see queues; ``act_on_queues`` lets them act."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("view_queues", "Can view queues and jobs"),
            ("act_on_queues", "Can retry, promote, fail, remove and clean jobs"),
        ]


class AuditEntry(models.Model):
    """One admin action as ``dashboard.actions`` ran it (retry, promote, fail,
    remove, retry all, promote all, clean, pause, resume), whatever it moved:
    the audit trail, and the markers on the queue page's chart."""

    at = models.DateTimeField(default=timezone.now)
    user = models.CharField(max_length=150)
    action = models.CharField(max_length=32)
    queue = models.TextField()  # "<prefix>:<name>" (QueueRef.qualified)
    jobs = models.TextField()  # the ids acted on (the first 20) or "state=failed"
    count = models.IntegerField(default=0)  # jobs moved
    result = models.TextField()  # the message the user was shown

    class Meta:
        default_permissions = ()
        # The chart asks for one queue's last hour; the trail is read newest first.
        indexes = [models.Index(fields=["queue", "at"], name="audit_queue_at")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.user} {self.action} {self.queue}"

    @classmethod
    def on_queue_since(cls, queue: str, since: dt.datetime, limit: int) -> list[AuditEntry]:
        """A queue's entries from ``since`` on, oldest first; the newest ``limit`` of them."""
        newest = cls.objects.filter(queue=queue, at__gte=since).order_by("-at")[:limit]
        return list(reversed(newest))
