"""The head of every job table (a queue's tab, its search results, an error
group's jobs) is built in one place, beside the rows it heads."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from dashboard.shared.presenters import job_rows_html, job_table_head_html
from queues.job import Job
from queues.read.error_folding import group_key
from queues.read.lists import JobPage, JobRow
from queues.read.refs import QueueRef
from queues.read.states import TABS
from tests.dashboard_seed import now_ms, seed_job

REF = QueueRef("bull", "emails")
QUEUE_PAGE = "/queues/bull/emails/"


@pytest.mark.parametrize("found", [False, True], ids=["tab", "search"])
@pytest.mark.parametrize("selectable", [True, False])
@pytest.mark.parametrize("tab", TABS, ids=lambda t: t.name)
def test_the_head_has_a_column_for_each_cell_of_a_row(
    tab: Any, selectable: bool, found: bool
) -> None:
    """A search's rows end with the text they matched (found_cell_html)."""
    job = Job("1", "task", timestamp=now_ms(), failed_reason="boom")
    page = JobPage(REF, tab.name, 0, 50, 1, [JobRow(job, tab.name)])
    row = job_rows_html(page, selectable=selectable, found={} if found else None)
    head = job_table_head_html(tab.name, selectable=selectable, found=found)
    assert head.count("<th ") == row.count("<td")
    assert ("data-select-all" in head) == selectable
    assert ("Reason" in head) == tab.shows_reason
    assert tab.time_heading in head
    assert (">Matched</th>" in head) == found


def _head(html: str, table_class: str) -> str:
    found = re.search(rf'<table class="{table_class}">\s*(<thead>.*?</thead>)', html, re.DOTALL)
    assert found is not None, table_class
    return found.group(1)


@pytest.fixture
def actor(client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def test_the_failed_tab_its_search_and_an_error_group_draw_the_same_head(
    dashboard_redis: Redis, actor: Any
) -> None:
    finished = now_ms() - 60_000
    fields = {"failedReason": "timeout after 30 ms", "finishedOn": finished}
    seed_job(dashboard_redis, REF.keys, "f1", state="failed", fields=fields, score=finished)

    page = actor.get(QUEUE_PAGE + "?state=failed").content.decode()
    tab_head = _head(page, "jobs")
    search_head = _head(page, "jobs search-jobs")
    # An actor may tick the tab's rows; search results are acted on as a whole.
    assert tab_head == job_table_head_html("failed", selectable=True)
    assert search_head == job_table_head_html("failed", found=True)
    for head in (tab_head, search_head):
        assert ">Finished</th>" in head
        assert ">Reason</th>" in head

    group = group_key("timeout after <n> ms")
    group_page = actor.get(f"/queues/bull/emails/errors/?group={group}").content.decode()
    group_head = _head(group_page, "jobs")
    assert group_head == job_table_head_html("failed", time_heading="Failed")
    assert "data-select-all" not in group_head


def test_a_tab_without_reasons_heads_its_time_column_with_its_own_word(
    dashboard_redis: Redis, actor: Any
) -> None:
    seed_job(dashboard_redis, REF.keys, "d1", state="delayed", score=(now_ms() + 60_000) * 4096)
    page = actor.get(QUEUE_PAGE + "?state=delayed").content.decode()
    head = _head(page, "jobs")
    assert ">Due</th>" in head
    assert "Reason" not in head
