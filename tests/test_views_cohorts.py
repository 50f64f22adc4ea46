"""The Recent actions panel, a cohort's page and the cohorts API: who may see
them, what they say, and that broken or missing records never give a 500."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from dashboard.acting import actions
from queues.queue import now_ms
from queues.read.cohorts import recent_cohorts
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job

REF = QueueRef("bull", "emails")
KEYS = REF.keys
PANEL = "/queues/bull/emails/cohorts/"
API = "/api/queues/bull/emails/cohorts/"


@pytest.fixture
def retried(dashboard_redis: Redis, db: None) -> str:
    """Six failed jobs retried by oncall; then two complete, one fails again
    the same way, one fails otherwise and one is removed. Returns the cohort id."""
    client = dashboard_redis
    for n in range(1, 7):
        reason = {"failedReason": f"timeout after {n}000 ms"}
        seed_job(client, KEYS, str(n), state="failed", fields=reason, score=n)
    actions.queue_action(client, REF, "retry_all", user="oncall")
    pipe = client.pipeline()
    pipe.lrem(KEYS.wait, 0, "1").lrem(KEYS.wait, 0, "2").zadd(KEYS.completed, {"1": 1, "2": 1})
    pipe.lrem(KEYS.wait, 0, "3").zadd(KEYS.failed, {"3": 1})
    pipe.hset(KEYS.job("3"), "failedReason", "timeout after 99 ms")
    pipe.lrem(KEYS.wait, 0, "4").zadd(KEYS.failed, {"4": 1})
    pipe.hset(KEYS.job("4"), "failedReason", "card declined")
    pipe.lrem(KEYS.wait, 0, "5").delete(KEYS.job("5"))
    pipe.execute()
    (cohort,) = recent_cohorts(client, KEYS, now_ms())
    return cohort.id


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_panel_says_what_became_of_the_retry_each_part_a_link(
    retried: str, client_as: Callable[[str | None], Any]
) -> None:
    response = client_as("viewer").get(PANEL)
    assert response.status_code == 200
    html = response.content.decode()
    text = _text(html)
    assert re.search(r"retried all 6 failed jobs at \d\d:\d\d UTC by oncall", text)
    # The kind, one of the jobs' own reasons under it; failing now the same way.
    assert "had failed with: timeout after &lt;n&gt; ms e.g. timeout after " in text
    assert re.search(r"<q>timeout after [1-6]000 ms</q>", html)
    assert "failing now with: the same kind" in text
    for words in (
        "2 completed",
        "2 failed again",
        "1 of them with the same reason as before",
        "1 waiting",
        "1 gone (removed since)",
    ):
        assert words in text, words
    assert f'href="/queues/bull/emails/cohorts/{retried}/?part=completed"' in html
    assert "audit #" in text


def test_the_queue_page_holds_the_panel_and_reads_no_cohort_itself(
    retried: str, client_as: Callable[[str | None], Any]
) -> None:
    html = client_as("viewer").get("/queues/bull/emails/?state=failed").content.decode()
    assert 'id="recent-actions"' in html
    assert 'data-poll-url="/queues/bull/emails/cohorts/"' in html
    assert "cohorts.js" in html
    assert "failed again" not in html  # the panel's content comes with its own request


def test_no_panel_content_without_actions(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any]
) -> None:
    seed_job(dashboard_redis, KEYS, "w1")
    response = client_as("viewer").get(PANEL)
    assert response.status_code == 200
    assert response.content.strip() == b""


def test_a_cohort_page_lists_the_jobs_of_one_part(
    retried: str, client_as: Callable[[str | None], Any]
) -> None:
    viewer = client_as("viewer")
    html = viewer.get(f"{PANEL}{retried}/?part=failed").content.decode()
    text = _text(html)
    assert "2 failed again" in text
    assert 'href="/queues/bull/emails/job/3"' in html
    assert "card declined" in text
    same = _text(viewer.get(f"{PANEL}{retried}/?part=failed-same").content.decode())
    assert "timeout after 99 ms" in same
    assert "card declined" not in same
    gone = _text(viewer.get(f"{PANEL}{retried}/?part=gone").content.decode())
    assert "cannot be known" in gone
    assert viewer.get(f"{PANEL}{retried}/?part=bogus").status_code == 404


def test_the_api_gives_the_breakdown_and_the_ids_of_a_part(
    retried: str, client_as: Callable[[str | None], Any]
) -> None:
    viewer = client_as("viewer")
    (cohort,) = viewer.get(API).json()["cohorts"]
    assert cohort["id"] == retried
    assert cohort["count"] == 6
    assert cohort["tracked"] == 6
    assert cohort["breakdown"] == {
        "parts": {"wait": 1, "completed": 2, "failed": 2, "gone": 1},
        "failed_same": 1,
        "failed_reason": "timeout after <n> ms",
        "failed_sample": "timeout after 99 ms",
    }
    assert cohort["previous_reason"] == "timeout after <n> ms"
    assert re.fullmatch(r"timeout after [1-6]000 ms", cohort["previous_sample"])
    one = viewer.get(f"{API}{retried}/", {"part": "completed"}).json()
    assert one["total"] == 2
    assert sorted(one["ids"]) == ["1", "2"]
    assert viewer.get(f"{API}{retried}/", {"part": "failed-same"}).json()["ids"] == ["3"]
    bad = viewer.get(f"{API}{retried}/", {"part": "bogus"})
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "bad_request"


def test_missing_and_broken_cohorts_answer_json_never_a_500(
    dashboard_redis: Redis, client_as: Callable[[str | None], Any]
) -> None:
    seed_job(dashboard_redis, KEYS, "w1")
    viewer = client_as("viewer")
    missing = f"{now_ms():013d}-0000abcd"
    for target in (f"{API}{missing}/", f"{API}not-an-id/"):
        answer = viewer.get(target)
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == "not_found"
    broken = f"{now_ms():013d}-0000beef"
    dashboard_redis.set(KEYS.cohort(broken), b"\x00garbage")
    dashboard_redis.zadd(KEYS.cohort_index(), {broken: now_ms()})
    (listed,) = viewer.get(API).json()["cohorts"]
    assert listed["id"] == broken
    assert "not readable" in listed["problem"]
    assert viewer.get(f"{API}{broken}/").status_code == 404
    assert "cannot be shown" in _text(viewer.get(PANEL).content.decode())
    assert viewer.get(f"{PANEL}{broken}/").status_code == 404
    dashboard_redis.delete(KEYS.cohort_index())
    dashboard_redis.hset(KEYS.cohort_index(), "a", "b")  # the index of the wrong type
    assert viewer.get(API).json()["cohorts"] == []
    assert viewer.get(PANEL).status_code == 200


def test_viewing_needs_the_view_permission(
    retried: str, client_as: Callable[[str | None], Any]
) -> None:
    anonymous, nonstaff = client_as(None), client_as("nonstaff")
    assert anonymous.get(API).status_code == 401
    assert nonstaff.get(API).status_code == 403
    assert nonstaff.get(PANEL).status_code == 403
    assert anonymous.get(PANEL).status_code == 302  # to the login page
    assert client_as("viewer").get(API).status_code == 200
