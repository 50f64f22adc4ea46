"""Redis connections a dashboard server process holds, per Redis server.

    python bench/connections.py [--pages 100] [--processes 2] [--queues 20]

Three Redis connections configured, as docs/configuration.md ("Several Redis servers") does:
the default one (a redis-server), "staging" (another) and "eu" (a 3-node
cluster whose queues sit under ten hash-tagged prefixes, so in ten slots),
``--queues`` queues on each. The site as shipped (tests/e2e/shipped.py:
docs/deploy.md's environment and daphne, ``--processes`` of them behind the
TLS front, the history collector on). Printed per server process and per
Redis server (each node of the cluster), the CLIENT LIST entries that are
that process's (tests/e2e/budget.py): with no page open, then with
``--pages`` live sockets each watching every queue (an overview each, half
on each process), then after 20 overview loads at once on each process.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from queues.connection import connect
from queues.read.refs import QueueRef
from tests.e2e.budget import connections, open_pages, servers_of, three_connections
from tests.e2e.shipped import (
    Session,
    Several,
    ShippedSite,
)

CLUSTER_PREFIXES = [f"{{p{n}}}" for n in range(10)]


def queues_of(count: int) -> dict[str, list[QueueRef]]:
    """The queues of each connection (by name), ``count`` each."""
    return {
        "default": [QueueRef("bull", f"q{n}") for n in range(count)],
        "staging": [QueueRef("bull", f"q{n}").on("staging") for n in range(count)],
        "eu": [QueueRef(CLUSTER_PREFIXES[n % 10], f"q{n}").on("eu") for n in range(count)],
    }


def print_counts(what: str, site: ShippedSite, servers: dict[str, list[tuple[str, int]]]) -> None:
    every = [server for found in servers.values() for server in found]
    counted = connections(site, every)
    print(f"\n{what}")
    for number, per_server in counted.items():
        parts = []
        for name, found in servers.items():
            parts.append(f"{name} " + "+".join(str(per_server[s]) for s in found))
        print(f"  process {number}: " + ", ".join(parts) + f"  (total {sum(per_server.values())})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--queues", type=int, default=20)
    args = parser.parse_args()
    queues = queues_of(args.queues)
    with (
        tempfile.TemporaryDirectory() as folder,
        three_connections(Path(folder), queues, args.processes) as site,
    ):
        assert isinstance(site.topology, Several)
        clients = [connect(t.url) for t in site.topology.topologies]
        servers = {name: servers_of(c) for name, c in zip(queues, clients, strict=True)}
        time.sleep(3)
        print_counts("no page open", site, servers)
        addresses = [ref.address for refs in queues.values() for ref in refs]
        with open_pages(site, args.pages, addresses):
            time.sleep(2)
            watching = f"{args.pages} live pages, each watching {len(addresses)} queues"
            print_counts(watching, site, servers)
            # The overview's JSON reads every connection's queues.
            session = Session.log_in(site)
            with ThreadPoolExecutor(20 * args.processes) as pool:
                loads = range(20 * args.processes)
                list(
                    pool.map(lambda n: session.get_json("/api/queues/", n % args.processes), loads)
                )
            print_counts("after 20 overview loads at once per process, pages open", site, servers)


if __name__ == "__main__":
    main()
