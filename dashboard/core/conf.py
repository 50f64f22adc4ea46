"""The app's settings, every one it reads with its default (docs/mounting.md,
"The app's settings"), read at the time of use so that ``override_settings``
and the demo's late ``REDIS_URL`` apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings

T = TypeVar("T")


def _setting(name: str, default: Any, kind: Callable[[Any], T]) -> Callable[[], T]:
    """The reader of setting ``name``: its value at each call (or ``default``), as ``kind``."""

    def read() -> T:
        return kind(getattr(settings, name, default))

    return read


def _or_none(value: str | None) -> str | None:
    return value or None


# None: start a private server (queues.redis_server).
redis_url = _setting("REDIS_URL", None, _or_none)
queues = _setting("ECHOMQ_QUEUES", [], list)
prefixes = _setting("ECHOMQ_PREFIXES", ["bull"], list)
read_only = _setting("ECHOMQ_READ_ONLY", False, bool)
max_job_data_bytes = _setting("ECHOMQ_MAX_JOB_DATA_BYTES", 1024 * 1024, int)
# A URL name or a path, or None.
logout_url = _setting("ECHOMQ_LOGOUT_URL", None, _or_none)
# As set: dashboard.core.connections reads and checks it.
connections = _setting("ECHOMQ_CONNECTIONS", [], lambda value: value)
history_collector = _setting("ECHOMQ_HISTORY_COLLECTOR", True, bool)
metrics_token = _setting("ECHOMQ_METRICS_TOKEN", None, _or_none)
live_sockets_per_user = _setting("ECHOMQ_LIVE_SOCKETS_PER_USER", 30, int)
