"""The job page's live refresh leaves alone what the user is working with.

Events for the job come from another process (tests/e2e/traffic.py: progress
and log lines every 0.2 s); each one makes the page refetch itself and merge
the blocks that changed. What the user has in hand must survive that: the
flash message of their last action, the fail reason they are typing (text and
focus), the log page they turned to, the folds they closed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from playwright.sync_api import Browser, Page, Route, expect
from redis import Redis

from queues.keys import QueueKeys
from queues.queue import Queue
from tests.dashboard_seed import now_ms, seed_job
from tests.e2e.conftest import Process, Processes, wait_live
from tests.e2e.server import DashboardServer

QUEUE = "e2e-jobpage"
KEYS = QueueKeys(QUEUE)
TRAFFIC = Path(__file__).with_name("traffic.py")


def job_url(job_id: str) -> str:
    return f"/queues/bull/{QUEUE}/job/{job_id}"


def touch(processes: Processes, job_id: str) -> Process:
    """Progress and log lines for the job, from another process, until the test ends."""
    traffic = processes.spawn(sys.executable, str(TRAFFIC), QUEUE, "--touch", job_id)
    traffic.wait_for("tick 1")
    return traffic


def progress_text(page: Page) -> str:
    return page.locator('[data-block="progress"] .pct').inner_text()


def wait_for_new_progress(page: Page, seen: str) -> str:
    """Waits until a refresh shows another step than ``seen``; returns it."""
    expect(page.locator('[data-block="progress"] .pct')).not_to_have_text(seen, timeout=5000)
    return progress_text(page)


def open_chatty_job(page: Page, client: Redis, job_id: str) -> None:
    """An active import job with 60 log lines (a page and a bit), open and live."""
    seed_job(
        client, KEYS, job_id, state="active", name="import",
        fields={"processedOn": now_ms(), "progress": json.dumps({"step": 0, "of": 5})},
    )  # fmt: skip
    client.rpush(KEYS.logs(job_id), *[f"line {n}" for n in range(1, 61)])
    page.goto(job_url(job_id))
    wait_live(page)


def test_the_flash_message_stays_while_the_job_page_refreshes(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    seed_job(
        redis_client, KEYS, "declined-1", state="failed", name="charge-card",
        fields={"failedReason": "card declined", "progress": json.dumps({"step": 0, "of": 5})},
    )  # fmt: skip
    page.goto(job_url("declined-1"))
    wait_live(page)
    page.get_by_role("button", name="Retry").click()
    message = page.locator("#messages")
    expect(message).to_contain_text("Job declined-1 retried")
    wait_live(page)

    touch(processes, "declined-1")

    # Two refreshes with other steps: the page was merged while the message showed.
    wait_for_new_progress(page, wait_for_new_progress(page, "0 of 5"))
    expect(message).to_contain_text("Job declined-1 retried")
    expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "wait")


def test_a_fail_reason_being_typed_keeps_its_text_and_focus_while_the_page_refreshes(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    seed_job(
        redis_client, KEYS, "slow-1", state="active", name="resize-image",
        fields={"processedOn": now_ms() - 5_000, "ats": 1, "pb": "worker-1",
                "progress": json.dumps({"step": 0, "of": 5})},
    )  # fmt: skip
    redis_client.set(KEYS.lock("slow-1"), "token-1", px=600_000)
    page.goto(job_url("slow-1"))
    wait_live(page)
    running = page.locator("[data-job-status] .running")
    rendered_at = running.get_attribute("data-running-ms")
    # With no event at all, the running time counts on by itself.
    time.sleep(1)
    expect(running).not_to_have_text(running.inner_text(), timeout=3000)
    touch(processes, "slow-1")

    box = page.locator("#job-fail-reason")
    box.click()
    reason = "stuck on a dead host, see the worker's log"
    for word in reason.split(" "):
        page.keyboard.type(word + " ", delay=20)
        time.sleep(0.15)
    seen = wait_for_new_progress(page, "0 of 5")
    wait_for_new_progress(page, seen)

    expect(box).to_have_value(reason + " ")
    expect(box).to_be_focused()
    # Meanwhile the job's title line (its running time) was refreshed around the box.
    assert running.get_attribute("data-running-ms") != rendered_at

    # The job fails elsewhere while the reason is still being typed: the title
    # says so at once, the form stays in hand until the focus leaves it.
    processes.our_queue(QUEUE, "fail('slow-1', 'lost its worker')")
    expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "failed")
    expect(box).to_be_focused()
    expect(box).to_have_value(reason + " ")
    page.locator("h1").click()
    expect(page.get_by_role("button", name="Retry")).to_be_visible()
    expect(box).to_have_count(0)


def test_a_log_page_turned_to_a_scrolled_box_and_a_closed_fold_stay_as_they_are(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    open_chatty_job(page, redis_client, "chatty-1")
    logs = page.locator("ol.logs")
    scrolled = logs.evaluate("box => { box.scrollTop = box.scrollHeight; return box.scrollTop; }")
    assert scrolled > 0, "50 log lines overflow their box"
    options = page.locator('[data-block="options"] details')
    page.locator('[data-block="options"] summary').click()
    expect(options).not_to_have_attribute("open", "")
    page.locator("h1").click()  # the fold no longer holds the focus: only its state protects it

    touch(processes, "chatty-1")
    seen = wait_for_new_progress(page, wait_for_new_progress(page, "0 of 5"))

    # The log count in the heading follows the new lines; the box stays scrolled.
    expect(page.locator("#job-logs h2 .muted")).not_to_have_text("60")
    assert logs.evaluate("box => box.scrollTop") == scrolled
    expect(options).not_to_have_attribute("open", "")

    page.get_by_role("link", name="Later →").click()
    expect(logs).to_have_attribute("start", "51")
    wait_for_new_progress(page, wait_for_new_progress(page, seen))
    expect(logs).to_have_attribute("start", "51")
    expect(page.locator("ol.logs li").first).to_have_text("line 51")


def test_a_refresh_asked_before_the_log_page_was_turned_does_not_turn_it_back(
    page: Page, redis_client: Redis
) -> None:
    """A refresh in flight when the user turns the log page answers with the
    old page's logs: drawn, it turned the page back (until the next event).
    Here the refresh is held until the page is turned."""
    open_chatty_job(page, redis_client, "chatty-2")
    held: list[Route] = []

    def hold_refreshes(route: Route) -> None:
        refresh = (
            route.request.headers.get("x-live-refresh") and "fragment=" not in route.request.url
        )
        if refresh and not held:
            held.append(route)
        else:
            route.continue_()

    page.route(f"**{job_url('chatty-2')}*", hold_refreshes)
    Queue(QUEUE, redis_client).update_progress("chatty-2", {"step": 1, "of": 5})
    deadline = time.monotonic() + 10
    while not held:
        assert time.monotonic() < deadline, "the event asked for no refresh"
        page.wait_for_timeout(50)
    page.get_by_role("link", name="Later →").click()
    logs = page.locator("ol.logs")
    expect(logs).to_have_attribute("start", "51")
    held[0].continue_()
    # The page asks again for the page shown: the event's progress, page 2 kept.
    expect(page.locator('[data-block="progress"] .pct')).to_have_text("1 of 5")
    page.wait_for_timeout(500)
    expect(logs).to_have_attribute("start", "51")
    expect(page.locator("ol.logs li").first).to_have_text("line 51")


def test_on_a_phone_traces_and_long_data_wrap_inside_the_screen(
    browser: Browser, dashboard_server: DashboardServer, auth_state: str, redis_client: Redis
) -> None:
    long_line = '  File "/srv/app/.venv/lib/python3.11/site-packages/bullmq/worker.py", line 236'
    trace = f"Traceback (most recent call last):\n{long_line}\nRuntimeError: {'x' * 150}"
    seed_job(
        redis_client, KEYS, "wide-1", state="failed", name="charge-card",
        data={"token": "tok_" + "x" * 300},
        fields={"failedReason": "declined", "stacktrace": json.dumps([trace, trace])},
    )  # fmt: skip
    context = browser.new_context(
        base_url=dashboard_server.url,
        storage_state=auth_state,
        viewport={"width": 390, "height": 844},
        is_mobile=True,
    )
    try:
        page = context.new_page()
        page.goto(job_url("wide-1"))
        page.locator(".failure details").last.locator("summary").click()
        widths = page.evaluate(
            """() => ({
              page: document.documentElement.scrollWidth,
              boxes: Array.from(document.querySelectorAll("main pre"))
                .filter((box) => box.checkVisibility())
                .map((box) => box.scrollWidth - box.clientWidth),
            })"""
        )
        assert widths["page"] <= 390
        assert len(widths["boxes"]) >= 3, "both traces and the data are shown"
        assert max(widths["boxes"]) <= 0, "a box scrolls sideways: its lines do not wrap"
    finally:
        context.close()
