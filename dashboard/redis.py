"""The one place the dashboard gets its Redis client from."""

from __future__ import annotations

import threading

from redis import Redis

from dashboard import conf
from queues.connection import connect
from queues.redis_server import resolve_redis

_clients: dict[str, Redis] = {}
_lock = threading.Lock()


def redis_url() -> str:
    return conf.redis_url() or resolve_redis().url


def get_client() -> Redis:
    """A shared (thread-safe, pooled) bytes client for ``REDIS_URL`` (dashboard.conf).

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
