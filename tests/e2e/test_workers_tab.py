"""The workers tab in a real Chromium against daphne: workers of both runtimes,
each in its own process, appear as they connect and go as they leave (no
reload: the tab polls its live part), the global concurrency is set through
the page's confirmation, and the tab is screenshot in light, dark and phone
into build/screenshots/workers/."""

from __future__ import annotations

import re
import sys
from typing import Any

from playwright.sync_api import Browser, Page, expect

from queues.connection import connect
from queues.read.refs import QueueRef
from tests.e2e.conftest import SHOTS_ROOT, Processes, wait_live
from tests.e2e.server import DashboardServer, terminate
from tests.e2e.test_screenshots import page_in_look

QUEUE = "e2e-workers"
TAB = f"/queues/bull/{QUEUE}/workers/"
SHOTS = SHOTS_ROOT / "workers"
# The tab polls every 3 s: a worker shows within two polls.
SEEN_MS = 10_000


def row(page: Page, name: str) -> Any:
    return page.locator(f'#workers-live tr[data-worker="{name}"]')


def test_workers_appear_as_they_connect_and_go_as_they_leave(
    page: Page,
    processes: Processes,
    redis_url: str,
    browser: Browser,
    dashboard_server: DashboardServer,
    auth_state: str,
) -> None:
    processes.peer_add(QUEUE, "resize", "--count", "3", "--delay", "3600000")
    client = connect(redis_url)
    client.hset(QueueRef("bull", QUEUE).keys.meta, mapping={"max": "50", "duration": "1000"})
    client.close()
    page.goto(TAB)
    wait_live(page)
    expect(page.locator("#workers-live")).to_contain_text(f"No worker is connected to {QUEUE}")
    expect(page.locator('[data-limit="rate"]')).to_have_text("50 jobs per 1 s")

    bullmq = processes.bullmq_worker(QUEUE, "--name", "thumbnailer-1")
    expect(row(page, "thumbnailer-1")).to_have_count(1, timeout=SEEN_MS)
    ours = processes.spawn(
        sys.executable, "-m", "queues", "worker", QUEUE, "--name", "echo-resizer"
    )
    ours.wait_for(r"worker \S+ on ")
    expect(row(page, "echo-resizer")).to_have_count(1, timeout=SEEN_MS)
    expect(page.locator("[data-worker-count]")).to_have_text("2 connected")
    expect(row(page, "thumbnailer-1").locator("td.num")).to_have_text("2")

    # The global concurrency, through the page's own confirmation dialog.
    page.fill("#concurrency", "2")
    page.get_by_role("button", name="Set…").click()
    expect(page.locator(".message-success")).to_contain_text(
        f"Global concurrency of {QUEUE} set to 2"
    )
    expect(page.locator('[data-limit="concurrency"]')).to_contain_text("2 at once")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.screenshot(path=SHOTS / "workers-light.png", full_page=True)

    for look in ("dark", "phone"):
        with page_in_look(browser, dashboard_server, auth_state, look) as other:
            other.goto(TAB)
            expect(row(other, "echo-resizer")).to_have_count(1)
            other.screenshot(path=SHOTS / f"workers-{look}.png", full_page=True)

    # BullMQ's worker stops: its row goes, ours stays, without a reload.
    page.mouse.move(0, 0)
    terminate(bullmq.process)
    expect(row(page, "thumbnailer-1")).to_have_count(0, timeout=SEEN_MS)
    expect(row(page, "echo-resizer")).to_have_count(1)
    expect(page.locator("[data-worker-count]")).to_have_text("1 connected")
    terminate(ours.process)
    expect(page.locator("#workers-live")).to_contain_text("No worker is connected", timeout=SEEN_MS)


# A worker leaving writes no event: the overview asks again every 10 s
# (live.js QUIET_REFRESH_MS) and the client list it reads is at most 5 s old
# (queues.read.workers.CLIENT_LIST_MAX_AGE_S).
NO_WORKERS_SEEN_MS = 25_000


def test_the_overview_says_no_workers_without_a_reload_when_a_busy_worker_crashes(
    page: Page, processes: Processes
) -> None:
    """Issue 21: jobs waited behind a dead worker and the overview said nothing
    (it waited for five minutes without a finished job, and for no job left
    active: a crashed worker's job stays active, nobody recovers it)."""
    processes.peer_add(QUEUE, "resize", "--count", "4")
    worker = processes.bullmq_worker(QUEUE, "--sleep", "120", "--name", "thumbnailer-1")
    page.goto("/")
    wait_live(page)
    queue_row = page.locator(f'tr[data-queue="bull:{QUEUE}"]')
    expect(queue_row.locator('[data-count-state="active"]')).to_have_text("1", timeout=10_000)
    # Busy on one job while three wait: there, so no alarm.
    expect(queue_row.locator(".badge")).to_have_count(0)
    worker.process.kill()  # a crash: no goodbye, its job stays active
    worker.process.wait(10)
    expect(queue_row.locator(".badge")).to_have_text("no workers", timeout=NO_WORKERS_SEEN_MS)
    expect(queue_row.locator(".health-detail")).to_have_text(
        re.compile(
            r"^3 waiting; none finished; the oldest added (just now|\d+ min ago) \(\d\d:\d\d UTC\)$"
        )
    )
