"""The events tab in a real Chromium: what it shows by default, its filters, and a
feed that holds still under the pointer. Every event comes from another process."""

from __future__ import annotations

from playwright.sync_api import Page, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import seed_job
from tests.e2e.conftest import Processes, wait_live


def open_feed(page: Page, queue: str, query: str = "") -> None:
    page.goto(f"/queues/bull/{queue}/events/{query}")
    wait_live(page)


def shown_events(page: Page) -> list[str]:
    return list(
        page.eval_on_selector_all(
            "#event-feed tr[data-event]", "rows => rows.map(r => r.dataset.event)"
        )
    )


def test_state_changes_are_the_default_and_all_events_are_one_choice_away(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-changes"
    stream = QueueKeys(queue).events
    (seed,) = processes.peer_add(queue, "seed")
    open_feed(page, queue)
    assert shown_events(page) == ["waiting"], "its 'added' is noise beside 'waiting'"

    for n in range(30):
        redis_client.xadd(stream, {"event": "progress", "jobId": seed, "data": str(n)})
    redis_client.xadd(stream, {"event": "failed", "jobId": seed, "failedReason": "card declined"})

    failed = page.locator(f'#event-feed tr[data-job-id="{seed}"][data-event="failed"]')
    expect(failed).to_be_visible()
    expect(failed).to_contain_text("card declined")
    assert "progress" not in shown_events(page)

    # No button: the choice applies as it is made, and the URL follows.
    page.get_by_label("Show").select_option(label="all events")
    expect(page).to_have_url(f"/queues/bull/{queue}/events/?type=all")
    progress = page.locator('#event-feed tr[data-event="progress"]')
    expect(progress).to_have_count(30)
    expect(page.locator('#event-feed tr[data-event="added"]')).to_have_count(1)
    redis_client.xadd(stream, {"event": "progress", "jobId": seed, "data": '"live"'})
    expect(page.locator("#event-feed tr[data-event-id]").first).to_contain_text('progress "live"')

    page.get_by_label("Show").select_option(label="state changes")
    expect(page).to_have_url(f"/queues/bull/{queue}/events/")
    expect(progress).to_have_count(0)
    assert shown_events(page) == ["failed", "waiting"]


def test_the_job_filter_applies_while_typing_and_the_feed_follows_it(
    page: Page, processes: Processes
) -> None:
    queue = "e2e-jobfilter"
    first, second = processes.peer_add(queue, "seed", "--count", "2")
    open_feed(page, queue)
    expect(page.get_by_role("button", name="Filter")).to_have_count(0)  # only without script

    page.get_by_label("Job id", exact=True).fill(second)

    expect(page).to_have_url(f"/queues/bull/{queue}/events/?job={second}")
    rows = page.locator("#event-feed tr[data-event-id]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-job-id", second)
    worker = processes.bullmq_worker(queue)
    worker.wait_for(rf"completed {second}\b")
    expect(
        page.locator(f'#event-feed tr[data-job-id="{second}"][data-event="completed"]')
    ).to_be_visible()
    assert page.locator(f'#event-feed tr[data-job-id="{first}"]').count() == 0
    page.reload()  # the URL holds the filter
    expect(page.get_by_label("Job id", exact=True)).to_have_value(second)
    expect(page.locator(f'#event-feed tr[data-job-id="{first}"]')).to_have_count(0)


def test_the_feed_holds_still_under_the_pointer_and_catches_up(
    page: Page, processes: Processes
) -> None:
    """Ten rows once passed under a still mouse in five seconds."""
    queue = "e2e-still"
    processes.peer_add(queue, "seed", "--count", "5")
    open_feed(page, queue)
    rows = page.locator("#event-feed tr[data-event-id]")
    expect(rows).to_have_count(5)
    pointed = rows.nth(2)
    pointed.hover()
    where = pointed.bounding_box()
    controls = page.locator("[data-live-controls]")

    later = processes.peer_add(queue, "while-pointing", "--count", "3")

    expect(controls.get_by_role("button", name="3 new ↑")).to_be_visible()
    expect(controls).to_contain_text("paused while pointing")
    expect(rows).to_have_count(5)
    assert pointed.bounding_box() == where, "a row moved under the pointer"

    # "N new" catches up at once, even with the pointer still there, and holds on.
    controls.get_by_role("button", name="3 new ↑").dispatch_event("click")
    for job_id in later:
        expect(page.locator(f'#event-feed tr[data-job-id="{job_id}"]')).to_have_count(1)
    expect(controls.locator(".feed-news")).to_be_hidden()
    more = processes.peer_add(queue, "still-pointing", "--count", "2")
    expect(controls.get_by_role("button", name="2 new ↑")).to_be_visible()
    expect(page.locator(f'#event-feed tr[data-job-id="{more[0]}"]')).to_have_count(0)

    page.mouse.move(0, 0)  # leaving draws what waited

    for job_id in more:
        expect(page.locator(f'#event-feed tr[data-job-id="{job_id}"]')).to_have_count(1)
    expect(controls).not_to_contain_text("paused while pointing")
    expect(rows).to_have_count(10)


def test_keyboard_focus_in_the_feed_holds_it_too(page: Page, processes: Processes) -> None:
    queue = "e2e-still"
    (seed,) = processes.peer_add(queue, "seed")
    open_feed(page, queue)
    page.mouse.move(0, 0)
    page.locator(f'#event-feed tr[data-job-id="{seed}"] a').focus()

    (later,) = processes.peer_add(queue, "while-focused")

    expect(page.locator("[data-live-controls]")).to_contain_text("paused while the feed has focus")
    expect(page.locator(f'#event-feed tr[data-job-id="{later}"]')).to_have_count(0)
    page.get_by_label("Job id", exact=True).focus()
    expect(page.locator(f'#event-feed tr[data-job-id="{later}"]')).to_have_count(1)


def test_a_live_row_is_the_row_the_server_renders_for_the_same_event(
    page: Page, redis_client: Redis
) -> None:
    """One rendering of an event (presenters.event_row_html): the socket carries
    the row, so a live row and the same row after a reload are the same markup,
    whatever the job id holds (':' kept as the server's URLs keep it, combining
    accents counted as Django's truncation counts them)."""
    queue = "e2e-one-row"
    keys = QueueKeys(queue)
    seed_job(redis_client, keys, "seed", state="wait")
    redis_client.xadd(keys.events, {"event": "waiting", "jobId": "seed"})
    open_feed(page, queue)
    odd_ids = ["order:42", "e\u0301" * 30 + "-tail-" + "x" * 20, "<b>&"]
    for job_id in odd_ids:
        redis_client.xadd(
            keys.events, {"event": "failed", "jobId": job_id, "failedReason": "Boom\nat x"}
        )
    live = page.locator("#event-feed tr.live-new[data-event-id]")
    expect(live).to_have_count(len(odd_ids))
    rows = "rows => rows.map(r => { r.removeAttribute('class'); return r.outerHTML; })"
    drawn_live = page.eval_on_selector_all("#event-feed tr.live-new[data-event-id]", rows)
    page.reload()
    wait_live(page)
    ids = [row.split('data-event-id="')[1].split('"')[0] for row in drawn_live]
    rendered = [
        page.eval_on_selector(f'#event-rows tr[data-event-id="{event_id}"]', "r => r.outerHTML")
        for event_id in ids
    ]
    assert drawn_live == rendered
