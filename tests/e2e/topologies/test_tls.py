"""The site as shipped (docs/deploy.md, "TLS") on Redis servers that speak TLS
only, with certificates made by the test (tests/tls.py), in one site start:

- ``REDIS_URL``: a server that checks client certificates, the URL naming the
  CA, the client certificate and its key (redis-py's ``ssl_*`` options);
- a second connection (``ECHOMQ_CONNECTIONS``, named ``nocert``): a server that
  does not, the URL naming the CA only.

The on-call walk runs on the first (a worker of our runtime over TLS, the
live pages, /metrics from the history collector, a retry); the second's
queue page shows its jobs and follows a new one live.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from queues.connection import connect
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.e2e.shipped import Several, ShippedSite, TlsOnlyRedis, on_call_walk, wait_live


@pytest.fixture(scope="module")
def topology() -> Several:
    return Several(
        [TlsOnlyRedis(check_clients=True), TlsOnlyRedis(check_clients=False)],
        names=["nocert"],
        prefixes=[["bull"]],
    )


def test_the_shipped_site_on_redis_checking_client_certificates(
    page: Page, site: ShippedSite, topology: Several
) -> None:
    assert "ssl_certfile=" in topology.url
    on_call_walk(page, site, QueueRef("bull", "receipts"))


def test_a_second_connection_over_tls_without_client_certificates(
    page: Page, topology: Several
) -> None:
    url = topology.topologies[1].url
    assert url.startswith("rediss://")
    assert "ssl_ca_certs=" in url
    assert "ssl_certfile=" not in url
    client = connect(url)
    queue = Queue("refunds", client)
    queue.add_bulk([("refund", {"order": f"ord_{n:04d}"}, None) for n in range(3)])
    page.goto("/c/nocert/queues/bull/refunds/?state=wait")
    wait_live(page)
    waiting = page.locator('.tabs [data-count-state="wait"]')
    expect(waiting).to_have_attribute("data-count", "3")
    queue.add("refund", {"order": "ord_0003"})
    expect(waiting).to_have_attribute("data-count", "4", timeout=10_000)
    expect(page.locator("#job-table tr[data-job-id]")).to_have_count(4)
    client.close()
