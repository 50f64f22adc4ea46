"""Several Redis servers seen from a real browser: the overview groups the
queues by connection, a queue of the same name shows once per server with its
own counts and link, events on the second server update its row live, and a
server nobody answers on is a group that says so.

The test has its own daphne: the session's Redis as the default connection,
a second private redis-server as "staging", and a port with no Redis behind
it as "eu-down".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_jobs
from tests.e2e import test_accessibility as a11y
from tests.e2e.conftest import SHOTS_ROOT, log_in, start, wait_live
from tests.e2e.server import DashboardServer, free_port, prepare

SHOTS = SHOTS_ROOT / "connections"
axe_source = a11y.axe_source  # the pinned axe-core, as the accessibility tests load it
KEYS = QueueRef("bull", "emails").keys


@pytest.fixture
def server(
    redis_url: str, second_redis_url: str, redis_client: Redis, second_redis: Redis, tmp_path: Path
) -> Iterator[DashboardServer]:
    connections = [
        {"name": "staging", "url": second_redis_url, "prefixes": ["bull"]},
        {"name": "eu-down", "url": f"redis://127.0.0.1:{free_port()}/0"},
    ]
    env = prepare(redis_url, tmp_path, ECHOMQ_CONNECTIONS=json.dumps(connections))
    dashboard = DashboardServer(env, free_port(), tmp_path / "daphne.log")
    start(dashboard)
    yield dashboard
    dashboard.stop()


def logged_in_page(browser: Browser, server: DashboardServer, **options: object) -> Page:
    context = browser.new_context(base_url=server.url, **options)  # type: ignore[arg-type]
    page = context.new_page()
    log_in(page, server.url)
    return page


def test_the_overview_shows_one_group_per_server_and_follows_the_second_live(
    browser: Browser,
    server: DashboardServer,
    redis_client: Redis,
    second_redis: Redis,
    axe_source: str,
) -> None:
    seed_jobs(redis_client, KEYS, "failed", 2)
    seed_jobs(second_redis, KEYS, "failed", 3)
    seed_jobs(second_redis, QueueRef("bull", "reports").keys, "wait", 4)
    page = logged_in_page(browser, server, viewport={"width": 1280, "height": 760})
    page.goto("/")
    wait_live(page)

    heads = page.locator("tr.connection-head")
    expect(heads).to_have_count(3)
    expect(page.locator('tr[data-group="default"]')).to_contain_text("1 queue")
    expect(page.locator('tr[data-group="staging"]')).to_contain_text("2 queues")
    expect(page.locator('tr[data-group="eu-down"]')).to_contain_text("unreachable")
    on_default = page.locator('tr[data-queue="bull:emails"]')
    on_staging = page.locator('tr[data-queue="staging bull:emails"]')
    expect(on_default.locator('[data-count-state="failed"]')).to_have_text("2")
    expect(on_staging.locator('[data-count-state="failed"]')).to_have_text("3")
    expect(on_staging.locator("a.queue-name")).to_have_attribute(
        "href", "/c/staging/queues/bull/emails/"
    )

    # A job added on the second server: its row counts it, the other does not.
    Queue("emails", second_redis).add("welcome", {"to": "a@example.com"})
    expect(on_staging.locator('[data-count-state="wait"]')).to_have_text("1", timeout=10_000)
    expect(on_default.locator('[data-count-state="wait"]')).to_have_text("0")

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "overview-light.png"), full_page=True)
    blocking = [v for v in a11y.audit(page, axe_source) if v["impact"] in a11y.BLOCKING]
    assert not blocking, a11y.describe(blocking)
    on_staging.locator("a.queue-name").click()
    page.wait_for_url("**/c/staging/queues/bull/emails/")
    expect(page.locator(".queue-head h1 .badge.connection")).to_have_text("staging")
    expect(page.locator('#queue-tabs [data-count-state="failed"]')).to_contain_text("3")
    page.screenshot(path=str(SHOTS / "queue-light.png"))
    page.context.close()

    dark = logged_in_page(
        browser, server, viewport={"width": 1280, "height": 760}, color_scheme="dark"
    )
    dark.goto("/")
    expect(dark.locator("tr.connection-head")).to_have_count(3)
    dark.screenshot(path=str(SHOTS / "overview-dark.png"), full_page=True)
    blocking = [v for v in a11y.audit(dark, axe_source) if v["impact"] in a11y.BLOCKING]
    assert not blocking, a11y.describe(blocking)
    dark.context.close()

    phone = logged_in_page(
        browser, server, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True
    )
    phone.goto("/")
    expect(phone.locator("tr.connection-head")).to_have_count(3)
    phone.screenshot(path=str(SHOTS / "overview-phone.png"), full_page=True)
    phone.context.close()
