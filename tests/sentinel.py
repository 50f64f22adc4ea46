"""A throwaway Redis Sentinel set on 127.0.0.1: a master, a replica, three sentinels.

All real ``redis-server`` processes, the sentinels started with
``--sentinel``, with short detection times so a failover takes seconds
(``down_after_ms``, ``failover_timeout_ms``; production keeps Redis's 30 s
and 3 min). ``start()`` returns once the replica is in sync and every
sentinel knows the replica and the two other sentinels (a failover needs
their votes). ``kill_master()`` SIGKILLs the master; ``wait_for_new_master``
says when the sentinels named another one.

``password`` protects the master and the replica (the URL's
``user:password@``), ``sentinel_password`` the sentinels themselves (the
URL's ``sentinel_password=``). With ``tls`` (tests/tls.py) every one of
them speaks TLS only, replication and the sentinels' talk included: the
URL is ``rediss+sentinel://`` with the CA in ``ssl_ca_certs``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from redis import Redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from queues.redis_server import LocalRedisServer, RedisUnavailable, server_binary
from tests.e2e.server import free_port, terminate
from tests.tls import Certificates, client_options, tls_settings, url_options

MASTER_NAME = "queues"
# Sentinel commands go through execute_command: redis-py 6.4's sentinel_master()
# and sentinel_get_master_addr_by_name() on a plain client hand their reply
# parser an argument it does not take (TypeError).


@dataclass
class LocalSentinel:
    """One ``redis-server --sentinel`` on a TCP port, its config file in its own folder."""

    binary: str
    port: int = field(default_factory=free_port)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="echomq-sentinel-")))
    process: subprocess.Popen[bytes] | None = None
    tls: Certificates | None = None

    def start(
        self, config: str, password: str | None, tls: Certificates | None = None
    ) -> LocalSentinel:
        # A sentinel rewrites its config file as it learns: it must be its own.
        self.tls = tls
        path = self.workdir / "sentinel.conf"
        port = f"port {self.port}" if tls is None else "port 0"
        path.write_text(f"{port}\nbind 127.0.0.1\ndir {self.workdir}\n{config}")
        options = tls_settings(tls, self.port, check_clients=False) if tls else ()
        self.process = subprocess.Popen(
            [
                self.binary,
                str(path),
                "--sentinel",
                "--logfile",
                str(self.workdir / "log"),
                *options,
            ],
            stdin=subprocess.DEVNULL,
        )
        client = self.client(password)
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError, RedisError):
                if client.ping():
                    break
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RedisUnavailable(f"sentinel on {self.port} did not start: {self.log()}")
            time.sleep(0.02)
        client.close()
        return self

    def client(self, password: str | None) -> Redis:
        return Redis(
            host="127.0.0.1",  # the name its certificate gives
            port=self.port,
            password=password,
            socket_timeout=2,
            decode_responses=True,
            retry=Retry(NoBackoff(), 0),
            **(client_options(self.tls) if self.tls else {}),
        )

    def log(self) -> str:
        log = self.workdir / "log"
        return log.read_text() if log.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            terminate(self.process, 5)
        self.process = None
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class LocalSentinelSet:
    password: str | None = None
    sentinel_password: str | None = None
    # TLS everywhere (clients, replication, sentinels), with these certificates.
    tls: Certificates | None = None
    down_after_ms: int = 1000
    failover_timeout_ms: int = 2000
    master_name: str = MASTER_NAME
    servers: list[LocalRedisServer] = field(default_factory=list)  # master first
    # Each server's TCP port (its TLS port with tls), by its index in servers.
    ports: list[int] = field(default_factory=list)
    sentinels: list[LocalSentinel] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The URL every client is given: the three sentinels and the master's name."""
        auth = f":{quote(self.password, safe='')}@" if self.password else ""
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        query = []
        if self.sentinel_password:
            query.append(f"sentinel_password={quote(self.sentinel_password)}")
        if self.tls:
            query.append(url_options(self.tls, check_clients=False))
        scheme = "rediss+sentinel" if self.tls else "redis+sentinel"
        return f"{scheme}://{auth}{hosts}/{self.master_name}/0?{'&'.join(query)}".rstrip("?")

    def _server(self, binary: str, *options: str) -> LocalRedisServer:
        port = free_port()
        # Replicas sync at once (Redis waits 5 s for more of them by default).
        options = ("--repl-diskless-sync-delay", "0", *options)
        if self.tls:
            options += tls_settings(self.tls, port, check_clients=False)
        plain_port = 0 if self.tls else port  # with TLS: no plain TCP port
        server = LocalRedisServer(binary, port=plain_port, extra_args=options).start()
        self.servers.append(server)
        self.ports.append(port)
        if self.password:
            # Over its unix socket, after start: LocalRedisServer's readiness
            # PING has no password.
            client = Redis(unix_socket_path=str(server.socket_path))
            client.config_set("masterauth", self.password)
            client.config_set("requirepass", self.password)
            client.close()
        return server

    def start(self, timeout: float = 20.0) -> LocalSentinelSet:
        binary = server_binary()[0]
        try:
            self._server(binary)
            self._server(binary, "--replicaof", "127.0.0.1", str(self.ports[0]))
            self.sentinels = [LocalSentinel(binary) for _ in range(3)]
            ids = [secrets.token_hex(20) for _ in self.sentinels]
            for sentinel, own_id in zip(self.sentinels, ids, strict=True):
                config = self._sentinel_config(own_id, ids, *self.ports)
                sentinel.start(config, self.sentinel_password, self.tls)
            self._wait_until_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _sentinel_config(
        self, own_id: str, ids: list[str], master_port: int, replica_port: int
    ) -> str:
        """Quorum 2 of 3. Each sentinel is told the replica and the others at
        start, as a running set's rewritten config files would tell them:
        otherwise they learn of each other from hello messages every 2 s."""
        name = self.master_name
        lines = [
            f"sentinel myid {own_id}",
            f"sentinel monitor {name} 127.0.0.1 {master_port} 2",
            f"sentinel down-after-milliseconds {name} {self.down_after_ms}",
            f"sentinel failover-timeout {name} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {name} 1",
            f"sentinel known-replica {name} 127.0.0.1 {replica_port}",
        ]
        lines += [
            f"sentinel known-sentinel {name} 127.0.0.1 {other.port} {other_id}"
            for other, other_id in zip(self.sentinels, ids, strict=True)
            if other_id != own_id
        ]
        if self.password:
            lines.append(f'sentinel auth-pass {name} "{self.password}"')
        if self.sentinel_password:
            # Its own password, and the one it gives the other sentinels.
            lines += [f'requirepass "{self.sentinel_password}"']
            lines += [f'sentinel sentinel-pass "{self.sentinel_password}"']
        return "\n".join(lines) + "\n"

    def _wait_until_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        master = self.data_client(self.servers[0])
        while True:
            info = master.info("replication")
            synced = info.get("connected_slaves") == 1 and "online" in str(info.get("slave0"))
            states = [self.sentinel_state(s) for s in self.sentinels]
            known = all(
                state and state["num-other-sentinels"] == 2 and state["num-slaves"] == 1
                for state in states
            )
            if synced and known:
                master.close()
                return
            if time.monotonic() > deadline:
                raise RedisUnavailable(f"sentinel set not ready after {timeout}s: {states}")
            time.sleep(0.1)

    def data_client(self, server: LocalRedisServer) -> Redis:
        port = self.ports[self.servers.index(server)]
        tls = client_options(self.tls) if self.tls else {}
        return Redis(host="127.0.0.1", port=port, password=self.password, socket_timeout=2, **tls)  # type: ignore[arg-type]

    def sentinel_state(self, sentinel: LocalSentinel) -> dict[str, object] | None:
        client = sentinel.client(self.sentinel_password)
        try:
            state: dict[str, object] = client.execute_command("SENTINEL MASTER", self.master_name)
            return state
        except (OSError, RedisError):
            return None
        finally:
            client.close()

    def master_address(self) -> tuple[str, int] | None:
        """The master the sentinels name (the first that answers)."""
        for sentinel in self.sentinels:
            client = sentinel.client(self.sentinel_password)
            try:
                address = client.execute_command(
                    "SENTINEL GET-MASTER-ADDR-BY-NAME", self.master_name
                )
            except (OSError, RedisError):
                continue
            finally:
                client.close()
            if address:
                return str(address[0]), int(address[1])
        return None

    @property
    def master(self) -> LocalRedisServer:
        address = self.master_address()
        for server, port in zip(self.servers, self.ports, strict=True):
            if address == ("127.0.0.1", port):
                return server
        raise AssertionError(f"the sentinels name {address}, none of ours")

    def kill_master(self) -> LocalRedisServer:
        """SIGKILL to the master: no goodbye to its clients, replica or sentinels."""
        master = self.master
        assert master.process is not None
        os.kill(master.process.pid, signal.SIGKILL)
        master.process.wait()
        return master

    def wait_for_new_master(self, old: LocalRedisServer, timeout: float = 30.0) -> float:
        """Seconds until every sentinel names a master other than ``old``."""
        began = time.monotonic()
        old_address = ("127.0.0.1", self.ports[self.servers.index(old)])
        while True:
            addresses = set()
            for sentinel in self.sentinels:
                client = sentinel.client(self.sentinel_password)
                try:
                    address = client.execute_command(
                        "SENTINEL GET-MASTER-ADDR-BY-NAME", self.master_name
                    )
                    addresses.add((str(address[0]), int(address[1])))
                finally:
                    client.close()
            if old_address not in addresses and len(addresses) == 1:
                return time.monotonic() - began
            if time.monotonic() - began > timeout:
                raise AssertionError(f"no new master within {timeout} s: {addresses}")
            time.sleep(0.05)

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.stop()
        self.sentinels.clear()
        self.servers.clear()
        self.ports.clear()
