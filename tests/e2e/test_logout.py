"""Logging out in a real Chromium, from the header's button, under daphne."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.conftest import wait_live
from tests.e2e.server import PASSWORD, USERNAME, DashboardServer


def test_the_log_out_button_lands_on_the_login_page_which_says_so(
    page: Page, dashboard_server: DashboardServer
) -> None:
    page.goto("/")
    wait_live(page)
    page.get_by_role("button", name=re.compile("Log out")).click()
    page.wait_for_url(dashboard_server.url + "/login/")
    expect(page.get_by_role("status")).to_contain_text("You are logged out.")
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()
    # The session is gone: the overview sends us back to the login form.
    page.goto("/")
    assert page.url.startswith(dashboard_server.url + "/login/?next=")
    # And logging in again works.
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(dashboard_server.url + "/")
