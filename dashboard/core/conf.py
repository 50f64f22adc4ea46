"""The app's settings, every one it reads with its default (docs/mounting.md,
"The app's settings"), read at the time of use so that ``override_settings``
and the demo's late ``REDIS_URL`` apply.
"""

from __future__ import annotations

from django.conf import settings


def redis_url() -> str | None:
    """``REDIS_URL``, or None: start a private server (queues.redis_server)."""
    configured: str | None = getattr(settings, "REDIS_URL", None)
    return configured or None


def queues() -> list[str]:
    return list(getattr(settings, "ECHOMQ_QUEUES", []))


def prefixes() -> list[str]:
    return list(getattr(settings, "ECHOMQ_PREFIXES", ["bull"]))


def read_only() -> bool:
    return bool(getattr(settings, "ECHOMQ_READ_ONLY", False))


def max_job_data_bytes() -> int:
    return int(getattr(settings, "ECHOMQ_MAX_JOB_DATA_BYTES", 1024 * 1024))


def logout_url() -> str | None:
    """``ECHOMQ_LOGOUT_URL``: a URL name or a path, or None."""
    configured: str | None = getattr(settings, "ECHOMQ_LOGOUT_URL", None)
    return configured or None


def connections() -> object:
    """``ECHOMQ_CONNECTIONS``, as set (dashboard.core.connections reads and checks it)."""
    configured: object = getattr(settings, "ECHOMQ_CONNECTIONS", [])
    return configured


def history_collector() -> bool:
    return bool(getattr(settings, "ECHOMQ_HISTORY_COLLECTOR", True))


def metrics_token() -> str | None:
    configured: str | None = getattr(settings, "ECHOMQ_METRICS_TOKEN", None)
    return configured or None


def live_sockets_per_user() -> int:
    return int(getattr(settings, "ECHOMQ_LIVE_SOCKETS_PER_USER", 30))
