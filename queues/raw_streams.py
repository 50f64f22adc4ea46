"""Stream reads that answer Redis' reply as it came, on the server that holds each stream.

XRANGE answers ``[id, [field, value, ...]]`` per entry and XREAD ``[[stream,
entries], ...]`` (or None), bytes throughout: no dict per entry.

Measured reason (a stream of 30,000 BullMQ events, one process): redis-py's
own XRANGE reply callback builds a dict per entry and took about 60% of the
history collector's CPU; the raw reply and the collector's fold took
0.05-0.07 s where the parsed reply and the fold took 0.19-0.24 s. The
callbacks are set on clients of the reader's own, on the connections of the
client it was given, so nothing else sees raw replies.

A single server has one such client, on the given client's pool. A Redis
Cluster has no single pool: each stream is read on the primary that holds its
slot, through a raw client on that node's own pool (the cluster client's, so
no connection more). ``node_of`` says where a key lives as the cluster client
last learned it; a read that the node answers with MOVED or ASK (the slot
moved, or is moving) is read again by the caller's next pass after ``moved``
has the cluster client learn the slots anew.
"""

from __future__ import annotations

from typing import Any

from redis import Redis
from redis.crc import key_slot
from redis.exceptions import AskError

from queues.connection import is_cluster

# The one node of a server that is no cluster.
SINGLE = ""


def _raw_client(pool: Any) -> Redis:
    raw = Redis(connection_pool=pool)
    for command in ("XRANGE", "XREAD"):
        raw.set_response_callback(command, lambda reply, **_options: reply)
    return raw


class RawStreams:
    """Raw-reply clients for the streams of ``client``'s server (or cluster)."""

    def __init__(self, client: Redis) -> None:
        self.client = client
        self.cluster = is_cluster(client)
        self._single = None if self.cluster else _raw_client(client.connection_pool)
        self._by_node: dict[str, Redis] = {}

    def node_of(self, key: str) -> str:
        """The name of the node holding ``key`` (``SINGLE`` off a cluster)."""
        if not self.cluster:
            return SINGLE
        node: Any = self.client.get_node_from_key(key)  # type: ignore[attr-defined]
        return str(node.name)

    def slot_of(self, key: str) -> int:
        """The hash slot of ``key`` (one XREAD on a cluster names one slot's keys)."""
        return key_slot(key.encode())

    def on(self, node: str) -> Redis:
        """The raw client of ``node`` (a name ``node_of`` gave)."""
        if self._single is not None:
            return self._single
        found: Any = self.client.get_node(node_name=node)  # type: ignore[attr-defined]
        pool = found.redis_connection.connection_pool
        raw = self._by_node.get(node)
        # A node the cluster client made anew (after a failover or a new slot
        # map) has a pool of its own: the raw client follows it.
        if raw is None or raw.connection_pool is not pool:
            raw = self._by_node[node] = _raw_client(pool)
        return raw

    def moved(self) -> None:
        """A node answered that a stream's slot is elsewhere: learn the slots anew."""
        if self.cluster:
            self.client.nodes_manager.initialize()  # type: ignore[attr-defined]


def is_redirect(reply: object) -> bool:
    """A reply saying the key's slot is served by another node (MOVED, or ASK
    while it moves): nothing was read, the read must go there."""
    return isinstance(reply, AskError)  # MovedError is an AskError
