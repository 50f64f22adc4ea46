"""The one place the dashboard gets its Redis client from."""

from __future__ import annotations

import threading

from django.conf import settings
from redis import Redis

from queues.connection import connect
from queues.redis_server import resolve_redis

_clients: dict[str, Redis] = {}
_lock = threading.Lock()


def redis_url() -> str:
    configured: str | None = settings.REDIS_URL
    return configured or resolve_redis().url


def get_client() -> Redis:
    """A shared (thread-safe, pooled) bytes client for ``settings.REDIS_URL``.

    Keyed by URL so a test overriding the setting gets its own client.
    """
    url = redis_url()
    client = _clients.get(url)
    if client is None:
        with _lock:
            client = _clients.get(url)
            if client is None:
                client = _clients[url] = connect(url)
    return client
