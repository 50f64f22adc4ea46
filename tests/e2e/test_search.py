"""Searching a queue in a real Chromium against daphne: live progress, cancel,
then retry what the search found (confirmed in the page's dialog naming the
count, the queue and the search), with screenshots of the results in every look."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.keys import QueueKeys
from queues.queue import Queue
from tests.dashboard_seed import seed_failed_bulk
from tests.e2e.conftest import CONFIRM_DIALOG, SHOTS_ROOT, Confirms, wait_live
from tests.e2e.server import DashboardServer
from tests.e2e.test_screenshots import LOOKS

QUEUE = "e2e-search"
SHOTS = SHOTS_ROOT / "search"
# Enough failed jobs that a search which matches nothing takes a few steps.
BULK = 120_000
# The jobs a search finds: more than a handful, so acting on them asks first.
SPECIAL = 7


def _progress(page: Page) -> str:
    return page.locator("[data-search-progress]").inner_text()


def _searched(text: str) -> tuple[int, int]:
    found = re.search(r"search(?:ed|ing) ([\d,]+) of ([\d,]+)", text, re.IGNORECASE)
    assert found, text
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def _search(page: Page, query: str) -> None:
    box = page.get_by_role("searchbox").or_(page.locator("#job-search"))
    box.first.fill(query)
    page.locator("[data-search-form] button[type=submit]").click()


def _seed(redis_client: Redis) -> list[str]:
    keys = QueueKeys(QUEUE)
    seed_failed_bulk(redis_client, keys, BULK)
    queue = Queue(QUEUE, redis_client)
    special = queue.add_bulk([("charge", {"card": f"c-{i}"}, None) for i in range(SPECIAL)])
    for job_id in special:
        queue.fail(job_id, "ECONNRESET from payments-gateway ✗")
    return special


def test_search_shows_live_progress_cancels_then_retries_what_it_found(
    page: Page, redis_client: Redis, confirms: Confirms
) -> None:
    special = _seed(redis_client)
    page.goto(f"/queues/bull/{QUEUE}/?state=failed")
    wait_live(page)

    # A search that matches nothing runs through every job: progress shows as it goes.
    _search(page, "reason ~ nothing-like-this")
    progress = page.locator("[data-search-progress]")
    expect(progress).to_contain_text("Searching… searched")
    expect(page.locator("[data-search-cancel]")).to_be_visible()
    page.wait_for_function(
        "() => /searched [1-9]/.test(document.querySelector('[data-search-progress]').innerText)"
    )
    page.locator("[data-search-cancel]").click()
    expect(progress).to_contain_text("Cancelled after searching")
    searched, total = _searched(_progress(page))
    assert 0 < searched < total == BULK + SPECIAL
    # Cancelled means stopped: the count stays where it was.
    page.wait_for_timeout(600)
    assert _searched(_progress(page))[0] == searched
    expect(page.locator("[data-search-cancel]")).to_be_hidden()

    # The real search: the newest jobs match, so the first page shows at once,
    # each row with the text it matched; the results take the tab's list's
    # place: one list, one set of act buttons.
    _search(page, "reason ~ econnreset")
    rows = page.locator("[data-search-rows] tr[data-job-id]")
    expect(rows).to_have_count(SPECIAL, timeout=5_000)
    expect(rows.first).to_contain_text("ECONNRESET from payments-gateway ✗")
    expect(rows.first.locator("td.found")).to_have_text("reason ECONNRESET from payments-gateway ✗")
    expect(rows.first.locator("td.found mark")).to_have_text("ECONNRESET")
    expect(page.locator("#job-table")).to_be_hidden()
    expect(page.get_by_role("button", name=re.compile(r"^Retry all"))).to_have_count(1)
    expect(progress).to_contain_text(
        f"Searched {BULK + SPECIAL:,} of {BULK + SPECIAL:,} · {SPECIAL} matching", timeout=60_000
    )

    confirms.manual()
    retry = page.locator('[data-search-action="retry"]')
    expect(retry).to_have_accessible_name(f"Retry all {SPECIAL} matching…")
    expect(retry).to_be_enabled()
    retry.click()
    dialog = page.locator(CONFIRM_DIALOG)
    expect(dialog.locator("h2")).to_have_text(f"Retry {SPECIAL} jobs of {QUEUE}?")
    expect(dialog).to_contain_text("They matched the search “reason ~ econnreset”")
    dialog.locator("[data-confirm-ok]").click()
    message = page.locator("[data-search-message]")
    expect(message).to_contain_text(f"{SPECIAL} of {SPECIAL} jobs retried")
    # The results follow: searched again, none of them is failed any more.
    expect(message).to_contain_text("Searched again: the list shows the matches still failed.")
    expect(progress).to_contain_text(f"Searched {BULK:,} of {BULK:,} · 0 matching", timeout=60_000)
    expect(rows).to_have_count(0)
    expect(retry).to_be_disabled()
    # Greyed out now: the message beside it says why, and describes it.
    expect(retry).to_have_accessible_description(re.compile(r"the matches still failed"))
    queue = Queue(QUEUE, redis_client)
    assert sorted(job.id for job in queue.get_jobs("wait")) == sorted(special)
    assert queue.get_counts("failed")["failed"] == BULK

    # Closed: the tab's list is back, current.
    page.locator("[data-search-close]").click()
    expect(page.locator("#job-table")).to_be_visible()
    expect(page.locator('button[value="retry_all"]')).to_contain_text(f"Retry all {BULK:,} failed")


def test_each_result_shows_the_text_it_matched_so_a_false_hit_shows(
    page: Page, redis_client: Redis
) -> None:
    """`data ~ c-42` also finds c-420 … c-429, as "contains" should: the
    matched text in each row tells them apart without opening a job."""
    queue = Queue("e2e-search-cards", redis_client)
    cards = ["c-7", "c-42", *(f"c-42{d}" for d in range(10)), "c-5"]
    ids = queue.add_bulk([("charge", {"card": card, "amount": 1999}, None) for card in cards])
    for job_id in ids:
        queue.fail(job_id, "card_declined: insufficient_funds")
    page.goto("/queues/bull/e2e-search-cards/?state=failed")
    wait_live(page)

    _search(page, "data ~ c-42")

    rows = page.locator("[data-search-rows] tr[data-job-id]")
    expect(page.locator("[data-search-progress]")).to_contain_text("· 11 matching")
    expect(rows).to_have_count(11)
    shown = {
        row.get_attribute("data-job-id"): row.locator("td.found").inner_text() for row in rows.all()
    }
    assert shown == {
        job_id: f'data {{"card":"{card}","amount":1999}}'
        for job_id, card in zip(ids, cards, strict=True)
        if card.startswith("c-42")
    }
    marks = rows.locator("td.found mark").all_inner_texts()
    assert marks == ["c-42"] * 11


def test_search_results_read_well_in_every_look(
    browser: Browser, redis_client: Redis, dashboard_server: DashboardServer, auth_state: str
) -> None:
    _seed(redis_client)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for look, options in LOOKS.items():
        context = browser.new_context(
            base_url=dashboard_server.url, storage_state=auth_state, **options
        )
        page = context.new_page()
        try:
            page.goto(f"/queues/bull/{QUEUE}/?state=failed")
            wait_live(page)
            # The placeholder's example fits the box (it once read "Search failed: rea").
            fits = "el => { el.value = el.placeholder; const w = el.scrollWidth <= el.clientWidth;"
            fits += " el.value = ''; return w; }"
            assert page.eval_on_selector("#job-search", fits), look
            _search(page, "reason ~ econnreset")
            expect(page.locator("[data-search-progress]")).to_contain_text(
                f"· {SPECIAL} matching", timeout=60_000
            )
            expect(page.locator("[data-search-progress]")).to_contain_text(
                "Searched ", timeout=60_000
            )
            page.screenshot(path=SHOTS / f"search-{look}.png", full_page=look == "phone")
            if look == "phone":
                page.screenshot(path=SHOTS / "search-phone-top.png")
            # The result set's actions and Close share one row, even on a phone:
            # one button per line pushed the first result below the screen.
            buttons = page.locator(".search-bar .btn").all()
            assert len(buttons) == 3, [b.inner_text() for b in buttons]
            tops = {round(box["y"]) for b in buttons if (box := b.bounding_box())}
            assert len(tops) == 1, f"{look}: the search bar's buttons take {len(tops)} rows"
        finally:
            context.close()
