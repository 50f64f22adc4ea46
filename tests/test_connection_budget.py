"""The Redis connections one server process of the site as shipped holds stay
within docs/deploy.md's budget ("Connections"), however many pages are open.

Three Redis connections (docs/configuration.md, "Several Redis servers"): the default one
and "staging" (each a redis-server) and "eu", a 3-node cluster whose 12
queues are tagged one by one (``{q0}``, ``{q1}``, ...: 12 hash slots, as
BullMQ's docs suggest tagging queue names). 50 and then 100 live sockets,
each watching every queue as an overview does, on the one process. Each
server's CLIENT LIST, counted per process (tests/e2e/budget.py), stays
within the budget, and 100 pages hold no more than 50 did. On main the live
readers on a cluster were per hash slot without a cap: the cluster's count
grew with the slots watched (one reader connection and one to the seed node
for each), and a hundred pages subscribing at once overflowed the cluster
client's control pool, which refuses instead of waiting ("Redis unreachable").
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dashboard.live.hub import BLOCKING_SLOTS, CONTROL_CONNECTIONS, READERS
from dashboard.site.http import ThreadedDjangoHTTP
from queues.connection import connect
from queues.read.refs import QueueRef
from tests.e2e.budget import connections, open_pages, servers_of, three_connections
from tests.e2e.shipped import (
    Several,
    ShippedSite,
    wait_until,
)

QUEUES = {
    "default": [QueueRef("bull", f"q{n}") for n in range(4)],
    "staging": [QueueRef("bull", f"q{n}").on("staging") for n in range(4)],
    "eu": [QueueRef("{" + f"q{n}" + "}", "jobs").on("eu") for n in range(12)],
}
# docs/deploy.md, "Connections": what one process may hold on one server.
_HTTP = ThreadedDjangoHTTP()
PAGE_THREADS = _HTTP.executor._max_workers + _HTTP.search_executor._max_workers
BACKGROUND = 3  # the history collector, discovery, the overview's queue watcher
SINGLE_BUDGET = PAGE_THREADS + BACKGROUND + READERS + CONTROL_CONNECTIONS
NODES = 3
# Per node the same threads and control commands, and the polling reader; the
# blocking readers (each also keeps the connection it learned the slots on).
CLUSTER_BUDGET = (
    NODES * (PAGE_THREADS + BACKGROUND + CONTROL_CONNECTIONS + 1) + 1 + 2 * BLOCKING_SLOTS * READERS
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ShippedSite]:
    with three_connections(tmp_path_factory.mktemp("budget"), QUEUES, 1) as started:
        yield started


def test_a_hundred_pages_hold_a_bounded_number_of_redis_connections(site: ShippedSite) -> None:
    assert isinstance(site.topology, Several)
    clients = [connect(server.url) for server in site.topology.topologies]
    servers = dict(zip(QUEUES, (servers_of(client) for client in clients), strict=True))
    every = [server for found in servers.values() for server in found]
    addresses = [ref.address for refs in QUEUES.values() for ref in refs]

    def held() -> dict[str, int]:
        counted = connections(site, every)[0]
        return {name: sum(counted[s] for s in found) for name, found in servers.items()}

    with open_pages(site, 50, addresses, process=0):
        wait_until(lambda: held()["eu"] >= NODES, 10, "the cluster's readers")
        fifty = held()
    with open_pages(site, 100, addresses, process=0):
        hundred = held()
    print(f"connections of one process: 50 pages {fifty}, 100 pages {hundred}")
    for name in ("default", "staging"):
        assert hundred[name] <= SINGLE_BUDGET, (name, hundred)
    assert hundred["eu"] <= CLUSTER_BUDGET, hundred
    for name, count in hundred.items():
        assert count <= fifty[name] + 2, f"{name} grew with the pages: {fifty} -> {hundred}"
    for client in clients:
        client.close()
