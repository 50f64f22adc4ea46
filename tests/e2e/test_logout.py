"""Logging out in a real Chromium, from the header's button, under daphne.

The test logs in for itself: logging out ends the session, and the session
the other tests share (auth_state) must outlive this one."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from tests.e2e.conftest import log_in, wait_live
from tests.e2e.server import PASSWORD, USERNAME, DashboardServer


def test_the_log_out_button_lands_on_the_login_page_and_ends_the_session_everywhere(
    browser: Browser, dashboard_server: DashboardServer
) -> None:
    mine = browser.new_context(base_url=dashboard_server.url)
    page: Page = mine.new_page()
    log_in(page, dashboard_server.url)
    # Another browser holding a copy of the cookie (a second machine, a thief).
    copy = browser.new_context(base_url=dashboard_server.url, storage_state=mine.storage_state())
    other = copy.new_page()
    try:
        other.goto("/")
        wait_live(other)
        page.goto("/")
        wait_live(page)
        page.get_by_role("button", name=re.compile("Log out")).click()
        page.wait_for_url(dashboard_server.url + "/login/")
        expect(page.get_by_role("status")).to_contain_text("You are logged out.")
        expect(page.get_by_role("heading", name="Log in")).to_be_visible()
        # The session is gone: the overview sends us back to the login form...
        page.goto("/")
        assert page.url.startswith(dashboard_server.url + "/login/?next=")
        # ... and the copy of the cookie too (the server that served the logout
        # forgot the session at once).
        other.goto("/")
        assert other.url.startswith(dashboard_server.url + "/login/?next=")
        # And logging in again works.
        page.fill("#id_username", USERNAME)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(dashboard_server.url + "/")
    finally:
        copy.close()
        mine.close()
