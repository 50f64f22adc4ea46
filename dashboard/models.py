"""No tables: one unmanaged model only carries the dashboard's two permissions."""

from __future__ import annotations

from django.db import models


class QueuesAccess(models.Model):
    """``view_queues`` lets a staff user see queues; ``act_on_queues`` lets them act."""

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [
            ("view_queues", "Can view queues and jobs"),
            ("act_on_queues", "Can retry, promote, fail, remove and clean jobs"),
        ]
