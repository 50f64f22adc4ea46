"""Shared fixtures: a real Redis server for every test that touches Redis.

The server is ``REDIS_URL`` when set (its database is flushed around each
test), else a private redis-server / embedded Valkey started once per test
session by ``queues.redis_server`` — never a mock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from redis import Redis

from queues.connection import connect
from queues.keys import QueueKeys
from queues.redis_server import LocalRedisServer, resolve_redis, server_binary

# The app installed from its wheel into tests/hostproject (session fixtures).
from tests.hosting import built_wheel, host_python, host_site  # noqa: F401

# No metrics history collector runs unless a test starts one: not in this
# process (tests import dashboard.asgi), nor in the servers tests start (they
# inherit the environment; a test wanting one passes ECHOMQ_HISTORY_COLLECTOR=1).
# The site as shipped runs it on, on every topology: tests/e2e/shipped.py
# (tests/e2e/topologies/, tests/test_collector_processes.py) keeps none of
# this environment.
os.environ["ECHOMQ_HISTORY_COLLECTOR"] = "0"


def pytest_configure() -> None:
    from django.conf import settings

    settings.ECHOMQ_HISTORY_COLLECTOR = False


@pytest.fixture(scope="session")
def redis_url() -> str:
    return resolve_redis().url


@contextmanager
def flushed(url: str) -> Iterator[Redis]:
    """A bytes client on the server at ``url``, flushed before and after."""
    client = connect(url)
    client.flushall()
    yield client
    client.flushall()
    client.close()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Redis]:
    """A bytes client on a flushed database."""
    with flushed(redis_url) as client:
        yield client


@pytest.fixture
def prefix() -> str:
    return "bull"


@pytest.fixture
def keys() -> QueueKeys:
    """The keys of queue "q" (default prefix), for tests that drive scripts directly."""
    return QueueKeys("q")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run last: Playwright's sync API keeps an event loop running
    in the main thread for the rest of the session, which asyncio tests
    collected after it could not start their own loop beside."""
    items.sort(key=lambda item: "tests/e2e/" in item.nodeid.replace("\\", "/"))


def pytest_report_header() -> str:
    return f"redis: {'REDIS_URL' if os.environ.get('REDIS_URL') else 'private server'}"


@pytest.fixture(autouse=True)
def _no_discovery_outlives_its_test() -> Iterator[None]:
    """Discovery threads a test started (the dashboard's reads start one per
    client) stop with it: left running against a Redis the test has stopped,
    they warn about it into a later test's captured log, which tests that
    count warnings read (the collector's warn-once test failed so in CI)."""
    yield
    from queues import discovery

    discovery.clear_discovery_cache()


@pytest.fixture(scope="session")
def cluster_url() -> Iterator[str]:
    """A seed URL (``...?cluster=1``) of a local 3-node Redis Cluster, for the session."""
    from queues import discovery
    from tests.cluster import LocalCluster

    cluster = LocalCluster().start()
    yield cluster.url
    # Discovery walks the cluster in threads that outlive the tests: stopped
    # first, they do not log the cluster's absence into closed capture streams.
    discovery.clear_discovery_cache()
    cluster.stop()


@pytest.fixture
def cluster(cluster_url: str) -> Iterator[Redis]:
    """A client of the session's cluster, flushed before and after the test.
    FLUSHALL goes to every primary; KEYS (redis-py sends it to one node) would
    leave the keys of the other nodes to the next test: a wait list of 22
    jobs where a test added 20."""
    from redis.cluster import RedisCluster

    client = connect(cluster_url)
    assert isinstance(client, RedisCluster)
    client.flushall()
    yield client
    client.flushall()
    client.close()


# --- dashboard: Django settings pointing at the test Redis, users by role -------------


@pytest.fixture
def dashboard_redis(redis_client: Redis, redis_url: str, settings: Any) -> Redis:
    """The flushed test Redis, with the dashboard configured to read it."""
    from django.core.cache import cache

    from queues import discovery
    from queues.read.workers import forget_client_lists

    settings.REDIS_URL = redis_url
    settings.ECHOMQ_READ_ONLY = False
    settings.ECHOMQ_QUEUES = []
    settings.ECHOMQ_PREFIXES = ["bull"]
    discovery.clear_discovery_cache()
    forget_client_lists()  # an earlier test's workers, seen a few seconds ago
    cache.clear()  # what an earlier test's pages kept for a few seconds (the last hour)
    return redis_client


@pytest.fixture(scope="session")
def second_redis_url() -> Iterator[str]:
    """Another private redis-server, for the session: a second Redis connection."""
    server = LocalRedisServer(server_binary()[0]).start()
    yield server.url
    server.stop()


@pytest.fixture
def second_redis(second_redis_url: str) -> Iterator[Redis]:
    """A bytes client on the second server, flushed."""
    with flushed(second_redis_url) as client:
        yield client


@pytest.fixture
def staging_redis(
    dashboard_redis: Redis, second_redis: Redis, second_redis_url: str, settings: Any
) -> Redis:
    """The second server, flushed, served as the connection "staging" beside
    the default one (``dashboard_redis``)."""
    from dashboard.shared import connection_groups

    connection_groups._unreachable.clear()  # what an earlier test's servers said
    settings.ECHOMQ_CONNECTIONS = [
        {"name": "staging", "url": second_redis_url, "prefixes": ["bull"]}
    ]
    return second_redis


@pytest.fixture
def make_user(db: None) -> Callable[..., Any]:
    """make_user("viewer" | "actor" | "editor" | "nonstaff" | "superuser" |
    "staff_noperm"); an editor may view and change jobs, not act."""
    from django.contrib.auth.models import Permission, User

    def make(role: str, username: str | None = None) -> User:
        name = username or role
        # No password: tests log in with force_login, and hashing one costs ~0.3 s.
        if role == "superuser":
            return User.objects.create_superuser(name, password=None)
        user = User.objects.create_user(name, password=None, is_staff=role != "nonstaff")
        codenames = {
            "viewer": ["view_queues"],
            "actor": ["view_queues", "act_on_queues"],
            "editor": ["view_queues", "change_jobs"],
        }
        for codename in codenames.get(role, []):
            user.user_permissions.add(Permission.objects.get(codename=codename))
        return user

    return make


@pytest.fixture
def client_as(make_user: Callable[..., Any]) -> Callable[[str], Any]:
    """A logged-in Django test client for a role (None: anonymous)."""
    from django.test import Client

    def login(role: str | None) -> Client:
        client = Client()
        if role is not None:
            client.force_login(make_user(role))
        return client

    return login
