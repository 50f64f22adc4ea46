"""The schedulers tab in a real Chromium against daphne: the list (job
schedulers, a legacy repeatable job, a broken definition), its counts moving
while our worker (another process) runs a schedule, and "run now" through the
page's own confirmation. Screenshots of the tab in light, dark and phone go to
build/screenshots/schedulers/."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.keys import QueueKeys
from queues.schedulers import JobSchedulers, Repeat
from tests.e2e.conftest import CONFIRM_DIALOG, SHOTS_ROOT, Confirms, Processes, wait_live
from tests.e2e.test_screenshots import LOOKS, LOST_VALUE

QUEUE = "e2e-schedulers"
KEYS = QueueKeys(QUEUE)
SHOTS = SHOTS_ROOT / "schedulers"


def seed(client: Redis) -> JobSchedulers:
    owner = JobSchedulers(QUEUE, client)
    owner.upsert(
        "nightly-report",
        Repeat(pattern="0 3 * * *", tz="Europe/Paris", limit=30),
        name="report",
        data={"to": "ops@example.com", "format": "pdf"},
        opts={"attempts": 3},
    )
    owner.upsert("heartbeat", Repeat(every_ms=1500), name="ping", data={"n": 1})
    owner.upsert("broken", Repeat(every_ms=3_600_000), name="sync", data={"a": 1})
    client.hset(KEYS.repeat_scheduler("broken"), "data", "{oops")
    client.zadd(KEYS.repeat, {LEGACY_KEY: LEGACY_NEXT_MS})
    # Its pending run as BullMQ before 5.0 named it: a checksum of the name, no
    # job id and the key's own checksum (both worked out with md5sum).
    client.hset(
        KEYS.job(LEGACY_RUN),
        mapping={"name": "sweep", "data": "{}", "opts": "{}", "timestamp": 1, "rjk": LEGACY_KEY},
    )
    client.zadd(KEYS.delayed, {LEGACY_RUN: LEGACY_NEXT_MS * 0x1000})
    return owner


LEGACY_KEY = "sweep::::*/5 * * * *"
LEGACY_NEXT_MS = 4_102_444_800_000
LEGACY_RUN = f"repeat:af09d5835199f59f5eca630d5cc53e18:{LEGACY_NEXT_MS}"


def test_the_schedulers_tab_shows_each_kind_follows_the_runs_and_runs_one_now(
    page: Page, processes: Processes, redis_client: Redis, confirms: Confirms
) -> None:
    owner = seed(redis_client)
    page.goto(f"/queues/bull/{QUEUE}/schedulers/")
    wait_live(page)
    nightly = page.locator('#job-table tr[data-job-id="nightly-report"]')
    expect(nightly).to_contain_text("cron 0 3 * * *")
    expect(nightly).to_contain_text("Europe/Paris")
    expect(nightly.locator("td.runs")).to_have_text(re.compile(r"^\s*1\s+of 30\s*$"))
    expect(nightly).to_contain_text("ops@example.com")
    legacy = page.locator('#job-table tr[data-job-id="sweep::::*/5 * * * *"]')
    expect(legacy).to_contain_text("legacy repeatable")
    expect(legacy.get_by_role("button", name="Run now…")).to_be_disabled()
    # Why it is greyed out is said beside it, and describes it (not a tooltip).
    expect(legacy.get_by_role("button", name="Run now…")).to_have_accessible_description(
        "Cannot run now: a legacy repeatable keeps no template"
    )
    expect(legacy.get_by_text("Cannot run now")).to_be_visible()
    expect(legacy.get_by_role("link", name="pending run")).to_have_attribute(
        "href", re.compile(re.escape(LEGACY_RUN.replace(":", "%3A")) + "|" + re.escape(LEGACY_RUN))
    )
    broken = page.locator('#job-table tr[data-job-id="broken"]')
    expect(broken).to_contain_text("template data is not valid JSON")
    expect(broken.get_by_role("button", name="Run now…")).to_be_disabled()
    expect(broken.get_by_role("button", name="Run now…")).to_have_accessible_description(
        re.compile("^Cannot run now: its definition is broken")
    )
    expect(broken.get_by_text("Cannot run now")).to_be_visible()

    # Our worker, in another process, takes the heartbeat's runs: each adds the
    # next, and the page's count follows without a reload.
    heartbeat = page.locator('#job-table tr[data-job-id="heartbeat"]')
    expect(heartbeat).to_contain_text("every 1.5 s")
    # No worker yet: its first run, due at once, waits, and the row says so.
    expect(heartbeat.locator("td.when")).to_contain_text(re.compile(r"due (just now|[\d.]+ s ago)"))
    runs = heartbeat.locator("td.runs")
    expect(runs).to_have_text(re.compile(r"^\s*1\s*$"))
    page.mouse.move(0, 0)  # nothing held under the pointer
    processes.our_worker(QUEUE)
    expect(runs).to_have_text(re.compile(r"^\s*[3-9]\s*$"), timeout=20_000)

    # Run now asks first, in the page's dialog, then says which job it added.
    next_run = redis_client.zscore(KEYS.repeat, "nightly-report")
    confirms.manual()
    nightly.get_by_role("button", name="Run now…").click()
    dialog = page.locator(CONFIRM_DIALOG)
    expect(dialog).to_contain_text("Run nightly-report now?")
    dialog.locator("[data-confirm-ok]").click()
    message = page.locator(".message-success")
    expect(message).to_contain_text(re.compile(r"Job scheduler nightly-report ran now: job \d+"))
    job_id = re.search(r"job (\d+) added", message.inner_text())
    assert job_id is not None
    # The worker ran it, with the template's data; the schedule did not move.
    expect(page.locator('#job-table tr[data-job-id="nightly-report"] td.runs')).to_have_text(
        re.compile(r"^\s*1\s+of 30\s*$")
    )
    page.goto(f"/queues/bull/{QUEUE}/job/{job_id.group(1)}")
    expect(page.locator("[data-job-state]").first).to_have_attribute(
        "data-job-state", "completed", timeout=10_000
    )
    expect(page.locator("body")).to_contain_text("ops@example.com")
    assert redis_client.zscore(KEYS.repeat, "nightly-report") == next_run
    assert owner.keys.repeat == KEYS.repeat


def test_the_schedulers_tab_reads_well_in_light_dark_and_phone(
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
            page.goto(f"/queues/bull/{QUEUE}/schedulers/")
            wait_live(page)
            expect(page.locator("#job-table tr[data-job-id]")).to_have_count(4)
            expect(page.locator(".tabs [aria-current=page]")).to_have_text("schedulers")
            text = page.locator("main").inner_text()
            assert not LOST_VALUE.search(text), LOST_VALUE.search(text)
            # Nothing wider than the screen: a phone does not scroll sideways.
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= options["viewport"]["width"], (look, width)
            page.screenshot(path=str(SHOTS / f"schedulers-{look}.png"), full_page=True)
        finally:
            context.close()
