"""A Redis of the test's own that it can stop and start again (an outage).

Never the session's shared server: the other tests keep theirs. Each start is
a fresh redis-server on the same TCP port, as after a restart without
persistence, so clients must reconnect to the same address.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from queues.redis_server import LocalRedisServer
from tests.e2e.server import free_port


class RestartableRedis:
    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is missing: apt-get install -y redis-server", pytrace=False)
        self.binary = binary
        self.port = free_port()
        self.server: LocalRedisServer | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.server = LocalRedisServer(self.binary, port=self.port).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.server = None


@pytest.fixture
def own_redis() -> Iterator[RestartableRedis]:
    redis = RestartableRedis()
    redis.start()
    yield redis
    redis.stop()
