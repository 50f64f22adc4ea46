"""What became of an action, in a real Chromium against daphne: the on-call
engineer retries the failed jobs from the queue page, a worker of our runtime
(its own process) completes half of them and fails the other half again, and
the "Recent actions" panel counts them as it goes, without a reload, every
look adding up to the jobs retried. Screenshots (light, dark, phone) go into
build/screenshots/recent-actions/."""

from __future__ import annotations

import re
import sys
import time

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import seed_job
from tests.e2e.conftest import ROOT, SHOTS_ROOT, Processes, wait_live
from tests.e2e.server import DashboardServer
from tests.e2e.test_screenshots import page_in_look

QUEUE = "e2e-cohorts"
JOBS = 24
SHOTS = SHOTS_ROOT / "recent-actions"
WORKER = ROOT / "tests" / "e2e" / "cohort_worker.py"


def _seed_failed(client: Redis) -> None:
    keys = QueueKeys(QUEUE)
    for n in range(1, JOBS + 1):
        reason = {"failedReason": f"timeout after {30000 + n} ms on job {n}"}
        seed_job(client, keys, str(n), state="failed", data={"n": n}, fields=reason, score=n)


# Read in one go: the panel may be redrawn between two separate reads.
_PARTS_JS = """() => {
  const found = {};
  const cohort = document.querySelector("#recent-actions li.cohort");
  if (cohort) cohort.querySelectorAll("[data-part]").forEach((badge) => {
    found[badge.dataset.part] = Number(badge.dataset.partCount);
  });
  return found;
}"""


def _parts(page: Page) -> dict[str, int]:
    """The first cohort's parts as the panel shows them now."""
    found: dict[str, int] = page.evaluate(_PARTS_JS)
    return found


def test_a_retried_cohort_is_counted_live_while_a_worker_completes_and_fails_it(
    page: Page,
    processes: Processes,
    redis_client: Redis,
    browser: Browser,
    dashboard_server: DashboardServer,
    auth_state: str,
) -> None:
    _seed_failed(redis_client)
    page.goto(f"/queues/bull/{QUEUE}/?state=failed")
    wait_live(page)
    panel = page.locator("#recent-actions")
    expect(panel).to_be_hidden()  # no action yet: nothing to show

    page.get_by_role("button", name=f"Retry all {JOBS} failed").click()
    expect(page.locator(".message-success")).to_contain_text(f"{JOBS} failed jobs moved back")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text(
        re.compile(rf"retried all {JOBS} failed jobs at \d\d:\d\d UTC by")
    )
    expect(panel.locator('[data-part="wait"]')).to_have_text(f"{JOBS} waiting")
    wait_live(page)

    worker = processes.spawn(sys.executable, str(WORKER), QUEUE, "--sleep", "0.25")
    worker.wait_for("ready")
    page.mouse.move(0, 0)

    # Every look while it runs adds up to the jobs retried.
    middle_seen = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        parts = _parts(page)
        states = {name: n for name, n in parts.items() if name != "failed-same"}
        assert sum(states.values()) == JOBS, parts
        finished = states.get("completed", 0) + states.get("failed", 0)
        if 0 < finished < JOBS and not middle_seen:
            middle_seen = True
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=SHOTS / "recent-actions-running-light.png", full_page=True)
        if finished == JOBS:
            break
        time.sleep(0.1)
    assert middle_seen, "the panel never showed the cohort part way through"
    expect(panel.locator('[data-part="completed"]')).to_have_text(f"{JOBS // 2} completed")
    expect(panel.locator('[data-part="failed"]')).to_have_text(f"{JOBS // 2} failed again")
    expect(panel.locator('[data-part="failed-same"]')).to_have_text(
        f"{JOBS // 4} of them with the same reason as before"
    )
    expect(panel.locator('[data-part="wait"]')).to_have_count(0)
    page.screenshot(path=SHOTS / "recent-actions-light.png", full_page=True)

    # Each part links to its jobs.
    panel.locator('[data-part="failed-same"]').click()
    expect(page.locator("h2")).to_contain_text(
        f"{JOBS // 4} failed again with the same reason as before"
    )
    rows = page.locator("table.cohort-jobs tbody tr")
    expect(rows).to_have_count(JOBS // 4)
    expect(rows.first).to_contain_text("timeout after")
    page.screenshot(path=SHOTS / "cohort-failed-same-light.png", full_page=True)

    for look in ("dark", "phone"):
        with page_in_look(browser, dashboard_server, auth_state, look) as other:
            other.goto(f"/queues/bull/{QUEUE}/?state=failed")
            if look == "phone":  # folded to one line: a tap opens it
                expect(other.locator("#recent-actions .cohorts-gist")).to_be_visible()
                other.screenshot(path=SHOTS / "recent-actions-phone-folded.png", full_page=True)
                other.locator("#recent-actions summary").click()
            expect(other.locator('#recent-actions [data-part="completed"]')).to_be_visible()
            other.screenshot(path=SHOTS / f"recent-actions-{look}.png", full_page=True)
            other.locator('#recent-actions [data-part="failed"]').first.click()
            expect(other.locator("table.cohort-jobs tbody tr")).to_have_count(JOBS // 2)
            other.screenshot(path=SHOTS / f"cohort-failed-{look}.png", full_page=True)


def test_the_panel_holds_still_under_the_pointer_and_catches_up_when_left(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-cohorts-hold"
    keys = QueueKeys(queue)
    for n in range(1, 5):
        seed_job(redis_client, keys, str(n), state="failed", data={"n": n}, score=n)
    page.goto(f"/queues/bull/{queue}/?state=failed")
    wait_live(page)
    page.get_by_role("button", name="Retry all 4 failed").click()
    panel = page.locator("#recent-actions")
    expect(panel.locator('[data-part="wait"]')).to_have_text("4 waiting")
    wait_live(page)
    panel.locator(".cohort-head").hover()

    worker = processes.spawn(sys.executable, str(WORKER), queue, "--sleep", "0")
    worker.wait_for("ready")

    expect(panel).to_contain_text("paused while pointing", timeout=15_000)
    expect(panel.locator('[data-part="wait"]')).to_have_text("4 waiting")  # held

    page.mouse.move(0, 0)
    expect(panel.locator('[data-part="completed"]')).to_have_text("2 completed")
    expect(panel.locator('[data-part="wait"]')).to_have_count(0)


def test_on_a_phone_the_panel_is_one_line_that_opens_and_the_jobs_stay_on_the_first_screen(
    browser: Browser, dashboard_server: DashboardServer, auth_state: str, redis_client: Redis
) -> None:
    """The open panel pushed the job list a screen and a half down on a phone."""
    queue = "e2e-cohorts-phone"
    keys = QueueKeys(queue)
    for n in range(1, 9):
        reason = {"failedReason": f"timeout after {30000 + n} ms on job {n}"}
        seed_job(redis_client, keys, str(n), state="failed", data={"n": n}, fields=reason, score=n)
    seed_job(redis_client, keys, "w1", state="wait", data={"n": 0})
    with page_in_look(browser, dashboard_server, auth_state, "phone") as page:
        page.goto(f"/queues/bull/{queue}/?state=failed")
        wait_live(page)
        page.get_by_role("button", name=re.compile(r"^Retry all 8 failed")).click()
        page.locator("dialog.confirm-dialog[open] [data-confirm-ok]").click()
        expect(page.locator(".message-success")).to_contain_text("8 failed jobs moved back")
        page.goto(f"/queues/bull/{queue}/?state=wait")
        panel = page.locator("#recent-actions")
        gist = panel.locator(".cohorts-gist")
        expect(gist).to_have_text(
            re.compile(r"^8 waiting · retried all 8 failed jobs at \d\d:\d\d UTC by oncall$")
        )
        box = panel.bounding_box()
        assert box is not None
        assert box["height"] <= 60, f"the folded panel is {box['height']} px high"
        # Read once the row is drawn: a live refresh may be swapping the table in
        # at that moment (CI once read no box at all).
        first_row = page.locator("#job-table tr[data-job-id]").first
        first = None
        for _ in range(50):  # up to 5 s for a row that stays put long enough to measure
            expect(first_row).to_be_visible()
            first = first_row.bounding_box()
            if first is not None:
                break
            page.wait_for_timeout(100)
        assert first is not None
        assert first["y"] + first["height"] <= 844, "the first job is below the first screen"

        panel.locator("summary").click()  # a tap opens it, and it stays open
        expect(panel.locator('[data-part="wait"]')).to_have_text("8 waiting")
        expect(gist).to_be_hidden()
