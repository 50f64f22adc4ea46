"""Live pages in a real Chromium: every change comes from another process."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.e2e.conftest import Confirms, Processes, start, wait_live
from tests.e2e.server import DashboardServer, free_port


def mark_page(page: Page) -> None:
    """A marker that a reload would wipe."""
    page.evaluate("window.__noReload = true")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__noReload === true"), "the page was reloaded"


def stream_events_of(redis: Redis, queue: str, job_id: str) -> list[tuple[str, str]]:
    entries = redis.xrange(QueueKeys(queue).events)
    return [
        (stream_id.decode(), fields[b"event"].decode())
        for stream_id, fields in entries
        if fields.get(b"jobId") == job_id.encode()
    ]


def feed_rows_of(page: Page, job_id: str) -> list[tuple[str, str]]:
    """(stream id, event) of a job's rows in the feed, oldest first."""
    rows = page.eval_on_selector_all(
        f'#event-feed tr[data-job-id="{job_id}"]',
        "rows => rows.map(r => [r.dataset.eventId, r.dataset.event])",
    )
    return [tuple(row) for row in reversed(rows)]


def open_events(page: Page, queue: str, query: str = "?type=all") -> None:
    """The events tab; by default with every event (the page's own default is state changes)."""
    page.goto(f"/queues/bull/{queue}/events/{query}")
    wait_live(page)


def test_a_job_added_elsewhere_appears_on_the_queue_page_and_the_overview(
    page: Page, processes: Processes
) -> None:
    queue = "e2e-added"
    processes.peer_add(queue, "seed")
    page.goto(f"/queues/bull/{queue}/?state=wait")
    overview = page.context.new_page()
    overview.goto("/")
    wait_live(page)
    wait_live(overview)
    mark_page(page)
    mark_page(overview)
    wait_count = overview.locator(f'tr[data-queue="bull:{queue}"] [data-count-state="wait"]')
    expect(wait_count).to_have_text("1")

    (job_id,) = processes.peer_add(queue, "fresh")

    expect(page.locator(f'#job-table tr[data-job-id="{job_id}"]')).to_be_visible(timeout=5000)
    expect(page.locator('.tabs [data-count-state="wait"]')).to_have_text("2", timeout=5000)
    expect(wait_count).to_have_text("2", timeout=5000)
    live_dot = overview.locator(f'tr[data-queue="bull:{queue}"] [data-live-dot]')
    expect(live_dot).to_have_class(re.compile(r"\bpulse\b"))

    processes.our_queue(queue, "pause()")

    expect(page.locator(".queue-head [data-paused]")).to_be_visible(timeout=5000)
    expect(page.get_by_role("button", name="Resume queue")).to_be_visible()
    assert_not_reloaded(page)
    assert_not_reloaded(overview)


def test_a_queue_started_elsewhere_joins_the_overview_without_a_reload(
    page: Page, processes: Processes
) -> None:
    processes.peer_add("e2e-alpha", "seed")
    processes.peer_add("e2e-omega", "seed")
    page.goto("/")
    wait_live(page)
    mark_page(page)

    processes.peer_add("e2e-middle", "first")

    # Discovery rescans at most every 10 s, the watcher looks every 3 s.
    row = page.locator('tr[data-queue="bull:e2e-middle"]')
    expect(row).to_be_visible(timeout=30_000)
    names = page.eval_on_selector_all("#queue-rows tr", "rows => rows.map(r => r.dataset.queue)")
    expected = ["bull:e2e-alpha", "bull:e2e-middle", "bull:e2e-omega"]
    assert [name for name in names if name in expected] == expected, "in name order"
    expect(page.locator(".toolbar h1 .muted")).to_have_text(str(len(names)))
    # The new row is live too: its counts follow the next job.
    processes.peer_add("e2e-middle", "second")
    expect(row.locator('[data-count-state="wait"]')).to_have_text("2", timeout=5000)
    assert_not_reloaded(page)


def test_the_overview_filters_as_typed_and_its_rows_stay_live(
    page: Page, processes: Processes
) -> None:
    queue = "e2e-look"  # configured: shown before it holds a key
    page.goto("/")
    wait_live(page)
    mark_page(page)
    page.fill("#queue-filter", "E2E-LOO")
    expect(page.locator("#queue-rows tr")).to_have_count(1)
    expect(page.locator("#queue-rows tr")).to_have_attribute("data-queue", f"bull:{queue}")
    expect(page).to_have_url(re.compile(r"/\?q=E2E-LOO$"))
    expect(page.locator("[data-queue-total]")).to_have_text(re.compile(r"^1 of \d+$"))
    count = page.locator(f'tr[data-queue="bull:{queue}"] [data-count-state="wait"]')
    before = int(count.inner_text())
    processes.peer_add(queue, "while-filtered")
    expect(count).to_have_text(str(before + 1), timeout=5000)
    page.fill("#queue-filter", "no-such-queue")
    expect(page.locator("#queue-rows tr")).to_have_count(0)
    expect(page.locator("[data-filter-empty]")).to_have_text(
        "No queue name contains \u201cno-such-queue\u201d."
    )
    page.fill("#queue-filter", "")
    expect(page.locator(f'tr[data-queue="bull:{queue}"]')).to_be_visible()
    expect(page.locator("[data-filter-empty]")).to_have_count(0)
    assert_not_reloaded(page)
    # The address kept the filter: a reload shows the same rows.
    page.fill("#queue-filter", "e2e-loo")
    expect(page).to_have_url(re.compile(r"\?q=e2e-loo$"))
    page.reload()
    expect(page.locator("#queue-rows tr")).to_have_count(1)
    expect(page.locator("#queue-filter")).to_have_value("e2e-loo")


def test_a_row_leaves_its_tab_when_another_process_moves_the_job(
    page: Page, processes: Processes
) -> None:
    queue = "e2e-tabs"
    worker = processes.bullmq_worker(queue, "--fail-first")
    failed = processes.peer_add(queue, "flaky", "--count", "2")
    worker.wait_for(rf"failed {failed[-1]} ")
    processes.stop_all()  # nothing takes the retried job: it stays waiting
    page.goto(f"/queues/bull/{queue}/?state=failed")
    wait_live(page)
    mark_page(page)
    expect(page.locator("#job-table tr[data-job-id]")).to_have_count(2)

    processes.our_queue(queue, f"retry({failed[0]!r})")

    expect(page.locator(f'#job-table tr[data-job-id="{failed[0]}"]')).to_have_count(0)
    expect(page.locator(f'#job-table tr[data-job-id="{failed[1]}"]')).to_have_count(1)
    expect(page.locator('.tabs [data-count-state="failed"]')).to_have_text("1")
    expect(page.locator('.tabs [data-count-state="wait"]')).to_have_text("1")
    assert_not_reloaded(page)


@pytest.mark.parametrize("worker", ["ours", "bullmq"])
def test_e_the_feed_shows_a_jobs_life_in_order(
    page: Page, processes: Processes, redis_client: Redis, worker: str
) -> None:
    queue = "e2e-life"
    open_events(page, queue)
    mark_page(page)
    if worker == "ours":
        processes.our_worker(queue)
    else:
        processes.bullmq_worker(queue)

    (job_id,) = processes.peer_add(queue, "lifecycle")

    completed = page.locator(f'#event-feed tr[data-job-id="{job_id}"][data-event="completed"]')
    expect(completed).to_be_visible(timeout=10_000)
    in_stream = stream_events_of(redis_client, queue, job_id)
    assert [name for _, name in in_stream][:1] == ["added"]
    assert "active" in [name for _, name in in_stream]
    assert [name for _, name in in_stream][-1] == "completed"
    assert feed_rows_of(page, job_id) == in_stream
    assert_not_reloaded(page)


def test_the_feed_pauses_with_a_new_counter_and_keeps_its_filter(
    page: Page, processes: Processes
) -> None:
    queue = "e2e-feed"
    processes.peer_add(queue, "seed")
    open_events(page, queue, "?type=added")
    page.get_by_role("button", name="Pause feed").click()

    added = processes.peer_add(queue, "while-paused", "--count", "3")

    # Each job's "added" counts, its "waiting" is filtered out.
    expect(page.locator("[data-live-controls]")).to_contain_text("3 new")
    expect(page.locator(f'#event-feed tr[data-job-id="{added[0]}"]')).to_have_count(0)
    page.get_by_role("button", name="Resume feed").click()
    for job_id in added:
        expect(page.locator(f'#event-feed tr[data-job-id="{job_id}"]')).to_have_count(1)
    events = page.eval_on_selector_all(
        "#event-feed tr[data-event]", "rows => rows.map(r => r.dataset.event)"
    )
    assert set(events) == {"added"}


def test_f_events_added_while_the_server_restarts_appear_after_reconnect(
    page: Page, processes: Processes, dashboard_server: DashboardServer, redis_client: Redis
) -> None:
    queue = "e2e-restart"
    processes.peer_add(queue, "before")
    open_events(page, queue)
    mark_page(page)
    first_rendered = page.get_attribute("#event-feed", "data-last-id")

    dashboard_server.stop()
    expect(page.locator("html")).to_have_attribute("data-live", "closed", timeout=10_000)
    # 14 events: more than one update of a fast feed draws, fewer than the live rows.
    added = processes.peer_add(queue, "meanwhile", "--count", "7")
    start(dashboard_server)

    wait_live(page)
    for job_id in added:
        expect(
            page.locator(f'#event-feed tr[data-job-id="{job_id}"][data-event="waiting"]')
        ).to_have_count(1, timeout=15_000)
    shown = page.eval_on_selector_all(
        "#event-feed tr[data-event-id]", "rows => rows.map(r => r.dataset.eventId)"
    )
    in_stream = [
        stream_id.decode() for stream_id, _ in redis_client.xrange(QueueKeys(queue).events)
    ]
    after_render = [
        i
        for i in in_stream
        if tuple(map(int, i.split("-"))) > tuple(map(int, first_rendered.split("-")))
    ]
    assert len(shown) == len(set(shown)), "an event was shown twice"
    assert list(reversed(shown))[-len(after_render) :] == after_render, "an event was lost"
    assert_not_reloaded(page)


def job_badge(page: Page) -> Locator:
    return page.locator("[data-job-state]")


def open_job(page: Page, queue: str, job_id: str) -> None:
    page.goto(f"/queues/bull/{queue}/job/{job_id}")
    wait_live(page)


def test_b_retry_a_failed_job_then_a_worker_completes_it(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-retry"
    worker = processes.bullmq_worker(queue, "--fail-first")
    (job_id,) = processes.peer_add(queue, "flaky")
    worker.wait_for(rf"failed {job_id} ")
    open_job(page, queue, job_id)
    expect(job_badge(page)).to_have_attribute("data-job-state", "failed")

    page.get_by_role("button", name="Retry").click()

    expect(page.locator("#messages")).to_contain_text(job_id)
    worker.wait_for(rf"completed {job_id}\b")
    expect(job_badge(page)).to_have_attribute("data-job-state", "completed", timeout=5000)
    assert redis_client.zscore(QueueKeys(queue).completed, job_id) is not None


def test_c_promote_a_delayed_job_makes_our_worker_run_it(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-promote"
    processes.our_worker(queue)
    (job_id,) = processes.peer_add(queue, "later", "--delay", "3600000")
    open_job(page, queue, job_id)
    expect(job_badge(page)).to_have_attribute("data-job-state", "delayed")

    page.get_by_role("button", name="Promote").click()

    expect(job_badge(page)).to_have_attribute("data-job-state", "completed", timeout=10_000)
    assert redis_client.zscore(QueueKeys(queue).completed, job_id) is not None


JOB_HELD_S = 10


def test_d_fail_an_active_job_its_worker_gets_minus_2_and_the_reason_stays(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-fail"
    # Long enough that the engineer's Fail lands while the job runs on a busy
    # machine too (at 3 s the job sometimes completed first: a flaky failure).
    worker = processes.bullmq_worker(queue, "--sleep", str(JOB_HELD_S))
    (job_id,) = processes.peer_add(queue, "slow")
    open_job(page, queue, job_id)
    mark_page(page)
    # The page turns active by itself when the worker picks the job up.
    expect(job_badge(page)).to_have_attribute("data-job-state", "active", timeout=5000)
    assert_not_reloaded(page)

    page.fill("#job-fail-reason", "stuck on a dead host")
    page.get_by_role("button", name="Fail").click()

    expect(job_badge(page)).to_have_attribute("data-job-state", "failed")
    expect(page.locator(".failure")).to_contain_text("stuck on a dead host")
    # The worker's finish finds its lock gone: BullMQ reports the -2 as "Missing lock".
    worker.wait_for(rf"error Missing lock for job {job_id}\b", timeout=JOB_HELD_S + 10)
    job = redis_client.hgetall(QueueKeys(queue).job(job_id))
    assert b"stuck on a dead host" in job[b"failedReason"]
    assert redis_client.zscore(QueueKeys(queue).failed, job_id) is not None
    assert redis_client.zscore(QueueKeys(queue).completed, job_id) is None
    page.reload()
    expect(job_badge(page)).to_have_attribute("data-job-state", "failed")


def test_a_confirmation_open_while_the_job_page_refreshes_still_acts(
    page: Page, processes: Processes, redis_client: Redis, confirms: Confirms
) -> None:
    """The confirm dialog submits the form it was opened from. A live refresh
    that arrived while it was open used to swap the page's head (title and
    actions) for a fresh copy, so the confirmed form was no longer in the page
    and nothing happened (CI saw it as a Fail that never landed)."""
    queue = "e2e-confirm-refresh"
    (job_id,) = processes.peer_add(queue, "before")
    open_job(page, queue, job_id)
    confirms.manual()
    page.get_by_role("button", name="Remove").click()
    dialog = page.locator("dialog.confirm-dialog[open]")
    expect(dialog).to_be_visible()

    # Another process changes what the head shows, and its event makes the page refetch.
    redis_client.hset(QueueKeys(queue).job(job_id), "name", "after")
    with page.expect_event("requestfinished", lambda r: r.url == page.url):
        processes.our_queue(queue, f"update_progress({job_id!r}, 40)")
    page.evaluate("new Promise(done => setTimeout(done, 100))")  # its merge would run now
    expect(page.locator("main h1")).to_contain_text("before")  # held while the dialog is open

    dialog.locator("[data-confirm-ok]").click()

    expect(page.locator("#messages")).to_contain_text(job_id)
    assert not redis_client.exists(QueueKeys(queue).job(job_id))


def test_the_job_page_says_so_when_another_process_removes_the_job(
    page: Page, processes: Processes
) -> None:
    queue = "e2e-tabs"
    (job_id,) = processes.peer_add(queue, "doomed")
    open_job(page, queue, job_id)
    mark_page(page)

    processes.our_queue(queue, f"remove({job_id!r})")

    expect(page.locator("main h1")).to_have_text(f"No job {job_id} in {queue}")
    assert_not_reloaded(page)


def test_older_events_continue_below_the_rows_the_live_tail_pushed_out(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-feed"
    processes.peer_add(queue, "old", "--count", "75")  # 150 events: one page and more
    open_events(page, queue)
    newest = processes.peer_add(queue, "new", "--count", "10")
    expect(page.locator(f'#event-feed tr[data-job-id="{newest[-1]}"]')).to_have_count(2)

    rows = page.locator("#event-feed tr[data-event-id]")
    live_rows = rows.count()
    assert live_rows < 100 + 20, "the live tail pushed some rendered rows out"

    # "Older events" continues right below the oldest row still shown, page
    # after page, to the stream's start.
    stream = [i.decode() for i, _ in reversed(redis_client.xrange(QueueKeys(queue).events))]
    shown_ids = "rows => rows.map(r => r.dataset.eventId)"
    for _ in range(5):
        more = page.locator("#events-more a")
        if not more.count():
            break
        more.click()
        # htmx marks the link while its request runs; the swap replaces the row.
        expect(page.locator("#events-more a.htmx-request")).to_have_count(0)
    expect(rows).to_have_count(len(stream))
    shown = page.eval_on_selector_all("#event-feed tr[data-event-id]", shown_ids)
    assert shown == stream, "the feed and the stream differ"
    # Reading history paused the feed: new events wait instead of trimming it.
    expect(page.get_by_role("button", name="Resume feed")).to_be_visible()
    processes.peer_add(queue, "later")
    expect(page.locator("[data-live-controls]")).to_contain_text("new")
    expect(page.locator("#event-feed tr[data-event-id]")).to_have_count(len(stream))


def test_two_server_processes_each_feed_their_pages_once(
    page: Page, processes: Processes, server_env: dict[str, str], tmp_path: Path
) -> None:
    queue = "e2e-life"
    processes.peer_add(queue, "seed")
    second = DashboardServer(server_env, free_port(), tmp_path / "second.log")
    start(second)
    try:
        other = page.context.new_page()
        page.goto(f"/queues/bull/{queue}/events/?type=all")
        other.goto(f"{second.url}/queues/bull/{queue}/events/?type=all")
        wait_live(page)
        wait_live(other)

        added = processes.peer_add(queue, "twice-served", "--count", "3")

        for feed_page in (page, other):
            for job_id in added:
                rows = feed_page.locator(f'#event-feed tr[data-job-id="{job_id}"]')
                expect(rows).to_have_count(2)  # added, waiting: once each
    finally:
        second.stop()


def test_hostile_event_fields_are_shown_as_text(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-feed"
    processes.peer_add(queue, "seed")
    open_events(page, queue)
    stream = QueueKeys(queue).events
    hostile = '<img src=x onerror="window.__owned=1">'
    redis_client.xadd(stream, {"event": "failed", "jobId": "x<b>1", "failedReason": hostile})
    redis_client.xadd(stream, {"event": "delayed", "jobId": "2", "delay": "9" * 30})
    redis_client.xadd(stream, {"event": "<script>", "name": hostile})

    expect(page.locator("#event-feed td.detail", has_text=hostile)).to_have_count(2)
    expect(page.locator('#event-feed tr[data-job-id="2"] td.detail')).to_have_text(
        "until " + "9" * 30
    )
    assert page.locator("#event-feed img").count() == 0
    assert page.evaluate("window.__owned === undefined")
    expect(page.locator('#event-feed tr[data-job-id="x<b>1"] a')).to_have_text("x<b>1")


def test_pause_shows_exactly_the_last_500_events_of_a_fast_feed(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    queue = "e2e-feed"
    processes.peer_add(queue, "seed")
    open_events(page, queue)
    stream = QueueKeys(queue).events
    with redis_client.pipeline(transaction=False) as pipe:
        for n in range(700):
            pipe.xadd(stream, {"event": "progress", "jobId": str(n), "data": str(n)})
        pipe.execute()
    newest = redis_client.xrevrange(stream, count=500)
    expect(page.locator('#event-feed tr[data-job-id="699"]')).to_have_count(1)

    page.get_by_role("button", name="Pause feed").click()

    rows = page.locator("#event-feed tr.live-new")
    expect(rows).to_have_count(500)
    shown = page.eval_on_selector_all(
        "#event-feed tr.live-new", "rows => rows.map(r => r.dataset.eventId)"
    )
    assert shown == [stream_id.decode() for stream_id, _ in newest]


def test_the_live_feed_fills_the_window_and_grows_with_it(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    """The feed keeps live only the rows the window shows (each costs layout on
    every frame), so a taller window must get more of them, not an empty end."""
    queue = "e2e-tall"
    processes.peer_add(queue, "seed")
    open_events(page, queue)
    stream = QueueKeys(queue).events

    def flow(first: int) -> None:
        # 80 events, 10 per update: an update's rows are kept or trimmed together.
        for group in range(first, first + 80, 10):
            with redis_client.pipeline(transaction=False) as pipe:
                for n in range(group, group + 10):
                    pipe.xadd(stream, {"event": "progress", "jobId": str(n), "data": "1"})
                pipe.execute()
            expect(page.locator(f'#event-feed tr[data-job-id="{group + 9}"]')).to_have_count(1)

    def rows_fill_the_window() -> bool:
        return bool(
            page.evaluate(
                """() => {
                  const rows = document.querySelectorAll('#event-feed tr[data-event-id]');
                  return rows[rows.length - 1].getBoundingClientRect().bottom >= innerHeight;
                }"""
            )
        )

    flow(0)
    shown_before = page.locator("#event-feed tr[data-event-id]").count()
    assert rows_fill_the_window()
    assert shown_before < 60, "every event kept live: the window does not bound the feed"

    page.set_viewport_size({"width": 1280, "height": 1600})
    flow(100)
    assert rows_fill_the_window()
    assert page.locator("#event-feed tr[data-event-id]").count() > shown_before


def test_runserver_serves_the_live_pages_too(
    browser: Browser,
    server_env: dict[str, str],
    auth_state: str,
    processes: Processes,
    redis_client: Redis,
    tmp_path: Path,
) -> None:
    """`manage.py runserver` for development: the same pages, the same socket."""
    queue = "e2e-runserver"
    processes.peer_add(queue, "seed")
    server = DashboardServer(server_env, free_port(), tmp_path / "runserver.log", "runserver")
    start(server)
    context = browser.new_context(base_url=server.url, storage_state=auth_state)
    try:
        page = context.new_page()
        open_events(page, queue)
        redis_client.xadd(
            QueueKeys(queue).events, {"event": "progress", "jobId": "rs-1", "data": "7"}
        )
        expect(page.locator('#event-feed tr[data-job-id="rs-1"]')).to_have_count(1)
    finally:
        context.close()
        server.stop()


def test_the_health_line_of_a_queue_without_a_chart_keeps_current(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    """A queue whose workers keep no metrics has no chart, only its health in
    words; the chart's 20 s refresh started only under a drawn chart, so "no
    workers · 1 waiting" stayed after the job was gone."""
    queue = "e2e-health-words"
    (job_id,) = processes.peer_add(queue, "stuck")
    page.clock.install()  # the refresh's 20 s go by at the test's word
    page.goto(f"/queues/bull/{queue}/?state=wait")
    caption = page.locator("figure.queue-chart:not(.history-chart) > figcaption")
    expect(caption).to_contain_text("no workers")
    expect(caption).to_contain_text("1 waiting")

    processes.our_queue(queue, f"remove({job_id!r})")
    page.clock.run_for(21_000)

    expect(caption).not_to_contain_text("no workers")


def test_a_fast_feed_nobody_draws_keeps_few_rows_until_it_is_drawn_again(
    page: Page, processes: Processes, redis_client: Redis
) -> None:
    """A page the browser does not draw (here a tab behind another) gets a frame
    about once a second, and that frame lays out every row that is new: in a
    fast feed it keeps only its newest rows, still drawing each event as it
    comes, and is drawn to its full depth once it is in front again."""
    queue = "e2e-unseen"
    processes.peer_add(queue, "seed")
    open_events(page, queue)
    front = page.context.new_page()
    open_events(front, queue)  # the newest tab is the one drawn: `page` is behind it
    stream = QueueKeys(queue).events
    stop = threading.Event()
    sent = [0]

    def produce() -> None:  # about 200 events a second, as a busy queue's workers send them
        while not stop.is_set():
            with redis_client.pipeline(transaction=False) as pipe:
                for _ in range(4):
                    pipe.xadd(stream, {"event": "progress", "jobId": str(sent[0]), "data": "1"})
                    sent[0] += 1
                pipe.execute()
            time.sleep(0.02)

    def live_rows(tab: Page) -> int:
        return int(tab.locator("#event-feed tr.live-new").count())

    def newest_row(tab: Page) -> int:
        return int(tab.eval_on_selector("#event-feed tr.live-new", "row => row.dataset.jobId"))

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    try:
        deadline = time.monotonic() + 10
        while not (live_rows(front) >= 15 and live_rows(page) <= 16):
            assert time.monotonic() < deadline, (
                f"behind: {live_rows(page)} live rows, in front: {live_rows(front)}"
            )
            time.sleep(0.2)
        # Behind, it still takes every event as it comes.
        behind_newest, front_newest = newest_row(page), newest_row(front)
        assert abs(behind_newest - front_newest) < 200, (behind_newest, front_newest)

    finally:
        stop.set()
        producer.join()
    # The last event reaches both tabs (the one behind draws it as it comes),
    # before the one behind is brought to the front.
    last = sent[0] - 1
    deadline = time.monotonic() + 5
    while not newest_row(page) == newest_row(front) == last:
        assert time.monotonic() < deadline, (newest_row(page), newest_row(front), last)
        time.sleep(0.1)
    # In front again, it draws the rows it kept only as data, without waiting for
    # new events (the queue is quiet now).
    page.bring_to_front()
    deadline = time.monotonic() + 5
    while live_rows(page) < 15:
        assert time.monotonic() < deadline, f"in front again: {live_rows(page)} live rows"
        time.sleep(0.1)
    assert newest_row(page) == newest_row(front)
