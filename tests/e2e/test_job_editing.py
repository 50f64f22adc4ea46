"""Editing jobs in a real browser against daphne: an on-call engineer fixes
the data of a job that failed, retries it, and BullMQ 2.20.1's worker (its own
process) runs it with the new data; a job is added from the queue page. The
pages are photographed light, dark and on a phone into
build/screenshots/editing/."""

from __future__ import annotations

import json

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import now_ms
from tests.e2e.conftest import SHOTS_ROOT, Processes, wait_live
from tests.e2e.server import DashboardServer
from tests.e2e.test_screenshots import LOOKS
from tests.transition_helpers import fetch

QUEUE = "e2e-edit"
KEYS = QueueKeys(QUEUE)
SHOTS = SHOTS_ROOT / "editing"
FIXED = {"n": 0, "to": "fixed@example.com"}


def job_path(job_id: str) -> str:
    return f"/queues/bull/{QUEUE}/job/{job_id}"


def shoot(browser: Browser, server: DashboardServer, auth_state: str, path: str, name: str,
          opens: tuple[str, ...] = ()) -> None:  # fmt: skip
    """Full-page pictures of ``path`` in each look, with the ``opens`` folds opened."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for look, options in LOOKS.items():
        context = browser.new_context(base_url=server.url, storage_state=auth_state, **options)
        try:
            page = context.new_page()
            page.goto(path)
            for summary in opens:
                page.locator(summary).first.click()
            page.screenshot(path=str(SHOTS / f"{name}-{look}.png"), full_page=True)
            # Nothing wider than the screen: the editor and the forms wrap.
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= options["viewport"]["width"], (name, look, width)
        finally:
            context.close()


def test_a_failed_jobs_data_is_fixed_then_retried_and_the_worker_sees_the_new_data(
    page: Page,
    processes: Processes,
    redis_client: Redis,
    browser: Browser,
    dashboard_server: DashboardServer,
    auth_state: str,
) -> None:
    (job_id,) = processes.peer_add(QUEUE, "send-mail")
    worker = processes.bullmq_worker(QUEUE, "--fail-first", "--echo-data")
    worker.wait_for(rf"failed {job_id} ")

    page.goto(job_path(job_id))
    wait_live(page)
    expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "failed")
    page.locator('summary:has-text("Edit data")').click()
    editor = page.locator("#job-data-editor")
    status = page.locator("#job-data-editor-status")

    # Not JSON: said as it is typed, and the save does not leave the page.
    editor.fill('{"n": 0, "to": fixed@example.com}')
    expect(status).to_contain_text("Not valid JSON")
    expect(editor).to_have_attribute("aria-invalid", "true")
    page.get_by_role("button", name="Save data").click()
    expect(status).to_contain_text("Not valid JSON")
    assert json.loads(redis_client.hget(KEYS.job(job_id), "data") or b"") == {"n": 0}

    editor.fill(json.dumps(FIXED, indent=2))
    expect(status).to_contain_text("Valid JSON")
    page.get_by_role("button", name="Save data").click()
    expect(page.locator("#messages")).to_contain_text(
        f"Job {job_id}'s data was changed (the job is failed)"
    )
    assert json.loads(redis_client.hget(KEYS.job(job_id), "data") or b"") == FIXED
    changes = page.locator('[data-block="changes"]')
    expect(changes).to_contain_text("oncall")
    expect(changes.locator(".diff-add")).to_contain_text(["fixed@example.com"])
    shoot(browser, dashboard_server, auth_state, job_path(job_id), "job-edited",
          opens=('[data-block="data"] summary:has-text("Edit data")',))  # fmt: skip

    page.get_by_role("button", name="Retry").click()
    worker.wait_for(rf"completed {job_id}")
    stored = json.loads(redis_client.hget(KEYS.job(job_id), "returnvalue") or b"")
    assert stored == {"done": job_id, "data": FIXED}  # what the worker was given
    expect(page.locator("[data-job-state]")).to_have_attribute(
        "data-job-state", "completed", timeout=10_000
    )
    expect(page.locator("[data-job-returnvalue]")).to_contain_text("fixed@example.com")
    # Completed: its data can no longer be edited, and the page says why.
    expect(page.locator("[data-json-editor]")).to_have_count(0)


def test_a_job_is_added_from_the_queue_page(
    page: Page,
    processes: Processes,
    redis_client: Redis,
    browser: Browser,
    dashboard_server: DashboardServer,
    auth_state: str,
) -> None:
    processes.peer_add(QUEUE, "existing")
    page.goto(f"/queues/bull/{QUEUE}/")
    shoot(browser, dashboard_server, auth_state, f"/queues/bull/{QUEUE}/", "queue-add",
          opens=(".add-job > summary",))  # fmt: skip
    page.locator(".add-job > summary").click()
    page.get_by_label("Name", exact=True).fill("nightly-report")
    page.get_by_label("Data (JSON)").fill('{"day": "2026-12-01"}')
    page.get_by_label("Delay (ms)").fill("3600000")
    page.get_by_role("button", name="Add job", exact=True).click()
    expect(page.locator("#messages")).to_contain_text("(nightly-report) added to e2e-edit")
    expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "delayed")
    job_id = page.locator("main").get_attribute("data-job-id")
    assert job_id is not None
    assert json.loads(redis_client.hget(KEYS.job(job_id), "data") or b"") == {"day": "2026-12-01"}
    expect(page.locator('[data-block="changes"]')).to_contain_text("added")


def test_an_edit_that_comes_after_a_worker_took_the_job_is_refused_and_the_text_is_kept(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    (job_id,) = processes.peer_add(QUEUE, "race")
    page.goto(job_path(job_id))
    wait_live(page)
    page.locator('summary:has-text("Edit data")').click()
    page.locator("#job-data-editor").fill('{"n": 99}')
    # A worker takes the job while the engineer is typing (the real pickup script).
    assert fetch(redis_client, KEYS, now_ms=now_ms()).job_id == job_id
    page.get_by_role("button", name="Save data").click()
    expect(page.locator("#messages")).to_contain_text(
        f"Job {job_id}'s data was not changed: a worker took it (it is active now)"
    )
    assert json.loads(redis_client.hget(KEYS.job(job_id), "data") or b"") == {"n": 0}
    # The page has no editor for an active job: what was typed is there to copy.
    expect(page.locator("[data-json-editor]")).to_have_count(0)
    expect(page.locator(".editor-draft textarea")).to_have_value('{"n": 99}')
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "job-race-refused-light.png"), full_page=True)
