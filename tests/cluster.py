"""A throwaway 3-node Redis Cluster on 127.0.0.1 for the scale-out tests.

Three masters, no replicas, each a private redis-server (no persistence) on a
free port whose cluster-bus port (port + 10000) is free too. ``start()`` returns
once every node reports ``cluster_state:ok``; ``stop()`` removes everything.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field

from queues.redis_server import LocalRedisServer, RedisUnavailable


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """``count`` ports p with p and p + 10000 (its cluster bus) both free."""
    pick = rng or random.Random()
    ports: list[int] = []
    while len(ports) < count:
        port = pick.randrange(20000, 45000)
        taken = {p for q in ports for p in (q, q + 10000)}
        if port in taken or port + 10000 in taken:
            continue
        if _port_is_free(port) and _port_is_free(port + 10000):
            ports.append(port)
    return ports


@dataclass
class LocalCluster:
    nodes: int = 3
    servers: list[LocalRedisServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        """A seed URL for ``queues.connection.connect`` (cluster=1 picks the cluster client)."""
        return f"redis://127.0.0.1:{self.servers[0].port}/0?cluster=1"

    def start(self, timeout: float = 20.0) -> LocalCluster:
        binary = shutil.which("redis-server")
        cli = shutil.which("redis-cli")
        if binary is None or cli is None:
            raise RedisUnavailable("the cluster tests need redis-server and redis-cli on PATH")
        try:
            for port in free_cluster_ports(self.nodes):
                cluster_args = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
                self.servers.append(LocalRedisServer(binary, port=port, extra_args=cluster_args))
                self.servers[-1].start()
            addresses = [f"127.0.0.1:{s.port}" for s in self.servers]
            create = ["--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"]
            subprocess.run(
                [cli, *create],
                check=True,
                capture_output=True,
                timeout=timeout,
            )
            self._wait_until_ok(cli, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ok(self, cli: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pending = list(self.servers)
        while pending:
            info = subprocess.run(
                [cli, "-p", str(pending[0].port), "cluster", "info"],
                capture_output=True,
                text=True,
                timeout=timeout,
            ).stdout
            if "cluster_state:ok" in info:
                pending.pop(0)
            elif time.monotonic() > deadline:
                raise RedisUnavailable(f"cluster not ok after {timeout}s: {info[:200]}")
            else:
                time.sleep(0.05)

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
        self.servers.clear()
