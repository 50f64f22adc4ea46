"""Two dashboard server processes behind one address (docs/deploy.md).

Two daphne processes on one Redis and one database, as a
proxy spreads one site over them. An engineer retries a failed job on a page
served by process A; the same job's page and the queue's event feed, served by
process B in the same browser, show it live, without a reload. Each process
reads the events streams itself and hands what it read only to its own
sockets, in process (dashboard.live.fanout): with both processes watching the
queue, each has its own reader connection on Redis, nothing goes through
Redis pub/sub, and B's pages receive every event once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, WebSocket, expect
from redis import Redis

from dashboard.live.hub import READER_CLIENT_NAME
from tests.e2e.conftest import Processes, start, wait_live
from tests.e2e.server import DashboardServer, free_port

QUEUE = "e2e-two-processes"
REF = f"bull:{QUEUE}"


@pytest.fixture(scope="module")
def two_servers(
    server_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DashboardServer, DashboardServer]]:
    """Processes A and B: the same settings, database and Redis."""
    logs = tmp_path_factory.mktemp("two-processes")
    servers = (
        DashboardServer(server_env, free_port(), logs / "a.log"),
        DashboardServer(server_env, free_port(), logs / "b.log"),
    )
    for server in servers:
        start(server)
    yield servers
    for server in servers:
        server.stop()


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
        if frame["type"] == "events" and frame["queue"] == REF
        for event in frame["events"]
    ]


def test_a_retry_through_one_process_reaches_a_page_of_the_other_once(
    page: Page,
    processes: Processes,
    redis_client: Redis,
    two_servers: tuple[DashboardServer, DashboardServer],
) -> None:
    a, b = two_servers
    worker = processes.bullmq_worker(QUEUE, "--fail-first")
    (job_id,) = processes.peer_add(QUEUE, "flaky")
    worker.wait_for(rf"failed {job_id} ")
    processes.stop_all()  # nothing takes the retried job: it stays waiting

    # On B: the job's page and the queue's feed of every event.
    job_on_b = page
    job_frames = record_frames(job_on_b)
    job_on_b.goto(f"{b.url}/queues/bull/{QUEUE}/job/{job_id}")
    feed_on_b = page.context.new_page()
    feed_frames = record_frames(feed_on_b)
    feed_on_b.goto(f"{b.url}/queues/bull/{QUEUE}/events/?type=all")
    # On A: the same job's page, where the engineer acts.
    on_a = page.context.new_page()
    on_a.goto(f"{a.url}/queues/bull/{QUEUE}/job/{job_id}")
    for live_page in (job_on_b, feed_on_b, on_a):
        wait_live(live_page)
        live_page.evaluate("window.__noReload = true")
    badge_on_b = job_on_b.locator("[data-job-state]")
    expect(badge_on_b).to_have_attribute("data-job-state", "failed")

    on_a.get_by_role("button", name="Retry").click()

    expect(on_a.locator("#messages")).to_contain_text(job_id)
    expect(badge_on_b).to_have_attribute("data-job-state", "wait", timeout=5000)
    # The feed on B shows the retry's events as they come.
    retried = [
        (stream_id.decode(), fields[b"event"].decode())
        for stream_id, fields in redis_client.xrange(f"{REF}:events")
        if fields.get(b"jobId") == job_id.encode()
    ][-1]
    expect(feed_on_b.locator(f'#event-feed tr[data-event-id="{retried[0]}"]')).to_have_count(1)
    for live_page in (job_on_b, feed_on_b):
        assert live_page.evaluate("window.__noReload === true"), "a page on B was reloaded"

    # Each process reads the stream itself; no event goes through pub/sub. A's
    # page reloaded after its POST: its process's reader stopped with the old
    # socket and starts again for the new one (a look at once could miss it).
    wait_live(on_a)
    deadline = time.monotonic() + 5
    while True:
        readers = [c for c in redis_client.client_list() if c.get("name") == READER_CLIENT_NAME]
        if len(readers) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(readers) >= 2, readers
    assert redis_client.pubsub_channels() == []
    # Every event reached B's pages once.
    feed_ids = event_ids(feed_frames)
    assert retried[0] in feed_ids
    assert len(feed_ids) == len(set(feed_ids)), f"the feed got an event twice: {feed_ids}"
    job_ids = event_ids(job_frames)
    assert retried[0] in job_ids
    assert len(job_ids) == len(set(job_ids)), f"the job page got an event twice: {job_ids}"
