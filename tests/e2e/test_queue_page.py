"""The queue page in a real Chromium: its actions, its numbers, its history."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import seed_jobs
from tests.e2e.conftest import wait_live


def test_back_after_paging_with_htmx_shows_the_whole_page(page: Page, redis_client: Redis) -> None:
    """htmx fetched page 2 as a fragment and pushed its URL: Back must never
    paint that fragment as the page, whether the browser reloads the URL from
    its cache or htmx asks the server to restore its history."""
    queue = "e2e-pager"
    seed_jobs(redis_client, QueueKeys(queue), "wait", 50)  # wait = [50 .. 1]
    page.goto(f"/queues/bull/{queue}/?state=wait&size=20")
    wait_live(page)
    rows = page.locator("#job-table tr[data-job-id]")
    page.get_by_role("link", name="Older →").click()
    expect(page).to_have_url(f"/queues/bull/{queue}/?state=wait&size=20&page=2")
    expect(rows.first).to_have_attribute("data-job-id", "30")
    page.get_by_role("link", name="Older →").click()
    expect(rows.first).to_have_attribute("data-job-id", "10")

    # Leave for a job page, then Back: the browser loads page 3's URL itself.
    page.locator('#job-table a[href$="/job/10"]').click()
    expect(page.locator("[data-job-state]")).to_be_visible()
    page.go_back()
    expect(rows.first).to_have_attribute("data-job-id", "10")
    expect(page.locator("header.topbar")).to_have_count(1)
    expect(page.locator("nav.tabs")).to_have_count(1)

    # Back within the page with htmx's snapshot gone: htmx asks the server.
    page.evaluate("sessionStorage.removeItem('htmx-history-cache')")
    page.go_back()
    expect(rows.first).to_have_attribute("data-job-id", "30")
    expect(page.locator("header.topbar")).to_have_count(1)
    expect(page.locator("nav.tabs")).to_have_count(1)
    expect(rows).to_have_count(20)
