"""The site as shipped (docs/deploy.md, "One Redis") on one redis-server."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from queues.read.refs import QueueRef
from tests.e2e.shipped import ShippedSite, SingleRedis, on_call_walk


@pytest.fixture(scope="module")
def topology() -> SingleRedis:
    return SingleRedis()


def test_the_shipped_site_on_one_redis(page: Page, site: ShippedSite) -> None:
    on_call_walk(page, site, QueueRef("bull", "receipts"))
