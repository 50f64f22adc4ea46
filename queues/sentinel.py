"""Redis Sentinel: clients of the master the sentinels name, from a URL.

``redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[/<db>]``
lists the sentinels (port 26379 when left out); the user and password are
the master's. The sentinels' own credentials are the query options
``sentinel_username`` and ``sentinel_password``; every other option is
redis-py's, as in a ``redis://`` URL (``socket_timeout``, ``ssl_ca_certs``...).
``rediss+sentinel://`` speaks TLS to the sentinels and to the master alike,
with the same ``ssl_*`` options.

A client asks the sentinels for the master's address whenever it opens a
connection (redis-py's ``SentinelConnectionPool``): after a failover its next
connection goes to the new master, and a connection that finds itself on a
demoted master (``READONLY``) is dropped. Replicas are never written to, nor
read: every command goes to the master.

``failing_over`` tells an outage the sentinels are repairing (the master is
down in their eyes, or they named another one) from one they are not, so
the dashboard can say "failing over" rather than "unreachable".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from redis import Redis
from redis.asyncio import BlockingConnectionPool as AsyncBlockingConnectionPool
from redis.asyncio import Redis as AsyncRedis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.asyncio.sentinel import SentinelConnectionPool as AsyncSentinelConnectionPool
from redis.backoff import NoBackoff
from redis.connection import parse_url
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool

SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}  # scheme -> TLS
DEFAULT_PORT = 26379
# The sentinels' own credentials, in the query string.
SENTINEL_OPTIONS = ("sentinel_username", "sentinel_password")
# A sentinel that does not answer is passed over at once for the next one:
# the master's address must not wait on redis-py's retries (1-10 s each).
SENTINEL_TIMEOUT_S = 1.0
# Flags a sentinel gives a master it is repairing.
FAILOVER_FLAGS = frozenset({"s_down", "o_down", "failover_in_progress"})


class InvalidSentinelURL(ValueError):
    """A ``redis+sentinel://`` URL that names no sentinel or no master."""


@dataclass(frozen=True)
class SentinelAddress:
    """What a sentinel URL says: where the sentinels are, which master, how to talk."""

    sentinels: tuple[tuple[str, int], ...]
    master: str
    # The master's connection options (db, credentials, redis-py's query options, TLS).
    server: Mapping[str, Any]
    # The sentinels' connection options (their credentials, TLS, short timeouts).
    sentinel: Mapping[str, Any]


def is_sentinel_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SCHEMES


def parse(url: str) -> SentinelAddress:
    """The parts of a sentinel URL; InvalidSentinelURL says what is missing."""
    # The host list is cut out by hand: urlsplit reads one host, and some
    # Python 3.11 releases (Debian 12's 3.11.2) refuse a list holding an IPv6
    # address in brackets ("Invalid IPv6 URL").
    scheme, _, after_scheme = url.partition("://")
    tls = SCHEMES.get(scheme.lower())
    if tls is None:
        raise InvalidSentinelURL(f"not a sentinel URL: {scheme}://")
    end = min((at for at in map(after_scheme.find, "/?#") if at >= 0), default=len(after_scheme))
    netloc = after_scheme[:end]
    parts = urlsplit(f"{scheme}://sentinels{after_scheme[end:]}")
    userinfo, _, hosts = netloc.rpartition("@")
    sentinels = tuple(_host_and_port(entry) for entry in hosts.split(",") if entry)
    if not sentinels:
        raise InvalidSentinelURL("a sentinel URL lists its sentinels: host:port[,host:port...]")
    path = [unquote(segment) for segment in parts.path.split("/") if segment]
    if not path or len(path) > 2:
        raise InvalidSentinelURL("a sentinel URL ends in /<master name> or /<master name>/<db>")
    query = parse_qsl(parts.query, keep_blank_values=True)
    own = {name: value for name, value in query if name in SENTINEL_OPTIONS}
    rest = [(name, value) for name, value in query if name not in SENTINEL_OPTIONS]
    # redis-py reads the master's options (credentials, db, typed query options)
    # from the equivalent plain URL: the same parsing as for redis:// URLs.
    at = f"{userinfo}@" if userinfo else ""
    db = f"/{path[1]}" if len(path) == 2 else ""
    plain = f"{'rediss' if tls else 'redis'}://{at}sentinel{db}?{urlencode(rest)}"
    try:
        server = parse_url(plain)
    except ValueError as error:
        raise InvalidSentinelURL(str(error)) from None
    if len(path) == 2 and "db" not in server:
        raise InvalidSentinelURL(f"the database must be a number, not {path[1]!r}")
    for name in ("host", "port", "connection_class"):
        server.pop(name, None)
    sentinel: dict[str, Any] = {
        "socket_timeout": SENTINEL_TIMEOUT_S,
        "socket_connect_timeout": SENTINEL_TIMEOUT_S,
        "retry": Retry(NoBackoff(), 0),
    }
    if own.get("sentinel_username"):
        sentinel["username"] = own["sentinel_username"]
    if own.get("sentinel_password"):
        sentinel["password"] = own["sentinel_password"]
    if tls:
        server["ssl"] = True
        sentinel["ssl"] = True
        sentinel.update({k: v for k, v in server.items() if k.startswith("ssl_")})
    return SentinelAddress(sentinels, path[0], server, sentinel)


def _host_and_port(entry: str) -> tuple[str, int]:
    host, colon, port = entry.rpartition(":")
    if not colon or host.endswith(":"):  # no port, or a bare IPv6 address
        host, port = entry, str(DEFAULT_PORT)
    host = host.strip("[]")
    if not host or not port.isdigit():
        raise InvalidSentinelURL(f"a sentinel is host:port, not {entry!r}")
    return host, int(port)


def _by_address(client: Redis | AsyncRedis) -> str:
    """A sentinel's client named by its address alone: redis-py's own repr
    shows every connection option, the sentinel password included, and
    MasterNotFoundError quotes it (into logs and onto the overview)."""
    options = client.connection_pool.connection_kwargs
    return f"sentinel {options.get('host')}:{options.get('port')}"


class _SentinelClient(Redis):
    __repr__ = _by_address


class _AsyncSentinelClient(AsyncRedis):
    __repr__ = _by_address


def _sentinels(address: SentinelAddress, manager: Any, client: type) -> Any:
    """redis-py's Sentinel (``manager``: the class, sync or asyncio) of the
    address, its sentinels' clients of ``client`` (named by address)."""
    sentinels = manager(address.sentinels, sentinel_kwargs=dict(address.sentinel))
    sentinels.sentinels = [
        client(host=host, port=port, **address.sentinel) for host, port in address.sentinels
    ]
    return sentinels


class _Pool(SentinelConnectionPool):
    """Closing the client closes the sentinels' connections too (redis-py
    leaves them open, one per sentinel, for every client made)."""

    def disconnect(self, inuse_connections: bool = True) -> None:
        super().disconnect(inuse_connections)
        if inuse_connections:  # the client's close (a new master only drops idle ones)
            for sentinel in self.sentinel_manager.sentinels:
                sentinel.close()


class _AsyncPool(AsyncSentinelConnectionPool):
    async def disconnect(self, inuse_connections: bool = True) -> None:
        await super().disconnect(inuse_connections)
        if inuse_connections:
            for sentinel in self.sentinel_manager.sentinels:
                await sentinel.aclose()


class _AsyncBlockingPool(_AsyncPool, AsyncBlockingConnectionPool):
    """At most ``max_connections``; a caller past it waits (queues.connection)."""


def connect(url: str, **options: Any) -> Redis:
    """A client of the master the sentinels at ``url`` name; ``options`` as redis-py's."""
    address = parse(url)
    sentinels = _sentinels(address, Sentinel, _SentinelClient)
    # The URL's options win over the caller's, as in redis-py's from_url.
    client = sentinels.master_for(
        address.master, connection_pool_class=_Pool, **{**options, **address.server}
    )
    return cast(Redis, client)


def connect_async(url: str, *, max_connections: int | None = None, **options: Any) -> AsyncRedis:
    """The asyncio twin of ``connect``; ``max_connections`` bounds its pool and
    makes a caller past it wait (as queues.connection.connect_async)."""
    address = parse(url)
    sentinels = _sentinels(address, AsyncSentinel, _AsyncSentinelClient)
    pool_options: dict[str, Any] = {}
    pool_class: type[AsyncSentinelConnectionPool] = _AsyncPool
    if max_connections is not None:
        pool_class = _AsyncBlockingPool
        pool_options = {"max_connections": max_connections, "timeout": None}
    client = sentinels.master_for(
        address.master,
        connection_pool_class=pool_class,
        **{**options, **address.server, **pool_options},
    )
    return cast(AsyncRedis, client)


# ------------------------------------------------------------ is it failing over


@dataclass(frozen=True)
class Failover:
    """The sentinels are repairing the master: it is down in their eyes, or
    they have named another one than the client last used."""

    master: str
    address: str  # host:port the sentinels name now
    flags: frozenset[str]

    def describe(self) -> str:
        if "failover_in_progress" in self.flags or "o_down" in self.flags:
            return f"the sentinels are replacing master {self.master!r} ({self.address})"
        if self.flags & FAILOVER_FLAGS:
            return f"the sentinels see master {self.master!r} ({self.address}) down"
        return f"the sentinels named {self.address} the new master of {self.master!r}"


def failover_from(
    master: str, states: Iterable[Mapping[str, Any] | None], last_address: object
) -> Failover | None:
    """What the sentinels' SENTINEL MASTER answers say (None: a sentinel that did
    not answer). No answer at all, or a master they all see up where the
    client last found it, is no failover: the dashboard then says unreachable."""
    seen = [state for state in states if state]
    for state in seen:
        flags = _flags(state) & FAILOVER_FLAGS
        if flags:
            return Failover(master, f"{state.get('ip')}:{state.get('port')}", flags)
    for state in seen:
        address = (state.get("ip"), int(state.get("port") or 0))
        if last_address is not None and address != tuple(cast(Any, last_address)):
            return Failover(master, f"{address[0]}:{address[1]}", frozenset())
    return None


# What asking a sentinel can fail with: then the next one is asked.
_SENTINEL_ERRORS = (RedisConnectionError, RedisTimeoutError, ResponseError, OSError)


# SENTINEL MASTER through execute_command: redis-py 6.4's sentinel_master() on
# the plain client of one sentinel hands its reply parser an argument the
# parser does not take (TypeError).


def _state(reply: Any) -> Mapping[str, Any] | None:
    """SENTINEL MASTER's answer as redis-py parses it (a dict), else None."""
    return reply if isinstance(reply, Mapping) else None


def _flags(state: Mapping[str, Any]) -> frozenset[str]:
    # A comma-separated text over RESP2, a set over RESP3.
    flags = state.get("flags", "")
    return frozenset(flags.split(",") if isinstance(flags, str) else flags)


def failing_over(client: object) -> Failover | None:
    """Whether ``client``'s master is being failed over (None for a client
    not made from a sentinel URL). Asks every sentinel, each at most
    ``SENTINEL_TIMEOUT_S``: for an error path, not for every request."""
    pool = getattr(client, "connection_pool", None)
    if not isinstance(pool, SentinelConnectionPool):
        return None
    name, states = pool.service_name, []
    for sentinel in pool.sentinel_manager.sentinels:
        try:
            states.append(_state(sentinel.execute_command("SENTINEL MASTER", name)))
        except _SENTINEL_ERRORS:
            states.append(None)
    return failover_from(name, states, pool.master_address)


async def failing_over_async(client: object) -> Failover | None:
    """``failing_over`` for an asyncio client."""
    pool = getattr(client, "connection_pool", None)
    if not isinstance(pool, AsyncSentinelConnectionPool):
        return None
    name, states = pool.service_name, []
    for sentinel in pool.sentinel_manager.sentinels:
        try:
            reply = await sentinel.execute_command("SENTINEL MASTER", name)
            states.append(_state(reply))
        except _SENTINEL_ERRORS:
            states.append(None)
    return failover_from(name, states, pool.master_address)
