"""Fixtures of the shipped-configuration tests: one site per module, as shipped.

Each module names its Redis with a module-scoped ``topology`` fixture (and,
when its users set something more, ``site_settings``; several server
processes: ``site_processes``); ``site`` starts that Redis and the site on it
exactly as docs/deploy.md ships it (tests/e2e/shipped.py), once per module.
The browser's pages start logged in on that site, over TLS.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser

from tests.e2e.shipped import ShippedSite, Topology, log_in, shipped_site


@pytest.fixture(scope="module")
def site_settings() -> dict[str, str]:
    return {}


@pytest.fixture(scope="module")
def site_processes() -> int:
    return 1


@pytest.fixture(scope="module")
def site(
    topology: Topology,
    site_settings: dict[str, str],
    site_processes: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ShippedSite]:
    workdir = tmp_path_factory.mktemp("shipped")
    with shipped_site(topology, workdir, site_processes, **site_settings) as started:
        yield started


@pytest.fixture(scope="module")
def site_login(
    browser: Browser, site: ShippedSite, tmp_path_factory: pytest.TempPathFactory
) -> str:
    return log_in(browser, site, tmp_path_factory.mktemp("shipped-login") / "state.json")


@pytest.fixture(scope="module")
def browser_context_args(site: ShippedSite, site_login: str) -> dict[str, Any]:
    """Pages on the shipped site (not the suite's shared development server)."""
    return {
        "base_url": site.url,
        "storage_state": site_login,
        "ignore_https_errors": True,
        "viewport": {"width": 1280, "height": 860},
    }
