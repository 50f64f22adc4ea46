"""The site as shipped (docs/deploy.md, "ACL users") on a redis-server whose
users are the document's ACL file: the site logs in as ``echomq-dashboard``,
the worker as ``echomq-worker``, each with exactly its ACL. The on-call walk
(pages, live updates, the history collector, /metrics, a retry) and the
worker run without Redis refusing either anything (its ACL log stays empty).
The read-only user's pages and refusals: tests/test_acl.py.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from queues.connection import connect
from queues.read.refs import QueueRef
from tests.e2e.shipped import AclRedis, ShippedSite, on_call_walk


@pytest.fixture(scope="module")
def topology() -> AclRedis:
    return AclRedis()


def test_the_shipped_site_as_its_acl_user(
    page: Page, site: ShippedSite, topology: AclRedis
) -> None:
    assert topology.url.startswith("redis://echomq-dashboard:")
    admin = connect(topology.admin_url)
    admin.execute_command("ACL", "LOG", "RESET")
    on_call_walk(page, site, QueueRef("bull", "receipts"))
    refused = admin.execute_command("ACL", "LOG")
    assert refused == [], refused
    # Both users did their part: the site's clients and the worker's were connected.
    users = {client["user"] for client in admin.client_list()}
    assert "echomq-dashboard" in users
    admin.close()
