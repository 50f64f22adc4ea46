"""The README's screenshots, taken in Chromium from a dashboard with real traffic.

Jobs come from BullMQ 2.20.1 processes (added, failed once, retried, delayed),
so the pictures show what an on-call engineer would see. The files land in
docs/ and are overwritten on every run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Processes, start, wait_live
from tests.e2e.server import ROOT, DashboardServer, free_port

DOCS = ROOT / "docs"


@pytest.fixture
def demo_server(server_env: dict[str, str], tmp_path: Path) -> Iterator[DashboardServer]:
    """A second server that discovers the queues instead of listing the test ones."""
    env = {key: value for key, value in server_env.items() if key != "ECHOMQ_QUEUES"}
    server = DashboardServer(env, free_port(), tmp_path / "daphne.log")
    start(server)
    yield server
    server.stop()


def seed(processes: Processes) -> str:
    """Traffic on four queues; returns the id of a failed job worth a look."""
    emails = processes.peer("worker", "emails", "--fail-first", "--chatty")
    billing = processes.peer("worker", "billing", "--fail-first", "--chatty")
    emails.wait_for("ready")
    billing.wait_for("ready")
    retried = processes.peer_add("emails", "welcome-email", "--attempts", "2", "--count", "12")
    failed = processes.peer_add("emails", "password-reset", "--count", "3")
    processes.peer_add("billing", "charge-card", "--count", "5")
    emails.wait_for(rf"completed {retried[-1]}\b")
    emails.wait_for(rf"failed {failed[-1]} ")
    billing.wait_for(r"(failed \S+ .*\n.*){5}")
    processes.stop_all()
    processes.peer_add("emails", "newsletter", "--count", "25")
    processes.peer_add("emails", "digest", "--delay", "900000", "--count", "4")
    processes.peer_add("thumbnails", "resize", "--count", "40")
    processes.peer_add("reports", "monthly-report", "--delay", "3600000", "--count", "3")
    return failed[-1]


def test_screenshots_of_overview_queue_and_job_pages(
    page: Page, processes: Processes, demo_server: DashboardServer
) -> None:
    failed_job = seed(processes)
    DOCS.mkdir(exist_ok=True)

    page.goto(demo_server.url + "/")
    wait_live(page)
    thumbnails_waiting = page.locator('tr[data-queue="bull:thumbnails"] [data-count-state="wait"]')
    expect(thumbnails_waiting).to_have_text("40")
    page.screenshot(path=DOCS / "overview.png")

    page.goto(demo_server.url + "/queues/bull/emails/?state=failed")
    wait_live(page)
    expect(page.locator("#job-table tr[data-job-id]")).to_have_count(3)
    page.screenshot(path=DOCS / "queue.png")

    page.goto(f"{demo_server.url}/queues/bull/emails/job/{failed_job}")
    wait_live(page)
    expect(page.locator("[data-job-state]")).to_have_attribute("data-job-state", "failed")
    page.screenshot(path=DOCS / "job.png", full_page=True)

    for name in ("overview", "queue", "job"):
        assert (DOCS / f"{name}.png").stat().st_size > 10_000
