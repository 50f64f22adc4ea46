"""The queue page's history chart in a real Chromium against daphne: the 24 h
chart shows the points of a workload (20 hours of events, then jobs run by our
worker in its own process), reads out a slot's exact figures under the
pointer, marks an admin action done on the page, and switches range. The
page is screenshot in light, dark and phone into build/screenshots/history/."""

from __future__ import annotations

import re
import sys
import time

from playwright.sync_api import Browser, Page, expect

from queues.collector import HistoryCollector
from queues.connection import connect
from queues.keys import HistoryKeys
from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.e2e.conftest import SHOTS_ROOT, Processes
from tests.e2e.server import DashboardServer
from tests.e2e.test_screenshots import page_in_look
from tests.history_helpers import collect_until_read, job_events, write_events

QUEUE = "e2e-history"
REF = QueueRef("bull", QUEUE)
PAGE = f"/queues/bull/{QUEUE}/?state=completed"
SHOTS = SHOTS_ROOT / "history"
CHART = "[data-history-chart]"
SUMMARY_ROW = f'.history-summary tr[data-summary-queue="bull:{QUEUE}"]'


def seed_a_day(url: str) -> None:
    """Jobs every 5 minutes over the last 20 hours: more and slower in the
    afternoon, a burst of failures 6 hours ago."""
    client = connect(url)
    now = int(time.time() * 1000)
    events = []
    for slot in range(20 * 12, 0, -1):
        start = now - slot * 300_000
        hours_ago = slot // 12
        busy = 4 + (hours_ago % 7)
        for n in range(busy):
            failing = hours_ago == 6 and n % 2 == 0
            events += job_events(
                f"s{slot}-{n}", start + n * 1000, 200 + 40 * hours_ago, 30 + 5 * n, ok=not failing
            )
    write_events(client, REF, events)
    client.close()


def test_the_24_hour_chart_shows_a_workload_reads_out_slots_and_marks_actions(
    page: Page,
    processes: Processes,
    redis_url: str,
    browser: Browser,
    dashboard_server: DashboardServer,
    auth_state: str,
) -> None:
    seed_a_day(redis_url)
    client = connect(redis_url)
    queue = Queue(QUEUE, client)
    queue.add_bulk([("resize", {"n": n}, None) for n in range(40)])
    worker = processes.spawn(sys.executable, "-m", "queues", "worker", QUEUE)
    worker.wait_for(r"worker \S+ on ")
    deadline = time.monotonic() + 30
    while client.zcard(REF.keys.completed) < 40:
        assert time.monotonic() < deadline, "the worker did not finish the jobs"
        time.sleep(0.1)
    queue.pause()
    collector = HistoryCollector(connect(redis_url), lambda: [REF], name="e2e")
    collect_until_read(collector)

    page.goto(PAGE)
    chart = page.locator(CHART)
    expect(chart).to_have_attribute("data-range", "24h")
    # The admin action: resume, from the page; the chart shows it as a marker.
    page.get_by_role("button", name="Resume queue").click()
    expect(page.get_by_role("button", name="Pause queue")).to_be_visible()
    expect(chart.locator(".marker")).to_have_count(1)
    expect(chart.locator(".marker").first).to_have_attribute(
        "data-marker", re.compile(r"resume by oncall")
    )

    slots = chart.locator("g.minute")
    expect(slots).to_have_count(288)
    readouts = slots.evaluate_all("gs => gs.map(g => g.getAttribute('data-readout'))")
    busy = [n for n, words in enumerate(readouts) if " 0 completed" not in words]
    assert len(busy) >= 200  # 20 hours of 5-minute slots, and the worker's jobs
    assert any("failure" in readouts[n] and " 0 failures" not in readouts[n] for n in busy)
    assert "40 completed" in " ".join(readouts[-2:])  # our worker's jobs, in the last slots
    # The pointer on a slot reads its exact figures out under the chart.
    target = busy[len(busy) // 2]
    slots.nth(target).locator("rect.hit").hover()
    expect(chart.locator("[data-chart-readout]")).to_have_text(readouts[target])
    assert "wait p50" in readouts[target]
    assert "run p50" in readouts[target]

    SHOTS.mkdir(parents=True, exist_ok=True)
    chart.scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / "history-24h-light.png", full_page=True)
    chart.screenshot(path=SHOTS / "history-24h-hover-light.png")

    # Another range, swapped in place.
    chart.get_by_role("link", name="7d").click()
    expect(page.locator(CHART)).to_have_attribute("data-range", "7d")
    expect(page.locator(f"{CHART} g.minute")).to_have_count(168)
    page.locator(CHART).screenshot(path=SHOTS / "history-7d-light.png")

    # The overview's last hour: our worker's 40 jobs (and the seeded ones of the hour).
    # The server's discovery finds a new queue on its own schedule: reload until it has.
    deadline = time.monotonic() + 30
    while True:
        page.goto("/")
        page.locator(".history-summary").wait_for()
        if page.locator(SUMMARY_ROW).is_visible():
            break
        assert time.monotonic() < deadline, "the queue never showed in the last hour"
        page.wait_for_timeout(500)
    expect(page.locator(SUMMARY_ROW).locator("td").nth(1)).to_have_text("0")
    page.screenshot(path=SHOTS / "overview-last-hour-light.png", full_page=True)

    for look in ("dark", "phone"):
        with page_in_look(browser, dashboard_server, auth_state, look) as other:
            other.goto(PAGE)
            expect(other.locator(f"{CHART} g.minute")).to_have_count(288)
            other.locator(CHART).scroll_into_view_if_needed()
            other.screenshot(path=SHOTS / f"history-24h-{look}.png", full_page=True)
            other.goto("/")
            expect(other.locator(SUMMARY_ROW)).to_be_visible()
            other.screenshot(path=SHOTS / f"overview-last-hour-{look}.png", full_page=True)
    client.close()


def test_a_history_that_began_minutes_ago_fills_the_chart_instead_of_its_right_edge(
    page: Page, redis_url: str
) -> None:
    """The chart opened on 24 hours: a queue collected for 20 minutes was a
    sliver of bars squeezed against the right edge. It opens on the range
    that holds the data; the others are a click away."""
    ref = QueueRef("bull", "e2e-history-new")
    client = connect(redis_url)
    now = int(time.time() * 1000)
    events = []
    for minute in range(20, 0, -1):
        for n in range(3):
            start = now - minute * 60_000 + n * 1000
            events += job_events(f"m{minute}-{n}", start, 150, 40, ok=n != 0 or minute % 4)
    write_events(client, ref, events)
    Queue(ref.name, client).add("waiting")
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [ref], name="e2e-new"))
    client.close()

    page.goto(f"/queues/bull/{ref.name}/?state=completed")
    chart = page.locator(CHART)
    expect(chart).to_have_attribute("data-range", "1h")
    expect(chart.get_by_role("link", name="1h")).to_have_attribute("aria-current", "true")
    svg = chart.locator("svg.chart").bounding_box()
    bars = chart.locator("rect.bar-completed").evaluate_all(
        "rs => rs.map(r => r.getBoundingClientRect().left)"
    )
    assert svg is not None
    assert bars, "no bars drawn"
    # 20 of the hour's 60 minutes: the bars take the right third, not the last 2%.
    assert min(bars) < svg["x"] + svg["width"] * 0.75, (min(bars), svg)
    chart.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    chart.screenshot(path=SHOTS / "history-new-queue-light.png")


def test_a_queue_whose_history_key_broke_names_it_above_its_chart(
    page: Page, redis_url: str, browser: Browser, dashboard_server: DashboardServer, auth_state: str
) -> None:
    """Three hours of history, then the probe's ``SET …:state x``: the chart
    keeps what was recorded and says, above it, which key stopped it."""
    ref = QueueRef("bull", "e2e-history-stopped")
    client = connect(redis_url)
    now = int(time.time() * 1000)
    events = [
        e
        for slot in range(36, 0, -1)
        for n in range(3)
        for e in job_events(f"s{slot}-{n}", now - slot * 300_000 + n * 1000, 250, 40)
    ]
    write_events(client, ref, events)
    Queue(ref.name, client).add("resize", {"n": 1})
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [ref], name="e2e"))
    state = HistoryKeys(ref.name, ref.prefix).state
    client.set(state, "x")
    write_events(client, ref, job_events("late", int(time.time() * 1000) + 1000, 250, 40))
    collect_until_read(HistoryCollector(connect(redis_url), lambda: [ref], name="e2e-2"))

    page.goto(f"/queues/bull/{ref.name}/?state=completed")
    note = page.locator("[data-history-stopped]")
    expect(note).to_contain_text(f"its key {state} holds a string")
    expect(page.locator(f"{CHART} g.minute")).to_have_count(288)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(CHART).scroll_into_view_if_needed()
    page.screenshot(path=SHOTS / "history-stopped-light.png", full_page=True)
    for look in ("dark", "phone"):
        with page_in_look(browser, dashboard_server, auth_state, look) as other:
            other.goto(f"/queues/bull/{ref.name}/?state=completed")
            expect(other.locator("[data-history-stopped]")).to_be_visible()
            other.locator(CHART).scroll_into_view_if_needed()
            other.screenshot(path=SHOTS / f"history-stopped-{look}.png", full_page=True)
    client.close()
