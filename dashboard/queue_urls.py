"""A queue's URLs name its Redis connection: the one place that says how.

Every queue view has two URL patterns of one name (dashboard.urls): the
default connection's ``queues/<prefix>/<name>/...`` and another's
``c/<connection>/queues/<prefix>/<name>/...``. ``reverse`` picks one by the
number of arguments, so build a queue's URLs with ``queue_args`` (or
``queue_url``), never with ``[ref.prefix, ref.name]``.
"""

from __future__ import annotations

from django.urls import reverse

from queues.read.refs import DEFAULT_CONNECTION, QueueRef


def queue_args(ref: QueueRef, *rest: str) -> list[str]:
    """The ``reverse`` arguments of ``ref``'s URLs, then ``rest`` (a job id)."""
    if ref.connection == DEFAULT_CONNECTION:
        return [ref.prefix, ref.name, *rest]
    return [ref.connection, ref.prefix, ref.name, *rest]


def queue_url(view: str, ref: QueueRef, *rest: str) -> str:
    """``reverse(view)`` for ``ref`` (``view`` as "dashboard:queue", "dashboard:api:jobs")."""
    return reverse(view, args=queue_args(ref, *rest))
