"""Two server processes of the site as shipped, behind one address
(docs/deploy.md: two daphne processes in nginx's upstream; here the TLS
front, which hands them connections in turn).

A login made through one process holds on the other: the session is in the
database they share, signed with the key they share. Pages whose sockets the
front handed to different processes both follow a retry done through either,
live, each event once: each process reads the events streams itself (its own
reader connection on Redis) and hands what it read only to its own sockets
(dashboard.live.hub); nothing goes through Redis pub/sub. Which process
collects the history and builds error groups: tests/test_collector_processes.py.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, WebSocket, expect
from redis import Redis

from dashboard.live.hub import READER_CLIENT_NAME
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.e2e.shipped import HOST, ShippedSite, SingleRedis, wait_live, wait_until

REF = QueueRef("bull", "two-processes")


@pytest.fixture(scope="module")
def topology() -> SingleRedis:
    return SingleRedis()


@pytest.fixture(scope="module")
def site_processes() -> int:
    return 2


@pytest.fixture
def redis(site: ShippedSite) -> Iterator[Redis]:
    client = site.redis()
    yield client
    client.close()


def record_frames(page: Page) -> list[dict[str, Any]]:
    """Every message the page's sockets receive, decoded, in order."""
    frames: list[dict[str, Any]] = []

    def on_socket(socket: WebSocket) -> None:
        socket.on("framereceived", lambda payload: frames.append(json.loads(payload)))

    page.on("websocket", on_socket)
    return frames


def event_ids(frames: list[dict[str, Any]]) -> list[str]:
    return [
        event["id"]
        for frame in frames
        if frame["type"] == "events" and frame["queue"] == REF.qualified
        for event in frame["events"]
    ]


def test_a_login_through_the_front_holds_on_each_process(
    site: ShippedSite, site_login: str
) -> None:
    """The browser logged in once, through the front (one process served it);
    each process, asked directly as the front would, serves it the overview."""
    state = json.loads(Path(site_login).read_text())
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in state["cookies"])
    for server in site.servers:
        request = urllib.request.Request(  # noqa: S310 (our own http:// URL)
            server.url + "/",
            headers={"Host": HOST, "X-Forwarded-Proto": "https", "Cookie": cookie},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310
            assert answer.geturl() == server.url + "/", "sent to the login page"
            assert 'Log out <span class="muted">oncall</span>' in answer.read().decode()


def test_a_retry_through_one_process_reaches_pages_on_both_once(
    page: Page, site: ShippedSite, redis: Redis
) -> None:
    assert site.front is not None
    queue = Queue(REF.name, redis, prefix=REF.prefix)
    worker = site.worker(REF.name, REF.prefix)
    job_id = queue.add("send-receipt", {"n": 1, "to": "user1@example.com"})  # card declined
    wait_until(lambda: queue.get_state(job_id) == "failed", 20, "the job failed")
    worker.stop()  # nothing takes the retried job: it stays waiting

    sockets_before = len(site.front.upgraded)
    # The job's page and the queue's feed of every event, then the job's page
    # again, where the engineer acts: the front hands their sockets to the
    # processes in turn, so the first two are on different processes.
    job_page = page
    job_frames = record_frames(job_page)
    job_page.goto(f"/queues/{REF.prefix}/{REF.name}/job/{job_id}")
    wait_live(job_page)
    feed = page.context.new_page()
    feed_frames = record_frames(feed)
    feed.goto(f"/queues/{REF.prefix}/{REF.name}/events/?type=all")
    wait_live(feed)
    actor = page.context.new_page()
    actor.goto(f"/queues/{REF.prefix}/{REF.name}/job/{job_id}")
    wait_live(actor)
    on = site.front.upgraded[sockets_before:]
    assert len(on) == 3, f"the sockets went to {on}"
    assert on[0] != on[1], f"the sockets went to {on}"
    for live_page in (job_page, feed):
        live_page.evaluate("window.__noReload = true")
    badge = job_page.locator("[data-job-state]")
    expect(badge).to_have_attribute("data-job-state", "failed")

    actor.get_by_role("button", name="Retry").click()

    expect(actor.locator("#messages")).to_contain_text(job_id)
    expect(badge).to_have_attribute("data-job-state", "wait", timeout=5000)
    retried = [
        stream_id.decode()
        for stream_id, fields in redis.xrange(REF.keys.events)
        if fields.get(b"jobId") == job_id.encode()
    ][-1]
    expect(feed.locator(f'#event-feed tr[data-event-id="{retried}"]')).to_have_count(1)
    for live_page in (job_page, feed):
        assert live_page.evaluate("window.__noReload === true"), "a page was reloaded"

    # Each process reads the stream itself; no event goes through pub/sub.
    def readers() -> int:
        return sum(1 for c in redis.client_list() if c.get("name") == READER_CLIENT_NAME)

    wait_until(lambda: readers() >= 2, 5, "a reader in each process")
    assert redis.pubsub_channels() == []
    # Every event reached each page once.
    for frames in (job_frames, feed_frames):
        ids = event_ids(frames)
        assert retried in ids
        assert len(ids) == len(set(ids)), f"a page got an event twice: {ids}"
