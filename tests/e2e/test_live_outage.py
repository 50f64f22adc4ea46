"""A Redis outage seen from a real browser: the page says so, then resumes losing nothing.

The test has its own redis-server (tests.outage) and its own daphne on it, so
stopping Redis touches no other test. Redis keeps its data across the restart
(append-only file), as a restarted production Redis would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from queues.connection import connect
from queues.keys import QueueKeys
from queues.queue import Queue
from tests.e2e.conftest import log_in, start, wait_live
from tests.e2e.server import DashboardServer, free_port, prepare
from tests.outage import RestartableRedis, restartable_redis

QUEUE = "e2e-outage"


@pytest.fixture
def own_redis() -> Iterator[RestartableRedis]:
    with restartable_redis() as redis:
        yield redis


@pytest.fixture
def page_on_own_server(
    browser: Browser, own_redis: RestartableRedis, tmp_path: Path
) -> Iterator[Page]:
    """A logged-in page of a daphne of this test's own, on its own Redis."""
    server = DashboardServer(
        prepare(own_redis.url, tmp_path, ECHOMQ_QUEUES=QUEUE), free_port(), tmp_path / "daphne.log"
    )
    start(server)
    context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 860})
    page = context.new_page()
    log_in(page, server.url)
    yield page
    context.close()
    server.stop()


def feed_ids(page: Page) -> list[str]:
    """The stream ids of the feed's rows, oldest first."""
    ids = page.eval_on_selector_all(
        "#event-feed tr[data-event-id]", "rows => rows.map(r => r.dataset.eventId)"
    )
    return list(reversed(ids))


def newer(ids: list[str], than: str) -> list[str]:
    def key(stream_id: str) -> tuple[int, ...]:
        return tuple(map(int, stream_id.split("-")))

    return [i for i in ids if key(i) > key(than)]


def test_a_redis_outage_shows_as_unreachable_and_the_page_resumes_with_nothing_lost(
    page_on_own_server: Page, own_redis: RestartableRedis
) -> None:
    page = page_on_own_server
    redis = connect(own_redis.url)
    queue = Queue(QUEUE, redis)
    queue.add("before-render")
    # Every event, not the default "state changes": the check below compares
    # the feed with the whole stream (added events included).
    page.goto(f"/queues/bull/{QUEUE}/events/?type=all")
    wait_live(page)
    page.evaluate("window.__noReload = true")
    rendered = page.get_attribute("#event-feed", "data-last-id")
    assert rendered
    before = queue.add("before-outage")
    expect(page.locator(f'#event-feed tr[data-job-id="{before}"]')).not_to_have_count(0)

    own_redis.stop()
    stopped = time.monotonic()
    html = page.locator("html")
    expect(html).to_have_attribute("data-live", "unreachable", timeout=5_000)
    assert time.monotonic() - stopped < 5
    status = page.evaluate(
        "getComputedStyle(document.querySelector('.live-status'), '::after').content"
    )
    assert "Redis unreachable" in status
    assert status.strip('"') != "live"
    stale = page.evaluate("getComputedStyle(document.querySelector('#event-feed')).opacity")
    assert float(stale) < 1, "the feed does not look stale"

    own_redis.start()
    expect(html).to_have_attribute("data-live", "open", timeout=15_000)
    after = [queue.add(f"after-{n}") for n in range(3)]
    for job_id in after:
        expect(
            page.locator(f'#event-feed tr[data-job-id="{job_id}"][data-event="waiting"]')
        ).to_have_count(1, timeout=10_000)
    shown = feed_ids(page)
    in_stream = [i.decode() for i, _ in redis.xrange(QueueKeys(QUEUE).events)]
    assert len(shown) == len(set(shown)), "an event was shown twice"
    assert newer(shown, rendered) == newer(in_stream, rendered), "an event was lost"
    assert page.evaluate("window.__noReload === true"), "the page was reloaded"
    redis.close()
