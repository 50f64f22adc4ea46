"""Redis clients for the runtime, from a URL.

``redis://``, ``rediss://`` and ``unix://`` URLs give a plain client; adding
``cluster=1`` to the query string (``redis://10.0.0.1:7000/?cluster=1``) gives a
Redis Cluster client, and ``redis+sentinel://`` (``rediss+sentinel://``) a
client of the master a set of sentinels names (queues.sentinel), so moving to
a cluster or behind Sentinel is a setting, not a rewrite.
Responses stay bytes: job data may be any bytes, and decoding is the reader's
decision (``queues.codec``).
"""

from __future__ import annotations

from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from redis import Redis
from redis.asyncio import BlockingConnectionPool as AsyncBlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster
from redis.connection import parse_url
from redis.exceptions import RedisClusterException, RedisError

from queues import sentinel

_TRUE = {"1", "true", "yes", "on"}

# No client-side read timeout, as redis-py had none before 8.0 (which made it
# 5 s): blocking reads wait longer on purpose (a worker's BZPOPMIN, up to
# queues.worker.MAX_BLOCK_S; QueueEvents' XREAD BLOCK), and a read timeout
# under them turns a quiet queue into errors. On Python 3.11 a timeout also
# puts each send under asyncio.wait_for, which can swallow the cancellation of
# the task sending (a socket's consumer that daphne cancels then never ends).
# Clients that want a timeout pass socket_timeout themselves (dashboard.live.hub).
NO_READ_TIMEOUT: dict[str, Any] = {"socket_timeout": None}


def split_cluster_flag(url: str) -> tuple[str, bool]:
    """Remove our ``cluster=`` query parameter; return (url, is_cluster)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    cluster = any(k == "cluster" and v.lower() in _TRUE for k, v in query)
    if not any(k == "cluster" for k, _ in query):
        return url, False  # untouched: urlunsplit would mangle unix:///path
    rest = [(k, v) for k, v in query if k != "cluster"]
    return urlunsplit(parts._replace(query=urlencode(rest))), cluster


def redacted(url: str) -> str:
    """``url`` fit for a log line: its password and the sentinels' as ``***``."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not colon and not any("password" in name for name, _ in query):
        return url  # nothing to hide (and urlunsplit would mangle unix:///path)
    netloc = f"{user}:***@{hosts}" if colon else parts.netloc
    hidden = [(name, "***" if "password" in name else value) for name, value in query]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(hidden, safe="*/")))


def url_problem(url: str) -> str | None:
    """What is wrong with a Redis URL, in a sentence (None: ``connect`` takes it)."""
    try:
        if sentinel.is_sentinel_url(url):
            sentinel.parse(url)
        else:
            parse_url(split_cluster_flag(url)[0])
    except ValueError as error:
        return str(error)
    return None


def connect(url: str, **options: Any) -> Redis:
    """A synchronous client (a ``RedisCluster`` when the URL says cluster=1),
    without a read timeout unless ``options`` give one (NO_READ_TIMEOUT)."""
    options = {**NO_READ_TIMEOUT, **options}
    if sentinel.is_sentinel_url(url):
        return sentinel.connect(url, **options)
    plain, cluster = split_cluster_flag(url)
    if cluster:
        # Any: RedisCluster.from_url has no types before redis-py 8.0.
        cluster_from_url: Any = RedisCluster.from_url
        return cast(Redis, cluster_from_url(plain, **options))
    return Redis.from_url(plain, **options)


def connect_async(url: str, *, max_connections: int | None = None, **options: Any) -> AsyncRedis:
    """An asyncio client (a cluster client when the URL says cluster=1).

    ``max_connections`` bounds its pool: a caller then waits for a free
    connection, as long as it takes, instead of opening another (on a
    cluster: at most that many per node, and a caller past it gets an error).
    """
    options = {**NO_READ_TIMEOUT, **options}
    if sentinel.is_sentinel_url(url):
        return sentinel.connect_async(url, max_connections=max_connections, **options)
    plain, cluster = split_cluster_flag(url)
    if cluster:
        if max_connections is not None:
            options["max_connections"] = max_connections
        return cast(AsyncRedis, AsyncRedisCluster.from_url(plain, **options))
    if max_connections is not None:
        pool = AsyncBlockingConnectionPool.from_url(
            plain, max_connections=max_connections, timeout=None, **options
        )
        return AsyncRedis.from_pool(pool)  # the client closes the pool
    client: AsyncRedis = AsyncRedis.from_url(plain, **options)
    return client


# Every way a read of Redis can fail for a reason outside the dashboard: any
# Redis error, and a cluster client's own ("no node reachable", a slot map it
# cannot build), which redis-py does not derive from RedisError. Background
# work survives these and tries again; a health figure reads them as "down".
REDIS_FAILURES = (RedisError, RedisClusterException)


def is_cluster(client: object) -> bool:
    return isinstance(client, RedisCluster | AsyncRedisCluster)
