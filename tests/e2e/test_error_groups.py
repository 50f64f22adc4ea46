"""The failed tab grouped by error in a real Chromium against daphne: groups
appear as a BullMQ worker (another process) fails jobs, a group's count falls
live when our runtime retries one of its jobs elsewhere, and "Retry N" empties
a group (at once for a handful of jobs; a bigger group asks first:
tests/e2e/test_confirmations.py). Screenshots of the
grouped tab in light, dark and phone go to build/screenshots/error-groups/."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.keys import QueueKeys
from queues.read.error_folding import group_key
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_index_of_older_rules, seed_job
from tests.e2e.conftest import CONFIRM_DIALOG, SHOTS_ROOT, Confirms, Processes, wait_live
from tests.e2e.test_screenshots import LOOKS, LOST_VALUE

QUEUE = "e2e-errors"
KEYS = QueueKeys(QUEUE)
SHOTS = SHOTS_ROOT / "error-groups"
TIMEOUT = group_key("timeout after <n> ms calling <url>")
FIRST_ATTEMPT = group_key("first attempt of <n> fails on purpose")
TRACE = [
    "Error: timeout after 30012 ms calling https://smtp.example.com/send\n"
    "    at Mailer.send (/srv/app/mailer.js:88:11)\n"
    "    at async Worker.process (/srv/app/worker.js:41:5)"
]


def seed(client: Redis) -> None:
    """Failures written straight into Redis, as another writer would leave them."""
    now = int(time.time() * 1000)
    for n in range(1, 5):
        reason = f"timeout after {30_000 + n * 17} ms calling https://smtp.example.com/send"
        fields = {"failedReason": reason, "finishedOn": now - n * 60_000}
        fields["stacktrace"] = json.dumps(TRACE)
        seed_job(client, KEYS, f"mail-{n}", state="failed", fields=fields, score=now - n * 60_000)
    for n, user in enumerate(["alice", "bob"], start=1):
        fields = {"failedReason": f"user '{user}' not found", "finishedOn": now - n * 3_600_000}
        seed_job(
            client, KEYS, f"user-{n}", state="failed", fields=fields, score=now - n * 3_600_000
        )


def group_row(page: Page, key: str) -> Any:
    return page.locator(f'#job-table tr[data-job-id="{key}"]')


def test_groups_follow_failures_and_retries_and_a_group_retry_empties_it(
    page: Page, processes: Processes, redis_client: Redis, confirms: Confirms
) -> None:
    seed(redis_client)
    page.goto(f"/queues/bull/{QUEUE}/?state=failed")
    page.get_by_role("link", name="Group by error").click()
    expect(page).to_have_url(re.compile(r"/errors/$"))
    wait_live(page)
    timeout = group_row(page, TIMEOUT)
    expect(timeout.locator("td.group-count")).to_have_text("4")
    expect(timeout).to_contain_text("timeout after <n> ms calling <url>")
    expect(group_row(page, group_key("user <str> not found"))).to_contain_text("2")
    page.mouse.move(0, 0)  # nothing held under the pointer

    # A BullMQ worker (another process) fails the first attempt of each job:
    # a new group appears and grows without a reload.
    ids = processes.peer_add(QUEUE, "resize", "--count", "5", "--attempts", "1")
    assert len(ids) == 5
    worker = processes.bullmq_worker(QUEUE, "--fail-first")
    first = group_row(page, FIRST_ATTEMPT)
    expect(first.locator("td.group-count")).to_have_text("5", timeout=15_000)
    expect(first).to_contain_text("first attempt of <n> fails on purpose")

    # Our runtime, in another process, retries one timeout: the count falls live.
    processes.our_queue(QUEUE, "retry('mail-1')")
    expect(timeout.locator("td.group-count")).to_have_text("3", timeout=10_000)

    # Retry the BullMQ worker's group (a handful: at once, no question); the
    # group goes, and the worker runs the jobs again (their second attempt
    # completes).
    confirms.manual()
    first.get_by_role("button", name="Retry 5", exact=True).click()
    expect(page.locator(CONFIRM_DIALOG)).to_have_count(0)
    expect(page.locator(".message-success")).to_have_text("5 failed jobs of the group retried")
    expect(group_row(page, FIRST_ATTEMPT)).to_have_count(0)
    for job_id in ids:
        worker.wait_for(rf"completed {job_id}\b")
    expect(timeout.locator("td.group-count")).to_have_text("3")
    assert redis_client.zcard(KEYS.failed) == 5  # 3 timeouts and 2 unknown users


def test_the_grouped_tab_reads_well_in_light_dark_and_phone(
    browser: Browser,
    browser_context_args: dict[str, Any],
    processes: Processes,
    redis_client: Redis,
) -> None:
    seed(redis_client)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for look, options in LOOKS.items():
        context = browser.new_context(**{**browser_context_args, **options})
        page = context.new_page()
        try:
            page.goto(f"/queues/bull/{QUEUE}/errors/")
            wait_live(page)
            expect(page.locator("#job-table tr[data-job-id]")).to_have_count(2)
            expect(page.locator(".tabs [aria-current=page]")).to_contain_text("failed")
            group_row(page, TIMEOUT).locator("details.sample summary").click()
            expect(group_row(page, TIMEOUT).locator("pre.trace")).to_contain_text("mailer.js:88")
            text = page.locator("main").inner_text()
            assert not LOST_VALUE.search(text), LOST_VALUE.search(text)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= options["viewport"]["width"], (look, width)
            page.screenshot(path=str(SHOTS / f"error-groups-{look}.png"), full_page=True)
            page.goto(f"/queues/bull/{QUEUE}/errors/?group={TIMEOUT}")
            expect(page.locator("#job-table tr[data-job-id]")).to_have_count(4)
            page.screenshot(path=str(SHOTS / f"error-group-jobs-{look}.png"), full_page=True)
        finally:
            context.close()


def test_an_index_of_older_rules_is_regrouped_while_the_page_watches(
    page: Page, redis_client: Redis
) -> None:
    """A deployment's index from before the rules' version was kept: issue
    21's incident, one group per job. The page says "Regrouping…" and asks
    again by itself (no events come) until the jobs are counted again; here
    another dashboard holds the build lock first, then lets go."""
    queue = "e2e-regroup"
    keys = QueueKeys(queue)
    now = int(time.time() * 1000)
    ids = [f"order-{n}" for n in range(1, 13)]
    for n, job_id in enumerate(ids, 1):
        reason = f"gateway timeout after {30_000 + n * 53} ms (order ord_{n * 104_729:010x})"
        fields = {"failedReason": reason, "finishedOn": now - n * 1_000}
        seed_job(redis_client, keys, job_id, state="failed", fields=fields, score=now - n * 1_000)
    seed_index_of_older_rules(redis_client, QueueRef("bull", queue), ids)
    lock = redis_client.lock(keys.error_groups("build-lock"), timeout=60)
    assert lock.acquire(blocking=False)

    page.goto(f"/queues/bull/{queue}/errors/")
    wait_live(page)
    status = page.locator("#job-table [data-index-status]")
    expect(status).to_contain_text("Regrouping…")
    rows = page.locator("#job-table tr[data-job-id]")
    expect(rows).to_have_count(12)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "error-groups-regrouping-light.png"), full_page=True)
    lock.release()

    kind = group_row(page, group_key("gateway timeout after <n> ms (order ord_<id>)"))
    expect(kind.locator("td.group-count")).to_have_text("12", timeout=20_000)
    expect(rows).to_have_count(1)
    expect(status).to_have_text("")
    expect(page.locator("nav.pager")).to_contain_text("1 kind of error in 12 failed jobs")
