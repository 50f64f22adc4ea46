"""Shared fixtures: a real Redis server for every test that touches Redis.

The server is ``REDIS_URL`` when set (its database is flushed around each
test), else a private redis-server / embedded Valkey started once per test
session by ``queues.redis_server`` — never a mock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from redis import Redis

from queues.connection import connect
from queues.redis_server import resolve_redis


@pytest.fixture(scope="session")
def redis_url() -> str:
    return resolve_redis().url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Redis]:
    """A bytes client on a flushed database."""
    client = connect(redis_url)
    client.flushall()
    yield client
    client.flushall()
    client.close()


@pytest.fixture
def prefix() -> str:
    return "bull"


def pytest_report_header() -> str:
    return f"redis: {'REDIS_URL' if os.environ.get('REDIS_URL') else 'private server'}"


@pytest.fixture(scope="session")
def cluster_url() -> Iterator[str]:
    """A seed URL (``...?cluster=1``) of a local 3-node Redis Cluster, for the session."""
    from tests.cluster import LocalCluster

    cluster = LocalCluster().start()
    yield cluster.url
    cluster.stop()
