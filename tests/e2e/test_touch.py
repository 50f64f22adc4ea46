"""Lists that move under live traffic, on a phone (static/dashboard/hold.js): a
finger has no hover, so a list holds from the first touch and while the page
scrolls, says so in words for a finger, and catches up a few seconds after the
hand leaves the screen. A tap lands on the row that was under the finger."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import seed_jobs
from tests.e2e.conftest import Processes, wait_live
from tests.e2e.server import DashboardServer

TRAFFIC = Path(__file__).with_name("traffic.py")
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}


@contextmanager
def phone(browser: Browser, server: DashboardServer, auth_state: str) -> Iterator[Page]:
    context = browser.new_context(base_url=server.url, storage_state=auth_state, **PHONE)
    try:
        yield context.new_page()
    finally:
        context.close()


class Finger:
    """Touches as a phone's screen sends them: CDP touch events, of which the
    browser makes its own scrolls, taps and clicks."""

    def __init__(self, page: Page) -> None:
        self.cdp = page.context.new_cdp_session(page)

    def _send(self, kind: str, *points: dict[str, float]) -> None:
        self.cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": list(points)})

    def down(self, x: float, y: float) -> None:
        self._send("touchStart", {"x": x, "y": y})

    def move(self, x: float, y: float) -> None:
        self._send("touchMove", {"x": x, "y": y})

    def up(self) -> None:
        self._send("touchEnd")

    def swipe(self, x: float, y: float, dy: float, steps: int = 8) -> None:
        """Down at (x, y), drag by dy (negative: the page scrolls down), lift."""
        self.down(x, y)
        for step in range(1, steps + 1):
            self.move(x, y + dy * step / steps)
            time.sleep(0.02)
        self.up()


# The job link of the queue page's row at height y: its job id and its box.
LINK_AT = """(y) => {
  for (const link of document.querySelectorAll("#job-table tr[data-job-id] td.id a")) {
    const box = link.getBoundingClientRect();
    if (box.top <= y && y < box.bottom + 12) {
      const id = link.closest("tr").dataset.jobId;
      return {id: id, x: box.left, y: box.top, w: box.width, h: box.height};
    }
  }
  return null;
}"""


def start_traffic(processes: Processes, queue: str) -> None:
    """Five new jobs a second, from another process: the newest-first list grows at its top."""
    traffic = processes.spawn(sys.executable, str(TRAFFIC), queue, "--interval", "0.2")
    traffic.wait_for("tick 1")


def test_a_tap_lands_on_the_row_that_was_under_the_finger_while_jobs_arrive(
    browser: Browser,
    dashboard_server: DashboardServer,
    auth_state: str,
    processes: Processes,
    redis_client: Redis,
) -> None:
    """A person scrolls the waiting list with a finger, finds a job, and taps
    it while jobs keep arriving: on a phone a row went from y=393 to y=618 in
    5 s, and the tap opened another job."""
    queue = "e2e-touch"
    seed_jobs(redis_client, QueueKeys(queue), "wait", 40)
    with phone(browser, dashboard_server, auth_state) as page:
        page.goto(f"/queues/bull/{queue}/?state=wait")
        wait_live(page)
        start_traffic(processes, queue)
        first = page.locator("#job-table tr[data-job-id]").first
        cue = page.locator("[data-hold-cue]")
        expect(first).not_to_have_attribute("data-job-id", "40")  # the list moves on its own
        finger = Finger(page)

        finger.swipe(200, 700, -200)  # down to the rows below the first screen
        page.wait_for_timeout(300)  # the fling settles
        aimed = page.evaluate(LINK_AT, 420)
        assert aimed is not None, "no job link under the finger"
        page.wait_for_timeout(1500)  # reading, aiming: jobs keep coming

        x, y = aimed["x"] + aimed["w"] / 2, aimed["y"] + aimed["h"] / 2
        finger.down(x, y)
        at_touch = page.evaluate(LINK_AT, y)
        finger.up()

        assert at_touch == aimed, "the row under the finger moved before the tap"
        expect(page).to_have_url(re.compile(rf"/job/{re.escape(aimed['id'])}$"))

        # Back on the list: a scroll holds it and says so in words for a finger;
        # a few quiet seconds later it catches up.
        page.go_back()
        wait_live(page)
        finger.swipe(200, 700, -120)
        expect(cue).to_have_text(re.compile(r"^paused while you scroll · \d+ new"))
        newest = first.get_attribute("data-job-id")
        expect(cue).to_be_hidden(timeout=8_000)
        expect(first).not_to_have_attribute("data-job-id", newest or "")


def test_a_tapped_feed_holds_for_the_finger_and_goes_on_when_it_lifts(
    browser: Browser, dashboard_server: DashboardServer, auth_state: str, processes: Processes
) -> None:
    """A tap leaves the browser's hover on the feed: it once held the feed for
    good after the first tap, saying "paused while pointing"."""
    queue = "e2e-touch-feed"
    processes.peer_add(queue, "seed", "--count", "3")
    with phone(browser, dashboard_server, auth_state) as page:
        page.goto(f"/queues/bull/{queue}/events/")
        wait_live(page)
        status = page.locator("[data-live-controls] .feed-status")
        start_traffic(processes, queue)
        expect(page.locator("#event-feed tr[data-event-id]").nth(12)).to_be_attached()
        on_feed = "([x, y]) => !!document.elementFromPoint(x, y).closest('#event-feed tbody')"
        assert page.evaluate(on_feed, [40, 600])
        Finger(page).swipe(40, 600, 0, steps=1)  # a tap on a row
        expect(status).to_have_text("paused while you touch")
        expect(page.locator("[data-live-controls] .feed-news")).to_have_text(re.compile(r"new"))
        expect(status).not_to_contain_text("paused", timeout=8_000)
        expect(page.locator("[data-live-controls] .feed-news")).to_be_hidden()
