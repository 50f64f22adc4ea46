"""The workers connected to queues, found by their connection names.

A worker names its Redis connections after its queue (queues.connection_names);
``CLIENT LIST`` on every node (each node of a Redis Cluster has its own
clients) lists them with their address, age and idle time. One
:func:`read_client_list` serves every queue of a page: its cost is one
``CLIENT LIST`` per node, whatever the number of queues, and sorting the
connections out to queues is one pass over them (:func:`workers_by_queue`).

A worker holds more than one connection (BullMQ: a client and a blocking
client; ours: its pipeline and its blocking client). The connections of one
worker share its name and its host, so they are shown as one worker with a
count of connections. Unnamed workers of one host cannot be told apart: they
show as one row whose count is all their connections.

Some servers refuse ``CLIENT LIST`` (ACLs, managed services): the answer then
says so (``ClientList.error``) and no worker count is claimed.

``CLIENT LIST`` costs Redis time in proportion to its clients, on its one
thread, and parsing it here as much again: at 1,000 clients 2.4 ms of Redis
and 8 ms of CPU here, at 5,000 clients 15 ms of Redis (measured on this
project's test machine). The pages that ask on every load (the overview's
health, and its live refresh, as often as every second per open tab) take
:func:`recent_client_list`: one reading per Redis client per
``CLIENT_LIST_MAX_AGE_S``, which discovery's own poll also refreshes.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis import Redis
from redis.exceptions import ResponseError

from queues.connection import is_cluster
from queues.connection_names import match_worker, queue_name_forms
from queues.read import answers
from queues.read.refs import QueueRef

UNIX_SOCKET_HOST = "Redis's machine (unix socket)"
# How old a client list the pages take (see the module's docstring): a worker
# that connected or left shows on the overview at most this much later.
CLIENT_LIST_MAX_AGE_S = 5.0


@dataclass(frozen=True, slots=True)
class Connection:
    """One line of ``CLIENT LIST``: what the dashboard shows of a connection."""

    node: str | None  # the cluster node ("host:port"); None on a single server
    name: str
    address: str  # the client's "host:port" as the server sees it
    age_s: int  # connected this many seconds
    idle_s: int  # no command for this many seconds (a blocked read counts as idle)

    @property
    def host(self) -> str:
        """Where the client runs. Redis gives a unix socket's client the
        socket's path as its address ("/run/redis.sock:0"): that client runs
        on the Redis server's own machine, which is what is worth saying."""
        if self.address.startswith("/"):
            return UNIX_SOCKET_HOST
        return self.address.rpartition(":")[0] or self.address


@dataclass(frozen=True, slots=True)
class ClientList:
    """The connections of every node, read at once; ``error`` when a server
    refused ``CLIENT LIST`` (then nothing is known about workers)."""

    connections: tuple[Connection, ...] = ()
    error: str | None = None
    nodes: tuple[str, ...] = ()
    refusal: ResponseError | None = field(default=None, compare=False)
    read_at: float = field(default_factory=time.monotonic, compare=False)

    @property
    def known(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class ConnectedWorker:
    """A worker of a queue: its connections sharing one name, host and node."""

    name: str  # the worker's own name; "" for an unnamed worker
    connection_name: str
    host: str
    node: str | None
    addresses: list[str] = field(default_factory=list)
    connected_s: int = 0  # the oldest connection's age
    idle_s: int = 0  # the most recently used connection's idle time

    @property
    def connections(self) -> int:
        return len(self.addresses)

    def as_json(self) -> answers.ConnectedWorker:
        return answers.ConnectedWorker(
            name=self.name,
            connection_name=self.connection_name,
            host=self.host,
            addresses=list(self.addresses),
            node=self.node,
            connections=self.connections,
            connected_s=self.connected_s,
            idle_s=self.idle_s,
        )


def _seconds(text: str) -> int:
    return int(text) if text.isdigit() else 0


def _fields(line: str) -> dict[str, str]:
    fields = {}
    for pair in line.split(" "):
        key, _, value = pair.partition("=")
        fields[key] = value
    return fields


def _connection(fields: dict[str, Any], node: str | None) -> Connection | None:
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        return None
    return Connection(
        node=node,
        name=name,
        address=str(fields.get("addr", "")),
        age_s=_seconds(str(fields.get("age", ""))),
        idle_s=_seconds(str(fields.get("idle", ""))),
    )


def parse_client_list(reply: Any, node: str | None = None) -> list[Connection]:
    """The named connections of one ``CLIENT LIST`` answer.

    Raw text as the server sends it (``id=5 addr=... name=... age=... idle=...``
    per line), or the list of dicts a client library may have made of it; a
    line or a field not in that shape is passed over, so nothing a server or a
    proxy writes there can break a page. Unnamed connections (the
    dashboard's own, most clients) are left out."""
    if isinstance(reply, list):
        lines = [fields for fields in reply if isinstance(fields, dict)]
    else:
        text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
        lines = [_fields(line) for line in text.splitlines()]
    found = []
    for fields in lines:
        connection = _connection(fields, node)
        if connection is not None:
            found.append(connection)
    return found


def _list_clients(client: Any) -> Any:
    # TYPE normal: replicas and pub/sub connections are never workers. Any:
    # a cluster node's client has no types before redis-py 8.
    return client.execute_command("CLIENT", "LIST", "TYPE", "normal")


def read_client_list(client: Redis) -> ClientList:
    """``CLIENT LIST`` of the server, or of every node of a cluster."""
    try:
        if not is_cluster(client):
            return ClientList(tuple(parse_client_list(_list_clients(client))))
        cluster: Any = client
        connections: list[Connection] = []
        names = []
        for node in cluster.get_nodes():
            names.append(node.name)
            node_client = cluster.get_redis_connection(node)
            connections.extend(parse_client_list(_list_clients(node_client), node.name))
        return ClientList(tuple(connections), nodes=tuple(names))
    except ResponseError as refused:
        # NOPERM from an ACL, "unknown command" where a provider renamed it.
        return ClientList(error=f"the server refused CLIENT LIST: {refused}", refusal=refused)


# Redis client -> what was read last; weak: a client dropped (a test's, a
# changed setting's) takes its list with it.
_recent: weakref.WeakKeyDictionary[Any, ClientList] = weakref.WeakKeyDictionary()
_recent_lock = threading.Lock()


def recent_client_list(client: Redis, max_age_s: float = CLIENT_LIST_MAX_AGE_S) -> ClientList:
    """The client list read at most ``max_age_s`` ago (0: read it now), kept for
    the next caller; a refusal is kept alike (it is the server's answer)."""
    with _recent_lock:
        held = _recent.get(client)
    if held is not None and time.monotonic() - held.read_at < max_age_s:
        return held
    clients = read_client_list(client)
    with _recent_lock:
        _recent[client] = clients
    return clients


def forget_client_lists() -> None:
    """Forget every kept client list (tests: a worker just connected shows at once)."""
    with _recent_lock:
        _recent.clear()


def workers_by_queue(
    clients: ClientList, refs: Iterable[QueueRef]
) -> dict[QueueRef, list[ConnectedWorker]]:
    """Each queue's workers, longest connected first (queues without any
    get an empty list); empty when the client list is not known."""
    if not clients.known:
        return {}
    by_base: dict[str, QueueRef] = {}
    found: dict[QueueRef, list[ConnectedWorker]] = {}
    for ref in refs:
        found[ref] = []
        for base in queue_name_forms(ref.prefix, ref.name):
            by_base.setdefault(base, ref)
    bases = frozenset(by_base)
    grouped: dict[tuple[QueueRef, str, str, str | None], ConnectedWorker] = {}
    for connection in clients.connections:
        matched = match_worker(connection.name, bases)
        if matched is None:
            continue
        ref = by_base[matched.base]
        group = (ref, connection.name, connection.host, connection.node)
        worker = grouped.get(group)
        if worker is None:
            worker = grouped[group] = ConnectedWorker(
                matched.worker, connection.name, connection.host, connection.node
            )
            worker.idle_s = connection.idle_s
            found[ref].append(worker)
        worker.addresses.append(connection.address)
        worker.connected_s = max(worker.connected_s, connection.age_s)
        worker.idle_s = min(worker.idle_s, connection.idle_s)
    for workers in found.values():
        workers.sort(key=lambda w: (-w.connected_s, w.name, w.host))
    return found


def queue_workers(client: Redis, ref: QueueRef) -> tuple[list[ConnectedWorker] | None, ClientList]:
    """One queue's workers (None when the server would not list its
    clients), and the client list they came from."""
    clients = read_client_list(client)
    if not clients.known:
        return None, clients
    return workers_by_queue(clients, [ref])[ref], clients


def worker_counts(client: Redis, refs: Sequence[QueueRef]) -> dict[QueueRef, int] | None:
    """How many workers each queue has, from one client list; None when unknown."""
    if not refs:
        return {}
    clients = read_client_list(client)
    if not clients.known:
        return None
    return {ref: len(workers) for ref, workers in workers_by_queue(clients, refs).items()}
