"""The failed tab grouped by error: what the page shows, a group's jobs, and
retrying / removing a group through the scripts (each job re-checked: one
that moved meanwhile is left alone and counted, a broken one reported)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from dashboard.error_groups import views as view
from dashboard.models import AuditEntry
from queues.queue import Queue
from queues.read import error_groups as read_groups
from queues.read.error_folding import NO_REASON, group_key
from queues.read.refs import QueueRef
from tests.dashboard_seed import now_ms, seed_index_of_older_rules, seed_job

REF = QueueRef("bull", "emails")
KEYS = REF.keys
PAGE = "/queues/bull/emails/errors/"
ACTION = PAGE + "actions/"
TIMEOUT = group_key("timeout after <n> ms on job <n>")


def _fail(client: Redis, job_id: str, reason: str, finished: int) -> None:
    fields = {"failedReason": reason, "finishedOn": finished}
    seed_job(client, KEYS, job_id, state="failed", fields=fields, score=finished)


@pytest.fixture
def failed(dashboard_redis: Redis) -> Redis:
    base = now_ms() - 3_600_000
    for n in range(1, 8):
        _fail(dashboard_redis, f"t{n}", f"timeout after {30_000 + n} ms on job {n * 13}", base + n)
    dashboard_redis.hset(
        KEYS.job("t7"), "stacktrace", '["Error: timeout\\n    at send (mailer.js:12:3)"]'
    )
    for n in range(1, 3):
        _fail(dashboard_redis, f"u{n}", f"user '{n}' not found", base + 100 + n)
    return dashboard_redis


@pytest.fixture
def actor(client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


def _row(html: str, key: str) -> str:
    found = re.search(rf'<tr data-job-id="{key}".*?</tr>', html, re.DOTALL)
    assert found is not None, key
    return found.group(0)


def test_the_page_shows_each_group_with_count_times_sample_and_stack(
    failed: Redis, actor: Any
) -> None:
    html = actor.get(PAGE).content.decode()
    row = _row(html, TIMEOUT)
    assert "timeout after &lt;n&gt; ms on job &lt;n&gt;" in row
    assert 'data-group-count="7"' in row
    assert "1 h ago" in row or "59 min ago" in row
    assert "UTC" in row  # the exact time on hover
    assert "timeout after 30007 ms on job 91" in row  # the newest as the sample
    assert "at send (mailer.js:12:3)" in row
    assert 'data-jobs="7" data-confirm-many' in row  # asks: more than a handful
    assert 'data-confirm="Retry 7 failed jobs of emails with this error?' in row
    assert 'data-confirm="Remove 7 failed jobs of emails with this error?' in row
    assert f'href="{PAGE}?group={TIMEOUT}"' in row
    users = _row(html, group_key("user <str> not found"))
    assert 'data-group-count="2"' in users
    # Most jobs first.
    assert html.index(TIMEOUT) < html.index(group_key("user <str> not found"))
    assert "2 kinds of error in 9 failed jobs" in html


def test_the_failed_tab_offers_the_grouped_view_and_back(failed: Redis, actor: Any) -> None:
    listed = actor.get("/queues/bull/emails/?state=failed").content.decode()
    assert f'href="{PAGE}"' in listed
    assert ">Group by error</a>" in listed
    grouped = actor.get(PAGE).content.decode()
    assert 'href="/queues/bull/emails/?state=failed"' in grouped
    waiting = actor.get("/queues/bull/emails/?state=wait").content.decode()
    assert "Group by error" not in waiting


def test_the_fragment_carries_the_tabs_for_the_live_refresh(failed: Redis, actor: Any) -> None:
    fragment = actor.get(PAGE, headers={"HX-Request": "true"}).content.decode()
    assert 'id="queue-tabs"' in fragment
    assert 'hx-swap-oob="true"' in fragment
    assert "<html" not in fragment
    Queue(REF.name, failed).retry("t1")
    again = actor.get(PAGE, headers={"HX-Request": "true"}).content.decode()
    assert 'data-group-count="6"' in _row(again, TIMEOUT)


def test_a_group_lists_its_jobs_newest_failure_first(failed: Redis, actor: Any) -> None:
    html = actor.get(PAGE, {"group": TIMEOUT, "size": 20}).content.decode()
    ids = re.findall(r'<tr data-job-id="([^"]+)"', html)
    assert ids == [f"t{n}" for n in range(7, 0, -1)]
    assert "1\u20137 of 7, newest failure first" in html  # an en dash, as the pager writes it
    assert "7 failed jobs with" in html
    assert f'form="group-retry" name="group" value="{TIMEOUT}"' in html
    assert actor.get(PAGE, {"group": "not-a-key"}).status_code == 404
    empty = actor.get(PAGE, {"group": "0" * 16}).content.decode()
    assert "No failed jobs in this group any more" in empty


def test_retrying_a_group_moves_its_jobs_and_the_count_falls(failed: Redis, actor: Any) -> None:
    response = actor.post(ACTION, {"action": "retry", "group": TIMEOUT}, follow=True)
    assert _messages(response) == ["7 failed jobs of the group retried"]
    queue = Queue(REF.name, failed)
    assert {queue.get_state(f"t{n}") for n in range(1, 8)} == {"wait"}
    assert queue.get_state("u1") == "failed"
    html = response.content.decode()
    assert f'data-job-id="{TIMEOUT}"' not in html
    assert 'data-group-count="2"' in html
    entry = AuditEntry.objects.get(action="retry")
    assert (entry.user, entry.queue, entry.count) == ("actor", "bull:emails", 7)


def test_a_job_that_moved_meanwhile_is_left_alone_and_counted(
    failed: Redis, actor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between reading the group's ids and its turn, another user retries t3
    and a worker takes it: the script refuses it, nothing is moved twice."""
    queue = Queue(REF.name, failed)
    real = view.read.group_job_ids

    def read_then_race(*args: Any, **kwargs: Any) -> list[str]:
        ids = real(*args, **kwargs)
        queue.retry("t3")
        return ids

    monkeypatch.setattr(view.read, "group_job_ids", read_then_race)
    response = actor.post(ACTION, {"action": "retry", "group": TIMEOUT}, follow=True)
    assert _messages(response) == [
        "6 failed jobs of the group retried; 1 had moved meanwhile and were left alone"
    ]
    assert failed.lrange(KEYS.wait, 0, -1).count(b"t3") == 1


def test_a_broken_job_is_reported_and_stays(dashboard_redis: Redis, actor: Any) -> None:
    _fail(dashboard_redis, "ok1", "", now_ms() - 10)
    dashboard_redis.zadd(KEYS.failed, {"bad": now_ms()})
    dashboard_redis.set(KEYS.job("bad"), "not a hash")
    key = group_key(NO_REASON)
    response = actor.post(ACTION, {"action": "retry", "group": key}, follow=True)
    (message,) = _messages(response)
    assert message.startswith("1 failed job of the group retried; 1 broken, left in failed: bad")
    assert dashboard_redis.zscore(KEYS.failed, "bad") is not None
    html = response.content.decode()
    assert 'data-group-count="1"' in _row(html, key)


def test_removing_a_group_deletes_its_jobs(failed: Redis, actor: Any) -> None:
    key = group_key("user <str> not found")
    response = actor.post(ACTION, {"action": "remove", "group": key}, follow=True)
    assert _messages(response) == ["2 failed jobs of the group removed"]
    assert not failed.exists(KEYS.job("u1"), KEYS.job("u2"))
    assert failed.zcard(KEYS.failed) == 7


def test_bad_requests_change_nothing(failed: Redis, actor: Any) -> None:
    before = failed.zcard(KEYS.failed)
    for form in (
        {"action": "explode", "group": TIMEOUT},
        {"action": "retry", "group": "../../etc"},
        {"action": "retry"},
        {"action": "retry", "group": "0" * 16},
    ):
        response = actor.post(ACTION, form, follow=True)
        assert response.status_code == 200
        (message,) = _messages(response)
        assert message in (
            "Unknown action 'explode': retry or remove a group",
            "Unknown error group",
            "This error group has no failed jobs any more",
        )
    assert failed.zcard(KEYS.failed) == before


def test_a_failed_key_of_the_wrong_type_is_said_not_a_500(
    dashboard_redis: Redis, actor: Any
) -> None:
    seed_job(dashboard_redis, KEYS, "w1")
    dashboard_redis.set(KEYS.failed, "not a zset")
    response = actor.get(PAGE)
    assert response.status_code == 200
    assert f"the key {KEYS.failed} holds a string" in response.content.decode()


def test_a_group_bigger_than_one_click_says_what_is_left(
    failed: Redis, actor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view, "MAX_GROUP_ACTION_JOBS", 5)
    response = actor.post(ACTION, {"action": "retry", "group": TIMEOUT}, follow=True)
    assert _messages(response) == [
        "5 failed jobs of the group retried; 2 more in the group: run it again for them"
    ]
    # The newest first: the two oldest wait for the next click.
    assert Queue(REF.name, failed).get_state("t1") == "failed"


def test_the_tab_and_the_groups_count_the_same_failed_jobs_when_one_fails_between_reads(
    failed: Redis, actor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: a tab read 178 beside a total of 180 on one screen. The page
    reads the tabs' counts, then the groups: a failure in between showed in
    the groups and not in the tab, which was built from the first read."""
    reading = view.read.error_groups

    def a_failure_meanwhile(client: Redis, ref: QueueRef) -> Any:
        _fail(client, "late", "timeout after 30999 ms on job 999", now_ms())
        return reading(client, ref)

    monkeypatch.setattr(view.read, "error_groups", a_failure_meanwhile)
    html = actor.get(PAGE).content.decode()
    tab = re.search(r'data-count="(\d+)" data-count-state="failed"', html)
    assert tab is not None
    groups = [int(n) for n in re.findall(r'data-group-count="(\d+)"', html)]
    assert int(tab.group(1)) == sum(groups) == 10


def test_the_page_says_regrouping_while_an_index_of_older_rules_is_counted_again(
    dashboard_redis: Redis, actor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deployment's index, counted before the rules' version was kept:
    each job of issue 21's incident in a group of its own. The page shows
    them marked "Regrouping…" while they are counted again (held here at a
    gate), then the one kind."""
    base = now_ms() - 60_000
    ids = [f"o{n}" for n in range(1, 13)]
    for n, job_id in enumerate(ids, 1):
        reason = f"gateway timeout after {30_000 + n * 41} ms (order ord_{n * 104_729:010x})"
        _fail(dashboard_redis, job_id, reason, base + n)
    seed_index_of_older_rules(dashboard_redis, REF, ids)
    gate = threading.Event()
    regroup = read_groups._regroup

    def held(client: Redis, index: Any) -> None:
        gate.wait(10)
        regroup(client, index)

    monkeypatch.setattr(read_groups, "_regroup", held)
    html = actor.get(PAGE).content.decode()
    assert "Regrouping…" in html
    assert "data-pending" in html  # the page asks again until it is done
    assert "12 kinds of error in 12 failed jobs" in html  # as they were
    fragment = actor.get(PAGE, headers={"HX-Request": "true"}).content.decode()
    assert "Regrouping…" in fragment
    assert actor.get("/api/queues/bull/emails/errors/").json()["regrouping"] is True

    gate.set()
    deadline = time.monotonic() + 20
    while "Regrouping…" in (html := actor.get(PAGE).content.decode()):
        assert time.monotonic() < deadline, "still regrouping"
        time.sleep(0.05)
    assert "data-pending" not in html
    kind = _row(html, group_key("gateway timeout after <n> ms (order ord_<id>)"))
    assert 'data-group-count="12"' in kind
    assert "1 kind of error in 12 failed jobs" in html
