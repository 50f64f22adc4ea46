"""What a server process of the site holds in Redis: its connections, per server.

``connections`` asks every Redis server (each node of a cluster) for its
``CLIENT LIST`` and counts each entry under the server process it belongs to
(its address is one of that process's sockets, found with psutil), so the
count is Redis' own. ``open_pages`` opens live sockets through the front as
pages do (the session's cookie, the page's origin) and subscribes each to
queues, as an overview lists them.
"""

from __future__ import annotations

import json
import ssl
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from socket import create_connection

import psutil
from redis import Redis
from websockets.sync.client import ClientConnection
from websockets.sync.client import connect as ws_connect

from queues.connection import connect
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.e2e.shipped import (
    ClusterRedis,
    Session,
    Several,
    ShippedSite,
    SingleRedis,
    shipped_site,
)

Server = tuple[str, int]  # host, port of one redis-server (a cluster node)


@contextmanager
def three_connections(
    workdir: Path, queues: dict[str, list[QueueRef]], processes: int
) -> Iterator[ShippedSite]:
    """The site as shipped on three Redis connections (docs/configuration.md,
    "Several Redis servers"): "default" and "staging" each a redis-server, "eu" a 3-node
    cluster; ``queues`` (by connection name, in that order) hold a job each
    before the site starts."""
    topology = Several(
        [SingleRedis(), SingleRedis(), ClusterRedis()],
        ["staging", "eu"],
        [["bull"], sorted({ref.prefix for ref in queues["eu"]})],
    )

    def add_queues(_client: Redis) -> None:
        for server, refs in zip(topology.topologies, queues.values(), strict=True):
            client = connect(server.url)
            for ref in refs:
                Queue(ref.name, client, prefix=ref.prefix).add("send", {"to": "a@example.com"})
            client.close()

    # Its pages all sign in as one user, standing for a hundred people.
    lifted = {"ECHOMQ_LIVE_SOCKETS_PER_USER": "1000"}
    with shipped_site(topology, workdir, processes, before=add_queues, **lifted) as site:
        yield site


def servers_of(client: Redis) -> list[Server]:
    """The servers ``client`` talks to: itself, or every node of its cluster."""
    nodes = getattr(client, "get_nodes", None)
    if nodes is not None:
        return sorted((node.host, node.port) for node in nodes())
    kwargs = client.connection_pool.connection_kwargs
    return [(kwargs["host"], kwargs["port"])]


def connections(site: ShippedSite, servers: Sequence[Server]) -> dict[int, Counter[Server]]:
    """Per server process (its number in ``site.servers``): its CLIENT LIST
    entries on each server."""
    ports: dict[int, int] = {}  # a process's local port -> its number
    for number, server in enumerate(site.servers):
        if server.process is None:
            continue
        for socket in psutil.Process(server.process.pid).net_connections(kind="tcp"):
            ports[socket.laddr.port] = number
    counted: dict[int, Counter[Server]] = {n: Counter() for n in range(len(site.servers))}
    for host, port in servers:
        with Redis(host=host, port=port) as client:
            for entry in client.client_list():
                number = ports.get(int(entry["addr"].rsplit(":", 1)[1]))
                if number is not None:
                    counted[number][(host, port)] += 1
    return counted


@contextmanager
def open_pages(
    site: ShippedSite, count: int, queues: Sequence[str], process: int | None = None
) -> Iterator[list[ClientConnection]]:
    """``count`` live sockets through the front (or straight to server
    process number ``process``, with the headers the front adds: no TLS to
    pay for on a loaded machine), each subscribed to ``queues`` (addresses)
    and confirmed; closed on leaving."""
    session = Session.log_in(site)
    cookie = "; ".join(f"{name}={value}" for name, value in session.cookies.items())
    headers = {"Cookie": cookie, "Origin": site.url}
    unverified: ssl.SSLContext | None = ssl._create_unverified_context()  # noqa: S323 (ours)
    url = site.url.replace("https://", "wss://") + "/ws/live/"
    direct: int | None = None
    if process is not None:
        # The front's address in the request (its Host), the process's socket.
        url = site.url.replace("https://", "ws://") + "/ws/live/"
        headers["X-Forwarded-Proto"] = "https"
        unverified = None
        direct = site.servers[process].port
    subscribe = json.dumps({"type": "subscribe", "queues": [{"queue": q} for q in queues]})
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            socket = stack.enter_context(
                ws_connect(
                    url,
                    sock=None if direct is None else create_connection(("127.0.0.1", direct)),
                    ssl=unverified,
                    additional_headers=headers,
                    max_size=None,
                    # As a browser's: no pings of its own (the server pings),
                    # and patient on a loaded machine; closed without waiting.
                    ping_interval=None,
                    open_timeout=60,
                    close_timeout=1,
                )
            )
            socket.send(subscribe)
            sockets.append(socket)
        for socket in sockets:
            confirmed = 0
            while confirmed < len(queues):
                message = json.loads(socket.recv(timeout=30))
                assert message["type"] != "error", message
                confirmed += message["type"] == "subscribed"
        yield sockets
