"""A Redis a test may take away and bring back: its own redis-server, never the session's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from queues.redis_server import LocalRedisServer, server_binary
from tests.e2e.server import free_port


@dataclass
class RestartableRedis:
    """A private redis-server on a TCP port; ``stop`` and ``start`` keep the port
    (and the data, when made with ``keep_data``), as a restarted Redis would."""

    server: LocalRedisServer

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        """The process goes (SIGTERM: it writes its data first); its directory stays."""
        process = self.server.process
        assert process is not None
        process.terminate()
        process.wait(10)
        self.server.process = None

    def start(self) -> None:
        self.server.start()


@contextmanager
def restartable_redis(*, keep_data: bool = True) -> Iterator[RestartableRedis]:
    """``keep_data``: a restart keeps what was written (append-only file), as a
    production Redis with persistence would; without, each start is empty."""
    persistence = ("--appendonly", "yes", "--appendfsync", "always") if keep_data else ()
    server = LocalRedisServer(server_binary()[0], port=free_port(), extra_args=persistence).start()
    try:
        yield RestartableRedis(server)
    finally:
        server.stop()


@pytest.fixture
def own_redis() -> Iterator[RestartableRedis]:
    """A test's own Redis to take away and bring back empty (tests import this
    fixture): what was there before cannot stand in for what came after."""
    with restartable_redis(keep_data=False) as redis:
        yield redis
