"""Screenshots of every page kind in light, dark and phone, each checked for what
it must show.

The pages are the scene of tests/e2e/scene.py (real BullMQ workers, an admin's
retry-all, an hour of per-minute history). Each test opens one page kind in one
look, asserts the facts an on-call engineer reads there (counts, badges, rows,
the chart and its axes, no "undefined" anywhere), and saves a full-page PNG to
build/screenshots/pages/ (tests/e2e/conftest.py's SHOTS_ROOT).

The README's pictures (docs/overview.png, queue.png, job.png) are rewritten
only when asked: ``ECHOMQ_UPDATE_DOCS=1 ./run.sh test tests/e2e/test_screenshots.py``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import SHOTS_ROOT, wait_live
from tests.e2e.scene import HISTORY_MINUTES, HOUR_BEFORE, PAGE_KINDS, Scene, page_path, visit
from tests.e2e.server import ROOT, DashboardServer

SHOTS = SHOTS_ROOT / "pages"
UPDATE_DOCS = os.environ.get("ECHOMQ_UPDATE_DOCS") == "1"
# The README's pictures: which page, taken in the light desktop look.
README_SHOTS = {"overview": "overview.png", "queue-failed": "queue.png", "job-failed": "job.png"}
LOOKS = {
    "light": {"color_scheme": "light", "viewport": {"width": 1280, "height": 860}},
    "dark": {"color_scheme": "dark", "viewport": {"width": 1280, "height": 860}},
    "phone": {
        "color_scheme": "light",
        "viewport": {"width": 390, "height": 844},
        "device_scale_factor": 2,
        "is_mobile": True,
        "has_touch": True,
    },
}


@contextmanager
def page_in_look(
    browser: Browser, server: DashboardServer, auth_state: str, look: str
) -> Iterator[Page]:
    """A signed-in page of its own in ``look`` (a key of LOOKS), closed after."""
    context = browser.new_context(base_url=server.url, storage_state=auth_state, **LOOKS[look])
    try:
        yield context.new_page()
    finally:
        context.close()


# Words a page must never show: a value the server or the page script lost.
LOST_VALUE = re.compile(r"\b(undefined|NaN|null)\b|\[object Object\]")


def rows(page: Page) -> int:
    return page.locator("#job-table tr[data-job-id]").count()


def tab_count(page: Page, state: str) -> str:
    return page.locator(f'.tabs [data-count-state="{state}"]').inner_text()


def chart_is_readable(page: Page, marker: str | None = None) -> None:
    """The queue page's chart is there, with its axes, its bars and its readout."""
    chart = page.locator("[data-queue-chart] svg.chart")
    expect(chart).to_be_visible()
    box = chart.bounding_box()
    assert box is not None
    assert box["height"] >= 140, box
    ticks = chart.locator("text.tick").all_text_contents()
    assert "now" in ticks
    assert "\u221230 min" in ticks  # a minus sign
    counts = page.locator("[data-queue-chart] svg.chart-scale text").all_text_contents()
    assert len(counts) == 4
    assert all(re.fullmatch(r"[\d.]+k?(/min)?", t) for t in counts), counts
    assert chart.locator("rect.bar-completed").count() >= 50  # an hour of traffic
    expect(page.locator("[data-queue-chart] [data-chart-readout]")).to_contain_text(
        "Last full minute"
    )
    if marker:
        assert any(marker in m for m in chart.locator(".marker").evaluate_all(
            "els => els.map(e => e.dataset.marker)"
        ))  # fmt: skip


def number(text: str) -> int:
    return int(text.replace(",", ""))


def seeded_hour(name: str) -> tuple[range, range]:
    """The completed and failed counts a page may show for ``name``'s last hour
    of history (scene.history_minutes): its full minutes and from none to all
    of the current one's (it is written with how far the minute has gone)."""
    completed, failed = HOUR_BEFORE.get(name, ([0], [0]))
    full = HISTORY_MINUTES - 1

    def bounds(minutes: list[int]) -> range:
        return range(sum(minutes[-full:]), sum(minutes[-full:]) + minutes[-1] + 1)

    return bounds(completed), bounds(failed)


def shown_rate_agrees(shown: str, completed: range, failed: range) -> bool:
    """Whether a failure rate as the pages write it ("7.3%") lies between the
    lowest and the highest rate those counts allow (give or take its rounding)."""
    value = float(shown.rstrip("%")) / 100
    low = failed.start / (failed.start + completed[-1])
    high = failed[-1] / (failed[-1] + completed.start)
    return low * 0.95 <= value <= high * 1.05


def check_last_hour(page: Page) -> None:
    """The overview's "Last hour" (the dashboard's history): the scene's four
    queues, most failing first, with the hour's counts the scene recorded and
    the payments incident's failure rate marked."""
    section = page.locator(".history-summary")
    summary = section.locator("tr[data-summary-queue]")
    expect(summary).to_have_count(4)
    assert summary.evaluate_all("rows => rows.map(r => r.dataset.summaryQueue)") == [
        "bull:payments",
        "bull:thumbnails",
        "bull:emails",
        "bull:reports",
    ]
    # The ready jobs each queue holds (the collector's backlog sample).
    for name, waiting in (("payments", "0"), ("thumbnails", "11"), ("emails", "0")):
        row = section.locator(f'tr[data-summary-queue="bull:{name}"]')
        cells = row.locator("td").all_inner_texts()
        completed, failed, rate, wait, run, backlog = (cell.strip() for cell in cells)
        done, lost = seeded_hour(name)
        assert number(completed) in done, (name, completed, done)
        assert number(failed) in lost, (name, failed, lost)
        assert shown_rate_agrees(rate, done, lost), (name, rate)
        assert re.fullmatch(r"[\d.]+ m?s", wait), (name, wait)
        assert re.fullmatch(r"[\d.]+ m?s", run), (name, run)
        assert backlog == waiting, (name, backlog)
    # Failing from 5% on: payments' incident is marked, thumbnails' usual 4.8% is not.
    expect(section.locator('tr[data-summary-queue="bull:payments"] .badge')).to_have_count(1)
    expect(section.locator('tr[data-summary-queue="bull:thumbnails"] .badge')).to_have_count(0)
    # Its failed charges waited out the gateway's 10 s timeout.
    payments = section.locator('tr[data-summary-queue="bull:payments"]')
    expect(payments.locator('[data-label="run p95"]')).to_have_text(re.compile(r"^\d+\.\d s$"))
    # Nothing finished in reports (no rate, no times); its waiting jobs are its backlog.
    reports = section.locator('tr[data-summary-queue="bull:reports"] td').all_inner_texts()
    none = "\u2013"  # a dash
    assert [cell.strip() for cell in reports] == ["0", "0", none, none, none, "3"], reports


def history_is_the_hour(page: Page) -> None:
    """The queue page's history panel draws the scene's hour over one hour (a
    history reaching further back is drawn over 24 hours, the hour a sliver)."""
    expect(page.locator("[data-history-chart]")).to_have_attribute("data-range", "1h")


def check_overview(page: Page, scene: Scene) -> None:
    queue_rows = page.locator("#queue-rows tr[data-queue]")
    expect(queue_rows).to_have_count(4)
    payments = page.locator('tr[data-queue="bull:payments"]')
    expect(payments.locator(".badge")).to_have_text("failing")
    expect(payments.locator(".health-detail")).to_have_text(
        re.compile(r"^\d+% failed, last 5 min$")
    )
    emails = page.locator('tr[data-queue="bull:emails"]')
    expect(emails.locator(".badge")).to_have_count(0)
    expect(emails.locator(".health-detail")).to_have_text(re.compile(r"failed, last 5 min$"))
    expect(page.locator('tr[data-queue="bull:thumbnails"] .badge')).to_have_count(0)
    # Its jobs wait and no worker is connected: said so, not guessed from "nothing active".
    expect(page.locator('tr[data-queue="bull:reports"] .badge')).to_have_text("no workers")
    check_last_hour(page)
    for name in ("emails", "payments", "thumbnails"):
        expect(page.locator(f'tr[data-queue="bull:{name}"] svg.sparkline')).to_have_count(1)
    # Its workers keep no metrics (it has none): the dashboard's history draws
    # its line, flat, as the collector covered every minute of it.
    expect(page.locator('tr[data-queue="bull:reports"] svg.sparkline')).to_have_attribute(
        "aria-label",
        "0 completed, 0 failures in the last 30 min; full height 1/min up, 1/min down;"
        " from the dashboard's history",
    )
    expect(
        page.locator('tr[data-queue="bull:thumbnails"] [data-count-state="active"]')
    ).to_have_text("1")
    # How the sparklines are drawn is said (the column header, or on a phone above the cards).
    expect(
        page.locator(".queues th .spark-scale:visible, .spark-scale-note:visible")
    ).to_contain_text("each row on its own scale")


def check_queue_failed(page: Page, scene: Scene) -> None:
    assert tab_count(page, "failed") == "5"
    assert rows(page) == 5
    expect(page.locator(f'#job-table tr[data-job-id="{scene.failed_job}"]')).to_contain_text(
        "fails on purpose"
    )
    expect(page.locator(".queue-chart .badge")).to_have_text("failing")
    chart_is_readable(page, marker="retry all by oncall: 8 failed jobs moved back to waiting")
    # The history panel: the same hour as the overview's "Last hour" row.
    history_is_the_hour(page)
    history = page.locator("[data-history-chart]")
    readout = history.locator("[data-chart-readout]")
    expect(readout).to_have_text(re.compile(r" in the last hour; wait p95 "))
    said = re.fullmatch(
        r"([\d,]+) completed, ([\d,]+) failures in the last hour; wait p95 [\d.]+ m?s,"
        r" run p95 [\d.]+ s",
        readout.inner_text(),
    )
    assert said, readout.inner_text()
    done, lost = seeded_hour("payments")
    assert number(said[1]) in done, (said[0], done)
    assert number(said[2]) in lost, (said[0], lost)
    assert history.locator("rect.bar-failed").count() >= 12  # the incident's minutes


def check_queue_waiting(page: Page, scene: Scene) -> None:
    assert tab_count(page, "wait") == "11"
    assert rows(page) == 11
    chart_is_readable(page)
    history_is_the_hour(page)


def check_queue_delayed(page: Page, scene: Scene) -> None:
    assert tab_count(page, "delayed") == "4"
    assert rows(page) == 4
    expect(page.locator("#job-table tr[data-job-id]").first).to_contain_text("newsletter")
    history_is_the_hour(page)


def check_queue_completed(page: Page, scene: Scene) -> None:
    assert tab_count(page, "completed") == "6"
    expect(page.locator(f'#job-table tr[data-job-id="{scene.retried_job}"]')).to_contain_text("2/2")
    history_is_the_hour(page)


def check_queue_active(page: Page, scene: Scene) -> None:
    assert tab_count(page, "active") == "1"
    expect(page.locator(f'#job-table tr[data-job-id="{scene.active_job}"]')).to_be_visible()
    history_is_the_hour(page)


def job_state(page: Page, state: str, job_id: str) -> None:
    expect(page.locator("[data-job-state]").first).to_have_attribute("data-job-state", state)
    expect(page.locator("h1")).to_contain_text(job_id)


def check_job_failed(page: Page, scene: Scene) -> None:
    job_state(page, "failed", scene.failed_job)
    expect(page.locator("main")).to_contain_text(
        f"first attempt of {scene.failed_job} fails on purpose"
    )


def check_job_active(page: Page, scene: Scene) -> None:
    job_state(page, "active", scene.active_job)


def check_job_retried(page: Page, scene: Scene) -> None:
    job_state(page, "completed", scene.retried_job)


def check_job_missing(page: Page, scene: Scene) -> None:
    expect(page.locator("h1")).to_have_text(f"No job {scene.missing_job} in emails")


def check_events(page: Page, scene: Scene) -> None:
    feed = page.locator("#event-feed tr[data-event-id]")
    assert feed.count() >= 20
    expect(
        page.locator(f'#event-feed tr[data-event="failed"][data-job-id="{scene.failed_job}"]')
    ).to_have_count(1)


def toolbar_labels_beside_their_controls(page: Page) -> None:
    """A toolbar's label reads with its control: when the toolbar wraps (a
    phone), the two stay on one line ("Job id" once sat at the end of the
    line above its input)."""
    pairs = page.evaluate(
        """() => [...document.querySelectorAll('.toolbar label[for]')].map(label => {
            const control = document.getElementById(label.htmlFor);
            const a = label.getBoundingClientRect(), b = control.getBoundingClientRect();
            return [label.textContent.trim(), a.top + a.height / 2, b.top, b.bottom];
        })"""
    )
    for text, middle, top, bottom in pairs:
        assert top <= middle <= bottom, f"the label {text!r} is not on its control's line"


def check_login(page: Page, scene: Scene) -> None:
    expect(page.get_by_label("Username")).to_be_visible()
    expect(page.get_by_label("Password")).to_be_visible()


def check_not_found(page: Page, scene: Scene) -> None:
    expect(page.locator("h1")).to_have_text("Not found")


CHECKS: dict[str, Callable[[Page, Scene], None]] = {
    "overview": check_overview,
    "queue-failed": check_queue_failed,
    "queue-waiting": check_queue_waiting,
    "queue-delayed": check_queue_delayed,
    "queue-completed": check_queue_completed,
    "queue-active": check_queue_active,
    "job-failed": check_job_failed,
    "job-active": check_job_active,
    "job-retried": check_job_retried,
    "job-missing": check_job_missing,
    "events": check_events,
    "login": check_login,
    "not-found": check_not_found,
}


def test_every_page_kind_has_its_check() -> None:
    assert set(CHECKS) == set(PAGE_KINDS)


@pytest.mark.parametrize("look", list(LOOKS))
@pytest.mark.parametrize("kind", PAGE_KINDS)
def test_screenshot_shows_what_the_page_must(
    browser: Browser,
    fresh_scene: Scene,
    scene_server: DashboardServer,
    auth_state: str,
    kind: str,
    look: str,
) -> None:
    with visit(browser, scene_server.url, auth_state, fresh_scene, kind, **LOOKS[look]) as page:
        try:
            CHECKS[kind](page, fresh_scene)
            toolbar_labels_beside_their_controls(page)
            text = page.locator("body").inner_text()
            lost = LOST_VALUE.search(text)
            around = text[max(0, lost.start() - 80) : lost.end() + 80] if lost else ""
            assert lost is None, f"{kind} shows {lost.group(0)!r}: ...{around}..."
        finally:  # a page that fails its checks is worth a look too
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=SHOTS / f"{kind}-{look}.png", full_page=True)
        if UPDATE_DOCS and look == "light" and kind in README_SHOTS:
            page.screenshot(path=ROOT / "docs" / README_SHOTS[kind], full_page=kind == "job-failed")


def test_the_chart_reads_out_the_minute_and_the_admin_action_under_the_pointer(
    page: Page, fresh_scene: Scene, scene_server: DashboardServer
) -> None:
    page.goto(scene_server.url + page_path("queue-failed", fresh_scene))
    wait_live(page)
    readout = page.locator("[data-queue-chart] [data-chart-readout]")
    resting = readout.inner_text()
    assert resting.startswith("Last full minute, ")

    minute = page.locator("[data-queue-chart] g.minute").nth(30)
    minute.hover()
    when, completed, failed = (
        minute.get_attribute(name) for name in ("data-when", "data-completed", "data-failed")
    )
    failures = f"{failed} failure" + ("" if failed == "1" else "s")
    expect(readout).to_have_text(f"{when}: {completed} completed, {failures}")
    expect(minute).to_have_class(re.compile(r"\bhover\b"))

    page.locator("[data-queue-chart] g.marker").hover()
    expect(readout).to_have_text(
        re.compile(
            r"^\d\d:\d\d:\d\d UTC · retry all by oncall: 8 failed jobs moved back to waiting$"
        )
    )

    page.locator("h1").hover()
    expect(readout).to_have_text(resting)


def test_the_overview_reads_out_the_minute_under_the_pointer(
    page: Page, fresh_scene: Scene, scene_server: DashboardServer
) -> None:
    """Each row is on its own scale, so the figures are read out: the minute
    under the pointer exactly, then the row's half hour and its full heights."""
    page.goto(scene_server.url + "/")
    wait_live(page)
    spark = page.locator('tr[data-queue="bull:emails"] svg.sparkline')
    expect(spark).to_be_visible()
    tip = page.locator(".spark-tip")
    # The live rows swap the row (and its sparkline, whose newest minute grows)
    # as events arrive: under load that happened between every step of a
    # Locator.hover, which then waited 30 s for a sparkline that stayed put.
    # So the pointer moves by coordinates (the script reads the row under it
    # on every move), and the figures and the tip are read in one go.
    seen = ""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        box = spark.evaluate(
            "e => { const r = e.getBoundingClientRect(); return [r.right, r.top + r.height / 2]; }"
        )
        for dx in (1.5, 1.0):  # both in the newest minute (3 px each): a move each time
            page.mouse.move(box[0] - dx, box[1])
        now = page.evaluate(
            """() => {
                const s = document.querySelector('tr[data-queue="bull:emails"] svg.sparkline');
                const t = document.querySelector('.spark-tip');
                return [s.dataset.completed, s.dataset.failed, s.dataset.newest,
                        t && !t.hidden ? t.textContent : ''];
            }"""
        )
        completed, failed, newest, seen = now[0].split(","), now[1].split(","), int(now[2]), now[3]
        clock = time.strftime("%H:%M UTC", time.gmtime(newest * 60))
        failures = f"{int(failed[-1]):,} failure" + ("" if failed[-1] == "1" else "s")
        if f"{clock}: {int(completed[-1]):,} completed, {failures}" in seen:
            break
    else:
        raise AssertionError(f"the tip over the newest minute says {seen!r}")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text(re.compile(r"in the last \d+ min; full height [\d,]+/min up"))
    page.locator("h1").hover()
    expect(tip).to_be_hidden()
