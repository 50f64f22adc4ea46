"""The one place the dashboard gets its Redis clients from: one per connection."""

from __future__ import annotations

import threading

from django.http import Http404
from redis import Redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

from dashboard.core import conf, connections
from queues.connection import connect
from queues.read.refs import DEFAULT_CONNECTION
from queues.redis_server import resolve_redis
from queues.sentinel import Failover
from queues.sentinel import failing_over as sentinels_failing_over

# A server of another connection that does not answer must not hold a page
# (the overview shows it as unreachable, beside the others): its clients give
# up connecting after CONNECT_TIMEOUT_S and waiting after READ_TIMEOUT_S, and
# retry_once. The default connection's client keeps the settings it always had.
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 3.0


def retry_once() -> Retry:
    """Once, at once, and only when the connection broke (a pooled connection the
    server closed): for a caller that paces its own attempts (the history
    collector tries again every second) or must not hang (another connection's
    pages). redis-py's default, three more tries after random waits of up to
    2, 4 and 8 s, on timeouts too, held a page half a minute for a server that
    hangs, and the collector off a new master for 14 s after a Sentinel
    failover, where it must resume within 5 s."""
    return Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,))


_clients: dict[str, Redis] = {}
_lock = threading.Lock()


def redis_url(connection: str | None = None) -> str:
    """The URL of ``connection`` (None: the one the running view serves).

    Raises Http404 for a connection that is not configured."""
    name = connection or connections.current()
    if name == DEFAULT_CONNECTION:
        return conf.redis_url() or resolve_redis().url
    found = connections.named(name)
    if found is None or found.url is None:
        raise Http404(f"No Redis connection named {name}")
    return found.url


def get_client(connection: str | None = None) -> Redis:
    """A shared (thread-safe, pooled) bytes client for ``connection`` (None: the
    one the running view serves, dashboard.core.connections).

    Keyed by URL so a test overriding the setting gets its own client.
    """
    name = connection or connections.current()
    url = redis_url(name)
    key = f"{name} {url}"
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None and name == DEFAULT_CONNECTION:
                client = _clients[key] = connect(url)
            elif client is None:
                client = _clients[key] = connect(
                    url,
                    socket_connect_timeout=CONNECT_TIMEOUT_S,
                    socket_timeout=READ_TIMEOUT_S,
                    retry=retry_once(),
                )
    return client


def failing_over(connection: str) -> Failover | None:
    """Whether the sentinels are replacing the master of ``connection`` (None: not
    a Sentinel connection, or not failing over). For a request that could not
    reach Redis: it asks the sentinels, about a millisecond each."""
    if connections.named(connection) is None:
        return None
    return sentinels_failing_over(get_client(connection))
