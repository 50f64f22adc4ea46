"""The search's answers (dashboard/search/views.py) say why each row matched: the
page's rows end with the field's text around the match, escaped, the match
marked; the API's answer carries the same text by job id."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues.queue import Queue

PAGE = "/queues/bull/emails/search/"
API = "/api/queues/bull/emails/search/"
# A payload someone pasted from a web form: markup that must stay text.
HOSTILE = '<img src=x onerror="alert(1)">'


@pytest.fixture
def viewer(client_as: Callable[[str | None], Any]) -> Any:
    return client_as("viewer")


@pytest.fixture
def jobs(dashboard_redis: Redis) -> list[str]:
    queue = Queue("emails", dashboard_redis)
    ids = queue.add_bulk(
        [
            ("signup", {"card": "c-42", "comment": HOSTILE}, None),
            ("signup", {"card": "c-420", "comment": "ok"}, None),
            ("signup", {"card": "c-7", "comment": "ok"}, None),
        ]
    )
    for job_id in ids:
        queue.fail(job_id, "card_declined: do_not_honor")
    return ids


def test_the_pages_rows_end_with_the_text_they_matched_escaped_and_marked(
    jobs: list[str], viewer: Any
) -> None:
    answer = viewer.get(PAGE, {"state": "failed", "q": "data ~ c-42"}).json()
    assert answer["hits"] == [jobs[1], jobs[0]]
    rows = answer["rows_html"]
    assert (
        '<td class="found"><span class="found-field">data</span>'
        " <code>{&quot;card&quot;:&quot;<mark>c-42</mark>0&quot;,&quot;comment&quot;"
        ":&quot;ok&quot;}</code></td>"
    ) in rows
    hostile = viewer.get(PAGE, {"state": "failed", "q": "data ~ onerror"}).json()["rows_html"]
    assert "<img" not in hostile
    assert "&lt;img src=x <mark>onerror</mark>=" in hostile


def test_the_api_says_by_job_id_what_each_row_matched(jobs: list[str], viewer: Any) -> None:
    answer = viewer.get(API, {"state": "failed", "q": "data ~ c-42", "rows": "1"}).json()
    assert [row["id"] for row in answer["rows"]] == [jobs[1]]
    assert answer["found"] == {
        jobs[1]: {
            "field": "data",
            "before": '{"card":"',
            "match": "c-42",
            "after": '0","comment":"ok"}',
            "more_before": False,
            "more_after": False,
        }
    }
    by_id = viewer.get(API, {"state": "failed", "q": f"id = {jobs[2]}"}).json()
    assert by_id["hits"] == [jobs[2]]
    assert by_id["found"] == {}
