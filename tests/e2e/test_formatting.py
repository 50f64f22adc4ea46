"""Numbers and durations are written in one place per language: dashboard/shared/formatting.py
(and presenters) on the server, static/dashboard/format.js in the page. A count
the server rendered and the same count after a live update must read the same,
so both run on one table of values here, the page's through Playwright."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page

from dashboard.shared import formatting, presenters

YEAR_MS = 365 * 86_400_000
# Ties of one decimal (1,250 is 1.25k exactly), numbers just under and over a
# unit, the largest of each unit, negative ones, a value past two years.
COUNTS = [0, 1, 7, 999, 1000, 1049, 1050, 1250, 1251, 1350, 1750, 1850, 2250, 9999, 12_345,
          99_950, 999_949, 999_950, 1_000_000, 1_250_000, 1_850_000, 2_500_000_000,
          1_204_331, 10**12, -1250, -1_500_000]  # fmt: skip
DURATIONS_MS = [0, 1, 340, 999, 1000, 1049, 1050, 1250, 1850, 4200, 59_949, 59_950, 59_999,
                60_000, 61_000, 3_599_999, 3_600_000, 7_200_000, 86_399_999, 86_400_000,
                5 * 86_400_000, 2 * YEAR_MS - 1, 2 * YEAR_MS, 73 * YEAR_MS, -4200]  # fmt: skip

# name in format.js -> (the server's function, the values)
TWINS: dict[str, tuple[Callable[[Any], str], list[int]]] = {
    "thousands": (formatting.thousands, COUNTS),
    "compact": (formatting.compact, COUNTS),
    "failures": (formatting.failures, COUNTS),
    "span": (formatting.span, DURATIONS_MS),
    "running": (presenters.running_label, [ms for ms in DURATIONS_MS if ms >= 0]),
}

IN_THE_PAGE = """async ([name, values]) => {
  const format = await import(document.querySelector('script[src*="dashboard/live"]')
    .src.replace(/live[^/]*$/, "format.js"));
  return values.map((value) => format[name](value));
}"""


@pytest.mark.parametrize("name", TWINS)
def test_the_page_writes_numbers_and_durations_as_the_server_does(page: Page, name: str) -> None:
    server, values = TWINS[name]
    page.goto("/")
    in_the_page = page.evaluate(IN_THE_PAGE, [name, values])
    assert dict(zip(values, in_the_page, strict=True)) == {v: server(v) for v in values}
