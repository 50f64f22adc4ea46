"""The overview's live dot says what it is: a dot before each queue's name
pulses as the queue's events arrive, and nothing on the page said so."""

from __future__ import annotations

from playwright.sync_api import Browser, expect
from redis import Redis

from queues.keys import QueueKeys
from tests.dashboard_seed import seed_job
from tests.e2e.conftest import wait_live
from tests.e2e.server import DashboardServer
from tests.e2e.test_screenshots import LOOKS, page_in_look


def test_the_overview_says_in_words_what_its_pulsing_dots_mean_in_every_look(
    browser: Browser, dashboard_server: DashboardServer, auth_state: str, redis_client: Redis
) -> None:
    keys = QueueKeys("e2e-added")
    seed_job(redis_client, keys, "1", state="wait")
    for look in LOOKS:
        with page_in_look(browser, dashboard_server, auth_state, look) as page:
            page.goto("/")
            wait_live(page)
            legend = page.locator(".live-legend")
            expect(legend).to_be_visible()
            expect(legend).to_have_text("pulses as events arrive")
            row = page.locator('tr[data-queue="bull:e2e-added"]')
            expect(row.locator("[data-live-dot]")).to_have_attribute(
                "title", "Pulses as events arrive"
            )
            # The legend sits with the heading, above the rows, on the first screen.
            box = legend.bounding_box()
            first = row.bounding_box()
            assert box is not None
            assert first is not None
            assert box["y"] < first["y"], look

            redis_client.xadd(keys.events, {"event": "waiting", "jobId": "1"})
            expect(row.locator("[data-live-dot]")).to_have_class("live-dot pulse")
