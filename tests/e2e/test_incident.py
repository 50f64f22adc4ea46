"""Issue 21's incident, end to end in a real Chromium against daphne: a
payment gateway times out, every failure naming its own order id
("gateway timeout after 30412 ms (order ord_d3587f749c)"). The failed tab,
grouped by error, shows one kind; the on-call engineer retries it from the
group's "Retry N…"; a worker of our runtime (its own process) fails every
job again the same way; the Recent actions panel says all of them failed
again with the same reason, and shows the kind with one real reason under
it. Screenshots (light, dark, phone) go to build/screenshots/incident/."""

from __future__ import annotations

import random
import re
import sys

from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.queue import Queue
from queues.read.error_folding import group_key
from tests.e2e.conftest import CONFIRM_DIALOG, ROOT, SHOTS_ROOT, Confirms, Processes, wait_live
from tests.e2e.server import DashboardServer
from tests.e2e.test_screenshots import LOOKS, LOST_VALUE, page_in_look

QUEUE = "e2e-gateway"
JOBS = 40
KIND = "gateway timeout after <n> ms (order ord_<id>)"
SHOTS = SHOTS_ROOT / "incident"
WORKER = ROOT / "tests" / "e2e" / "gateway_worker.py"
REASON = re.compile(r"gateway timeout after 3\d{4} ms \(order ord_[0-9a-f]{10}\)")


def _orders(client: Redis) -> list[str]:
    """JOBS jobs, one per order, each failing on its only attempt."""
    orders = random.Random(21)
    queue = Queue(QUEUE, client)
    return [
        queue.add("charge", {"order": f"ord_{orders.getrandbits(40):010x}"}, {"attempts": 1})
        for _ in range(JOBS)
    ]


def test_a_gateway_incident_is_one_kind_retried_from_its_group_and_failing_again_the_same_way(
    page: Page,
    processes: Processes,
    redis_client: Redis,
    confirms: Confirms,
    browser: Browser,
    dashboard_server: DashboardServer,
    auth_state: str,
) -> None:
    ids = _orders(redis_client)
    worker = processes.spawn(sys.executable, str(WORKER), QUEUE)
    worker.wait_for("ready")
    for job_id in ids:
        worker.wait_for(rf"failed {job_id}\n")

    page.goto(f"/queues/bull/{QUEUE}/?state=failed")
    wait_live(page)
    page.get_by_role("link", name="Group by error").click()
    kind = page.locator(f'#job-table tr[data-job-id="{group_key(KIND)}"]')
    expect(kind.locator("td.group-count")).to_have_text(str(JOBS), timeout=15_000)
    expect(kind.locator("code.folded")).to_have_text(KIND)
    expect(page.locator("#job-table tr[data-job-id]")).to_have_count(1)
    expect(page.locator("nav.pager")).to_contain_text(f"1 kind of error in {JOBS} failed jobs")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "grouped-light.png"), full_page=True)
    for look in ("dark", "phone"):
        with page_in_look(browser, dashboard_server, auth_state, look) as other:
            other.goto(f"/queues/bull/{QUEUE}/errors/")
            expect(other.locator("#job-table tr[data-job-id]")).to_have_count(1)
            width = other.evaluate("document.documentElement.scrollWidth")
            assert width <= LOOKS[look]["viewport"]["width"], (look, width)
            other.screenshot(path=str(SHOTS / f"grouped-{look}.png"), full_page=True)
            other.locator("#job-table").screenshot(path=str(SHOTS / f"group-{look}.png"))

    # "Retry 40…" of the kind, through the page's own confirmation.
    keys = Queue(QUEUE, redis_client).keys
    before = {redis_client.hget(keys.job(job_id), "failedReason").decode() for job_id in ids}
    assert len(before) == JOBS  # every reason its own text
    confirms.manual()
    kind.get_by_role("button", name=re.compile(rf"Retry {JOBS}")).click()
    dialog = page.locator(CONFIRM_DIALOG)
    expect(dialog).to_contain_text(f"Retry {JOBS} failed jobs of {QUEUE} with this error?")
    dialog.locator("[data-confirm-ok]").click()
    expect(page.locator(".message-success")).to_have_text(
        f"{JOBS} failed jobs of the group retried"
    )

    # The worker fails them all again, each with new milliseconds.
    for job_id in ids:
        worker.wait_for(rf"(?s)failed {job_id}\n.*failed {job_id}\n")
    page.goto(f"/queues/bull/{QUEUE}/?state=failed")
    panel = page.locator("#recent-actions")
    expect(panel.locator('[data-part="failed"]')).to_have_text(
        f"{JOBS} failed again", timeout=15_000
    )
    expect(panel.locator('[data-part="failed-same"]')).to_have_text(
        "all of them with the same reason as before"  # every one: not two counts to compare
    )
    expect(panel.locator('[data-part="wait"]')).to_have_count(0)
    expect(panel.locator(".cohort-reason code").first).to_have_text(KIND)
    sample = panel.locator(".cohort-sample q").first
    expect(sample).to_have_text(REASON)
    assert sample.inner_text() in before  # one of the jobs' own reasons
    expect(panel).to_contain_text("failing now with: the same kind")
    text = panel.inner_text()
    assert not LOST_VALUE.search(text), text
    page.screenshot(path=str(SHOTS / "recent-actions-light.png"), full_page=True)
    panel.screenshot(path=str(SHOTS / "panel-light.png"))
    for look in ("dark", "phone"):
        with page_in_look(browser, dashboard_server, auth_state, look) as other:
            other.goto(f"/queues/bull/{QUEUE}/?state=failed")
            if look == "phone":  # folded to one line until tapped
                other.locator("#recent-actions summary").click()
            expect(other.locator('#recent-actions [data-part="failed-same"]')).to_be_visible()
            width = other.evaluate("document.documentElement.scrollWidth")
            assert width <= LOOKS[look]["viewport"]["width"], (look, width)
            other.screenshot(path=str(SHOTS / f"recent-actions-{look}.png"), full_page=True)
            other.locator("#recent-actions").screenshot(path=str(SHOTS / f"panel-{look}.png"))
