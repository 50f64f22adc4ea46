"""The queue page in a real Chromium: its actions, its numbers, its history."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import seed_jobs
from tests.e2e.conftest import Confirms, Processes, wait_live


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
    # The fragment's copy of the tabs went to the header (htmx oob), not into the table.
    expect(page.locator("nav.tabs")).to_have_count(1)
    expect(page.locator("#job-table nav.tabs")).to_have_count(0)
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


def open_tab(page: Page, queue: str, state: str) -> None:
    page.goto(f"/queues/bull/{queue}/?state={state}")
    wait_live(page)


def table_top(page: Page) -> float:
    box = page.locator("#job-table table.jobs").bounding_box()
    assert box is not None
    return float(box["y"])


def test_the_selection_bar_takes_the_bulk_bars_place_without_moving_the_table(
    page: Page, redis_client: Redis
) -> None:
    queue = "e2e-select"
    seed_jobs(redis_client, QueueKeys(queue), "failed", 3)
    open_tab(page, queue, "failed")
    bulk = page.get_by_role("button", name="Retry all 3 failed")
    selection = page.locator("[data-selection-bar]")
    expect(bulk).to_be_visible()
    expect(selection).to_be_hidden()  # nothing ticked: no greyed bar
    top = table_top(page)

    page.locator('#job-table input[name=ids][value="2"]').check()

    expect(selection).to_be_visible()
    expect(selection).to_contain_text("1 selected")
    expect(bulk).to_be_hidden()
    expect(page.get_by_role("button", name="Retry selected")).to_be_visible()
    assert table_top(page) == top, "the table moved when the selection bar came"

    page.get_by_role("button", name="Clear selection").click()
    expect(selection).to_be_hidden()
    expect(bulk).to_be_visible()
    assert table_top(page) == top


def test_clean_is_behind_more_defaults_to_a_week_and_asks_in_a_dialog_where_cancel_changes_nothing(
    page: Page, redis_client: Redis, confirms: Confirms
) -> None:
    confirms.manual()
    queue = "e2e-clean"
    keys = QueueKeys(queue)
    seed_jobs(redis_client, keys, "failed", 3)
    open_tab(page, queue, "failed")
    clean = page.get_by_role("button", name="Clean…")
    expect(clean).to_be_hidden()  # not beside "Retry all"
    page.get_by_text("More").click()
    expect(page.get_by_label("Delete failed jobs older than")).to_have_value(str(7 * 86_400_000))
    dialog = page.locator("dialog.confirm-dialog")

    clean.click()
    expect(dialog).to_be_visible()
    expect(dialog.locator("h2")).to_have_text(
        f"Delete the failed jobs of {queue} older than 7 days?"
    )
    expect(dialog).to_contain_text("At most 3 jobs, with their logs.")
    cancel = dialog.get_by_role("button", name="Cancel")
    confirm = dialog.get_by_role("button", name="Clean")
    expect(cancel).to_be_focused()  # the safe choice
    page.keyboard.press("Tab")
    expect(confirm).to_be_focused()
    page.keyboard.press("Tab")
    expect(cancel).to_be_focused()  # focus stays in the dialog
    page.keyboard.press("Shift+Tab")
    expect(confirm).to_be_focused()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    assert redis_client.zcard(keys.failed) == 3

    clean.click()
    cancel.click()
    expect(dialog).to_be_hidden()
    page.wait_for_timeout(300)  # a submit would have left by now
    assert redis_client.zcard(keys.failed) == 3
    expect(page.locator("#job-table tr[data-job-id]")).to_have_count(3)

    page.get_by_label("Delete failed jobs older than").select_option(label="any age")
    clean.click()
    expect(dialog.locator("h2")).to_have_text(
        f"Delete the failed jobs of {queue} older than any age?"
    )
    confirm.click()
    expect(page.locator("#messages")).to_contain_text("3 failed jobs older than 0 seconds removed")
    assert redis_client.zcard(keys.failed) == 0


def test_the_dialog_is_reached_by_keyboard_and_names_the_rows_ticked(
    page: Page, redis_client: Redis
) -> None:
    """The tests' own answer (conftest.confirms) goes through the page's dialog too."""
    queue = "e2e-remove"
    keys = QueueKeys(queue)
    seed_jobs(redis_client, keys, "wait", 4)
    open_tab(page, queue, "wait")
    for job_id in ("1", "3"):
        page.locator(f'#job-table input[name=ids][value="{job_id}"]').check()
    remove = page.get_by_role("button", name="Remove selected…")
    remove.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#messages")).to_contain_text("2 jobs removed")
    assert redis_client.lrange(keys.wait, 0, -1) == [b"4", b"2"]


def test_running_completed_jobs_again_asks_and_retrying_failed_ones_does_not(
    page: Page, redis_client: Redis, confirms: Confirms
) -> None:
    confirms.manual()
    queue = "e2e-rerun"
    keys = QueueKeys(queue)
    seed_jobs(redis_client, keys, "completed", 2)
    seed_jobs(redis_client, keys, "failed", 2, first=10)
    open_tab(page, queue, "completed")
    page.locator('#job-table input[name=ids][value="1"]').check()
    dialog = page.locator("dialog.confirm-dialog")
    rerun = page.get_by_role("button", name="Run again…")
    expect(rerun).not_to_have_class(re.compile(r"\bbtn-primary\b"))

    rerun.click()
    expect(dialog.locator("h2")).to_have_text(f"Run 1 job of {queue} again?")
    dialog.get_by_role("button", name="Cancel").click()
    page.wait_for_timeout(300)
    assert redis_client.zscore(keys.completed, "1") is not None

    rerun.click()
    dialog.get_by_role("button", name="Run again").click()
    expect(page.locator("#messages")).to_contain_text("Job 1 retried")
    assert redis_client.zscore(keys.completed, "1") is None

    open_tab(page, queue, "failed")
    page.locator('#job-table input[name=ids][value="10"]').check()
    retry = page.get_by_role("button", name="Retry selected")
    expect(retry).to_have_class(re.compile(r"\bbtn-primary\b"))
    retry.click()
    expect(page.locator("#messages")).to_contain_text("Job 10 retried")
    expect(dialog).to_be_hidden()


# Every number the delayed tab shows, read in one go.
NUMBERS = """() => {
  const text = (selector) => {
    const el = document.querySelector(selector);
    return el ? el.textContent.replace(/\\s+/g, " ").trim() : "";
  };
  const tab = 'nav.tabs [data-count-state="delayed"]';
  return {
    tab: text(tab),
    tabExact: document.querySelector(tab).title,
    bulk: text('button[value="promote_all"]'),
    bulkOff: document.querySelector('button[value="promote_all"]').disabled,
    pager: text("nav.pager > span"),
    rows: document.querySelectorAll("#job-table tr[data-job-id]").length,
    empty: text("#job-table section.empty"),
  };
}"""


def test_every_number_on_the_queue_page_comes_from_the_same_refresh(
    page: Page, processes: Processes
) -> None:
    """The delayed tab once said 24 while its button said "Promote all 25 delayed"."""
    queue = "e2e-numbers"
    processes.peer_add(queue, "seed")  # the queue exists; nothing delayed yet
    open_tab(page, queue, "delayed")
    page.mouse.move(0, 0)
    assert page.evaluate(NUMBERS) == {
        "tab": "0", "tabExact": "0", "bulk": "Promote all 0 delayed", "bulkOff": True,
        "pager": "0 jobs", "rows": 0, "empty": "No delayed jobs.",
    }  # fmt: skip
    tab = page.locator('nav.tabs [data-count-state="delayed"]')

    processes.peer_add(queue, "later", "--delay", "600000", "--count", "3")
    expect(tab).to_have_text("3")
    assert page.evaluate(NUMBERS) == {
        "tab": "3", "tabExact": "3", "bulk": "Promote all 3 delayed", "bulkOff": False,
        "pager": "1\u20133 of 3", "rows": 3, "empty": "",
    }  # fmt: skip

    processes.peer_add(queue, "later", "--delay", "600000", "--count", "2")
    expect(tab).to_have_text("5")
    assert page.evaluate(NUMBERS) == {
        "tab": "5", "tabExact": "5", "bulk": "Promote all 5 delayed", "bulkOff": False,
        "pager": "1\u20135 of 5", "rows": 5, "empty": "",
    }  # fmt: skip


def test_a_table_held_under_the_pointer_says_so_and_catches_up_when_left(
    page: Page, processes: Processes
) -> None:
    queue = "e2e-hold"
    processes.peer_add(queue, "seed", "--count", "2")
    open_tab(page, queue, "wait")
    rows = page.locator("#job-table tr[data-job-id]")
    cue = page.locator("[data-hold-cue]")
    expect(rows).to_have_count(2)
    expect(cue).to_be_hidden()
    rows.last.hover()
    top = table_top(page)
    under_pointer = rows.last.bounding_box()

    processes.peer_add(queue, "meanwhile", "--count", "3")

    expect(cue).to_have_text("paused while pointing · 3 new")
    expect(rows).to_have_count(2)
    assert rows.last.bounding_box() == under_pointer, "a row moved under the pointer"
    assert table_top(page) == top, "the cue moved the table"
    # One snapshot: the tab still agrees with the rows shown.
    expect(page.locator('nav.tabs [data-count-state="wait"]')).to_have_text("2")

    page.mouse.move(0, 0)

    expect(rows).to_have_count(5)
    expect(cue).to_be_hidden()
    expect(page.locator('nav.tabs [data-count-state="wait"]')).to_have_text("5")


def test_on_a_phone_the_header_is_short_and_the_first_job_is_on_the_first_screen(
    page: Page, redis_client: Redis
) -> None:
    """The header once took half a phone's screen: three rows of mostly-zero tabs."""
    screen = {"width": 390, "height": 844}
    page.set_viewport_size(screen)
    queue = "e2e-phone"
    keys = QueueKeys(queue)
    seed_jobs(redis_client, keys, "failed", 3)
    seed_jobs(redis_client, keys, "wait", 2, first=10)
    open_tab(page, queue, "failed")

    tabs = page.locator("#queue-tabs .tab")
    boxes = [box for box in (tabs.nth(i).bounding_box() for i in range(tabs.count())) if box]
    assert len({round(box["y"]) for box in boxes}) == 1, "the tabs take more than one line"
    # The states holding jobs come first; the empty ones are a swipe away.
    states = page.eval_on_selector_all(
        "#queue-tabs .tab",
        "tabs => tabs.map(t => [t.classList.contains('zero'), t.getBoundingClientRect().left])",
    )
    busiest = max(left for zero, left in states if not zero)
    assert all(left > busiest for zero, left in states if zero)
    current = page.locator("#queue-tabs .tab[aria-current]").bounding_box()
    assert current is not None
    assert current["x"] >= 0
    assert current["x"] + current["width"] <= screen["width"], "the current tab is off screen"

    goto = page.locator(".queue-head .goto").bounding_box()
    pause = page.get_by_role("button", name="Pause queue").bounding_box()
    assert goto is not None
    assert pause is not None
    assert abs(goto["y"] - pause["y"]) < 8, "the job-id box and pause share a line"

    first = page.locator("#job-table tr[data-job-id]").first.bounding_box()
    assert first is not None
    assert first["y"] + first["height"] <= screen["height"], (
        "the first job is below the first screen"
    )
    # Without the chart (its own block), the header is under a third of the screen.
    chart = page.locator(".queue-head .queue-chart")
    chart_box = chart.bounding_box() if chart.count() else None
    chart_height = chart_box["height"] if chart_box else 0
    assert first["y"] - chart_height <= screen["height"] / 3

    # The "More" menu opens within the screen; nothing makes the page scroll sideways.
    page.get_by_text("More").click()
    panel = page.locator("#job-table .menu-panel").bounding_box()
    assert panel is not None
    assert panel["x"] >= 0
    assert panel["x"] + panel["width"] <= screen["width"]
    assert page.evaluate("document.documentElement.scrollWidth") <= screen["width"]


def test_back_to_a_page_of_the_list_puts_the_tabs_count_in_its_bulk_button(
    page: Page, redis_client: Redis, processes: Processes
) -> None:
    """Issue 21: a tab read 178 beside "Retry all 180". htmx's Back puts the
    table back as it was, its bulk button's count included, while the tabs
    outside it kept counting."""
    queue = "e2e-pager"
    seed_jobs(redis_client, QueueKeys(queue), "delayed", 50)
    open_tab(page, queue, "delayed&size=20")
    bulk = page.locator(".bulk-actions button[data-count-for]")
    tab = page.locator('nav.tabs [data-count-state="delayed"]')
    expect(bulk).to_have_text("Promote all 50 delayed")
    page.get_by_role("link", name="Older →").click()
    expect(page.locator("#job-table tr[data-job-id]").first).to_have_attribute("data-job-id", "30")
    page.mouse.move(0, 0)  # off the table: under the pointer it holds still
    processes.peer_add(queue, "later", "--delay", "600000", "--count", "3")
    expect(tab).to_have_text("53")
    expect(bulk).to_have_text("Promote all 53 delayed")
    page.go_back()  # htmx's snapshot of page 1, taken at 50
    expect(page.locator("#job-table tr[data-job-id]").first).to_have_attribute("data-job-id", "50")
    expect(bulk).to_have_text("Promote all 53 delayed")
    expect(tab).to_have_text("53")
