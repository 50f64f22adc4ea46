"""The app's settings: every one it reads, with its default, in one place.

A project that installs the app sets only those it wants changed, in its
Django settings. Every module of the app reads them through these functions,
at the time of use (so ``override_settings`` and the demo's late
``REDIS_URL`` apply).

``REDIS_URL``
    The Redis holding the queues, e.g. ``"redis://redis.internal:6379/0"``
    (``?cluster=1`` for a Redis Cluster). Default ``None``: a private
    redis-server (or an embedded Valkey) is started at first use, which is for
    trying the app out, not for production.
``ECHOMQ_QUEUES``
    Queues always listed, even before they hold a key: ``"prefix:name"``, or
    ``"name"`` under the first of ``ECHOMQ_PREFIXES``. Default ``[]``.
``ECHOMQ_PREFIXES``
    Key prefixes searched for more queues. Default ``["bull"]``.
``ECHOMQ_CONNECTIONS``
    More Redis servers, each a named connection with its own queues:
    ``[{"name": "staging", "url": "redis://...", "prefixes": ["bull"],
    "queues": ["emails"]}]`` (dashboard.core.connections). The three settings
    above are the connection named ``default``. Default ``[]``.
``ECHOMQ_READ_ONLY``
    ``True`` turns every action off, for everyone (every connection). Default ``False``.
``ECHOMQ_MAX_JOB_DATA_BYTES``
    The largest job data (JSON, in UTF-8 bytes) the dashboard writes when a
    user edits a job's data or adds a job. Default 1 MiB (1,048,576). A
    request body is refused even earlier over Django's
    ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MB by default).
``ECHOMQ_HISTORY_COLLECTOR``
    ``True``: each server process (daphne, uvicorn, ``manage.py demo``)
    offers to collect the metrics history; exactly one of all the processes
    sharing the Redis does at a time (queues.collector). Default ``True``.
``ECHOMQ_METRICS_TOKEN``
    The bearer token Prometheus sends to scrape ``metrics/``. Default
    ``None``: the endpoint is off (404).
``ECHOMQ_LOGOUT_URL``
    Where the pages' "Log out" button posts: a URL name (``"logout"``) or a
    path. Default ``None``: no button (the project's own pages have one).

Django settings the app follows rather than defines: ``LOGIN_URL`` (anonymous
users are sent there, and a page whose socket says "not logged in"),
``SESSION_ENGINE``, ``CSRF_TRUSTED_ORIGINS`` (also for the socket's
Origin check), ``STATIC_URL``. The stand-alone site's environment variables
(``ECHOMQ_DB``, ``ECHOMQ_LOGIN_*``, ...) are its own: dashboard/settings.py.
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
    """``ECHOMQ_MAX_JOB_DATA_BYTES``
        The largest job data (JSON, in UTF-8 bytes) the dashboard writes when a
        user edits a job's data or adds a job. Default 1 MiB (1,048,576). A
        request body is refused even earlier over Django's
        ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (2.5 MB by default).
    ``ECHOMQ_LOGOUT_URL``: a URL name or a path, or None."""
    configured: str | None = getattr(settings, "ECHOMQ_LOGOUT_URL", None)
    return configured or None


def connections() -> object:
    """``ECHOMQ_CONNECTIONS``: the Redis servers served besides the default one
    (dashboard.core.connections reads and checks it). Default ``[]``."""
    configured: object = getattr(settings, "ECHOMQ_CONNECTIONS", [])
    return configured


def history_collector() -> bool:
    return bool(getattr(settings, "ECHOMQ_HISTORY_COLLECTOR", True))


def metrics_token() -> str | None:
    configured: str | None = getattr(settings, "ECHOMQ_METRICS_TOKEN", None)
    return configured or None
