"""The app mounted at /ops/queues/ in another project (tests/hostproject, the
wheel installed into its own virtual environment), in a real Chromium: signed
in through the host's own page, the overview and a queue page whose name holds
"/" and "~" follow Redis live, over the socket route the host added to its
router."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, expect
from redis import Redis

from queues.queue import Queue
from tests.e2e.conftest import wait_live
from tests.e2e.server import DashboardServer
from tests.hosting import MOUNT, PASSWORD, SIGN_IN

QUEUE = "ops/nightly~s"
PAGE = f"{MOUNT}queues/bull/ops~snightly~~s/"


def test_the_mounted_app_updates_live_in_chromium(
    browser: Browser, host_site: DashboardServer, redis_client: Redis
) -> None:
    queue = Queue(QUEUE, redis_client)
    first = queue.add("nightly-report", {"n": 1})
    context = browser.new_context(base_url=host_site.url)
    page = context.new_page()
    try:
        page.goto(PAGE + "?state=wait")
        expect(page).to_have_url(re.compile(re.escape(f"{SIGN_IN}?next=")))
        page.fill("#id_username", "actor@example.com")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        expect(page).to_have_url(host_site.url + PAGE + "?state=wait")
        expect(page.locator(".queue-head h1")).to_contain_text(QUEUE)
        expect(page.locator(f'#job-table tr[data-job-id="{first}"]')).to_be_visible()
        wait_live(page)

        second = queue.add("nightly-report", {"n": 2})
        expect(page.locator(f'#job-table tr[data-job-id="{second}"]')).to_be_visible()
        expect(page.locator('#queue-tabs [data-count-state="wait"]')).to_have_text("2")

        # The overview: the queue's row, linked under the prefix, counts live too.
        page.goto(MOUNT)
        row = page.locator(f'tr[data-queue="bull:{QUEUE}"]')
        expect(row).to_be_visible(timeout=30_000)
        expect(row.locator("a.queue-name")).to_have_attribute("href", PAGE)
        wait_live(page)
        queue.add("nightly-report", {"n": 3})
        expect(row.locator('[data-count-state="wait"]')).to_have_text("3")

        # Logging out goes to the host's own sign-out (ECHOMQ_LOGOUT_URL).
        page.get_by_role("button", name="Log out").click()
        expect(page).to_have_url(host_site.url + SIGN_IN)
    finally:
        context.close()
