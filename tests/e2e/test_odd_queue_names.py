"""A queue whose name holds "/" and "~" (both valid) on every live page.

The server writes a "/" in a name as "~s" and a "~" as "~~" (dashboard/core/converters.py);
the page script once pasted URLs together with encodeURIComponent and fixed paths,
so such a queue's counts, feed links and socket went wrong. Every URL now comes
from the server."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.conftest import Processes, wait_live

# A "/", and a "~" followed by "s" (which, unescaped, the server would read as a "/").
QUEUE = "team/e2e~s"
URL = "/queues/bull/team~se2e~~s/"


def test_a_queue_named_with_slash_and_tilde_stays_live_on_every_page(
    page: Page, processes: Processes
) -> None:
    page.goto("/")
    wait_live(page)
    processes.peer_add(QUEUE, "seed")

    # The overview: the new queue's row arrives live, with the server's link.
    row = page.locator(f'tr[data-queue="bull:{QUEUE}"]')
    # Found by discovery's paced walk (no worker names it): a pass starts at
    # most every 10 s and idles 199 times as long as each call took, which on
    # a machine running two suites at once took more than 30 s.
    expect(row).to_be_visible(timeout=60_000)
    link = row.locator("a.queue-name")
    expect(link).to_have_attribute("href", URL)
    link.click()
    expect(page.locator(".queue-head h1")).to_contain_text(QUEUE)
    wait_live(page)

    # The queue page: the list and the counts follow another process.
    page.goto(URL + "?state=wait")
    wait_live(page)
    (second,) = processes.peer_add(QUEUE, "second")
    expect(page.locator(f'#job-table tr[data-job-id="{second}"]')).to_be_visible()
    expect(page.locator('#queue-tabs [data-count-state="wait"]')).to_have_text("2")

    # The events tab: its counts and its feed, whose links open the job.
    page.goto(URL + "events/")
    wait_live(page)
    (third,) = processes.peer_add(QUEUE, "third")
    expect(page.locator('#queue-tabs [data-count-state="wait"]')).to_have_text("3")
    feed_link = page.locator(f'#event-feed tr[data-job-id="{third}"] a')
    expect(feed_link).to_have_attribute("href", f"{URL}job/{third}")
    feed_link.click()

    # The job page follows its job when a worker in another process runs it.
    expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "wait")
    wait_live(page)
    worker = processes.bullmq_worker(QUEUE)
    worker.wait_for(rf"completed {third}\b")
    expect(page.locator("[data-job-state]")).to_have_attribute(
        "data-job-state", "completed", timeout=10_000
    )
