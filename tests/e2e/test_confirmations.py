"""A retry or promote of more than a handful of jobs asks first in the page's
dialog, naming how many jobs and which queue, wherever it starts: the tab's
"Retry all" and "Promote all", the ticked rows, an error group (a search's
matches: tests/e2e/test_search.py). A handful or fewer act at once, as one
job's retry does. "Retry all 784 failed" once acted at once from the biggest
button on the page while the narrower buttons asked."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect
from redis import Redis

from dashboard.shared.action_bars import HANDFUL
from queues.keys import QueueKeys
from tests.dashboard_seed import seed_job
from tests.e2e.conftest import CONFIRM_DIALOG, Confirms, wait_live

# Two kinds of failure of a payments worker, each job's with its own figures.
TIMEOUT = "timeout after {ms} ms calling https://api.stripe.com/v1/charges"
NO_USER = "user 'u{n}@example.com' not found"


def seed_failed(client: Redis, keys: QueueKeys, count: int, reason: str, first: int = 1) -> None:
    now = int(time.time() * 1000)
    for n in range(first, first + count):
        text = reason.format(n=n, ms=30_000 + n * 17)
        fields = {"failedReason": text, "finishedOn": now - n * 1000}
        seed_job(client, keys, str(n), state="failed", name="charge", fields=fields, score=now - n)


def open_tab(page: Page, path: str) -> None:
    page.goto(path)
    wait_live(page)
    page.mouse.move(0, 0)


def test_retry_all_and_retrying_many_ticked_rows_ask_naming_the_count_and_the_queue(
    page: Page, redis_client: Redis, confirms: Confirms
) -> None:
    confirms.manual()
    assert HANDFUL < 12
    queue = "e2e-confirm-retry"
    keys = QueueKeys(queue)
    seed_failed(redis_client, keys, 12, TIMEOUT)
    open_tab(page, f"/queues/bull/{queue}/?state=failed")
    dialog = page.locator(CONFIRM_DIALOG)

    retry_all = page.locator('button[value="retry_all"]')
    expect(retry_all).to_have_accessible_name("Retry all 12 failed…")  # it says it asks
    retry_all.click()
    expect(dialog.locator("h2")).to_have_text(f"Retry all 12 failed jobs of {queue}?")
    expect(dialog.get_by_role("button", name="Retry all 12 failed", exact=True)).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()
    page.wait_for_timeout(300)  # a submit would have left by now
    assert redis_client.zcard(keys.failed) == 12

    # Two ticked rows: retried at once.
    for job_id in ("1", "2"):
        page.locator(f'#job-table input[name=ids][value="{job_id}"]').check()
    page.get_by_role("button", name="Retry selected", exact=True).click()
    expect(page.locator("#messages")).to_contain_text("2 jobs retried")
    assert redis_client.zcard(keys.failed) == 10

    # More than a handful ticked: the button says it asks, and asks.
    for job_id in ("3", "4", "5", "6", "7", "8"):
        page.locator(f'#job-table input[name=ids][value="{job_id}"]').check()
    retry = page.get_by_role("button", name="Retry selected…", exact=True)
    retry.click()
    expect(dialog.locator("h2")).to_have_text(f"Retry 6 jobs of {queue}?")
    dialog.get_by_role("button", name="Retry", exact=True).click()
    expect(page.locator("#messages")).to_contain_text("6 jobs retried")
    assert redis_client.zcard(keys.failed) == 4

    # The handful left: "Retry all 4 failed" acts at once.
    expect(retry_all).to_have_accessible_name("Retry all 4 failed")
    retry_all.click()
    expect(page.locator("#messages")).to_contain_text("4 failed jobs moved back to waiting")
    expect(dialog).to_have_count(0)
    assert redis_client.zcard(keys.failed) == 0


def test_promote_all_of_many_asks_naming_the_count_and_the_queue(
    page: Page, redis_client: Redis, confirms: Confirms
) -> None:
    confirms.manual()
    queue = "e2e-confirm-promote"
    keys = QueueKeys(queue)
    later = int(time.time() * 1000) + 3_600_000
    for n in range(1, 8):
        seed_job(redis_client, keys, f"digest-{n}", state="delayed", name="digest", score=later)
    open_tab(page, f"/queues/bull/{queue}/?state=delayed")
    dialog = page.locator(CONFIRM_DIALOG)

    promote_all = page.locator('button[value="promote_all"]')
    expect(promote_all).to_have_accessible_name("Promote all 7 delayed…")
    promote_all.click()
    expect(dialog.locator("h2")).to_have_text(f"Promote all 7 delayed jobs of {queue}?")
    expect(dialog).to_contain_text("Each runs now instead of at its time.")
    dialog.get_by_role("button", name="Promote all 7 delayed", exact=True).click()
    expect(page.locator("#messages")).to_contain_text("7")
    assert redis_client.zcard(keys.delayed) == 0


def test_an_error_groups_retry_asks_when_it_moves_more_than_a_handful(
    page: Page, redis_client: Redis, confirms: Confirms
) -> None:
    confirms.manual()
    queue = "e2e-confirm-groups"
    keys = QueueKeys(queue)
    seed_failed(redis_client, keys, 7, TIMEOUT)
    seed_failed(redis_client, keys, 2, NO_USER, first=100)
    open_tab(page, f"/queues/bull/{queue}/errors/")
    dialog = page.locator(CONFIRM_DIALOG)
    expect(page.locator("#job-table tr[data-job-id]")).to_have_count(2)
    timeouts = page.locator('#job-table tr[data-group-count="7"]')
    missing = page.locator('#job-table tr[data-group-count="2"]')

    timeouts.get_by_role("button", name="Retry 7…", exact=True).click()
    expect(dialog.locator("h2")).to_have_text(f"Retry 7 failed jobs of {queue} with this error?")
    dialog.get_by_role("button", name="Cancel").click()
    page.wait_for_timeout(300)
    assert redis_client.zcard(keys.failed) == 9

    missing.get_by_role("button", name="Retry 2", exact=True).click()
    expect(page.locator(".message-success")).to_have_text("2 failed jobs of the group retried")
    assert redis_client.zcard(keys.failed) == 7

    timeouts.get_by_role("button", name="Retry 7…", exact=True).click()
    dialog.get_by_role("button", name="Retry 7", exact=True).click()
    expect(page.locator(".message-success")).to_have_text("7 failed jobs of the group retried")
    assert redis_client.zcard(keys.failed) == 0
