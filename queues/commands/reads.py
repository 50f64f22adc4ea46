"""Builders for the read-only scripts behind the read model (``queues.inspect``)."""

from __future__ import annotations

from collections.abc import Sequence

from queues import scripts
from queues.keys import QueueKeys

# Replies per queue from queueCounts: 9 integers, then 2 metrics lists if asked.
COUNT_REPLIES = 9


def queue_counts(queues: Sequence[QueueKeys], *, metrics_points: int) -> scripts.ScriptCall:
    """Counts, paused flag and metrics of many queues (single-node Redis only)."""
    bases = tuple(keys.base for keys in queues)
    return scripts.call("queueCounts", (), (max(0, metrics_points), *bases))
