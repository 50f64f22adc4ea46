"""The site as shipped (docs/deploy.md, "Redis Cluster") on a 3-node cluster.

The user's settings are the document's with ``REDIS_URL=…?cluster=1`` and
their queues' hash-tagged prefix. On main the site did not start: importing
dashboard/asgi.py started the history collector, which raised AttributeError
('RedisCluster' object has no attribute 'connection_pool'), and daphne exited.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from queues.read.refs import QueueRef
from tests.e2e.shipped import ClusterRedis, ShippedSite, on_call_walk

PREFIX = "{bull}"


@pytest.fixture(scope="module")
def topology() -> ClusterRedis:
    return ClusterRedis()


@pytest.fixture(scope="module")
def site_settings() -> dict[str, str]:
    return {"ECHOMQ_PREFIXES": PREFIX}


def test_the_shipped_site_on_a_redis_cluster(page: Page, site: ShippedSite) -> None:
    on_call_walk(page, site, QueueRef(PREFIX, "receipts"))
