from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import pytest
from redis import Redis

from queues.queue import Queue
from queues.read.refs import QueueRef
from tests.dashboard_seed import seed_job, seed_jobs

KEYS = QueueRef("bull", "emails").keys
QUEUE_URL = "/queues/bull/emails/"
ACTIONS_URL = QUEUE_URL + "actions/"
BULK_URL = QUEUE_URL + "bulk/"


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


@pytest.fixture
def queue(dashboard_redis: Redis) -> Queue:
    return Queue("emails", dashboard_redis)


def _messages(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


def _button(html: str, action: str) -> str:
    """The <button> element whose value is ``action``."""
    found = re.search(rf'<button[^>]*value="{action}".*?</button>', html, re.DOTALL)
    assert found is not None, f"no {action} button"
    return found.group(0)


def _button_text(html: str, action: str) -> str:
    return re.sub(r"<[^>]+>", "", _button(html, action).split(">", 1)[1])


def _post(client: Any, url: str, data: dict[str, Any]) -> list[str]:
    response = client.post(url, data, follow=True)
    assert response.status_code == 200
    return _messages(response)


def test_retry_moves_a_failed_job_and_a_second_retry_says_why_not(
    actor: Any, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    seed_job(queue.connection, KEYS, "42", state="failed")
    caplog.set_level(logging.INFO, logger="echomq.audit")
    data = {"action": "retry", "ids": ["42"], "state": "failed"}
    assert _post(actor, ACTIONS_URL, data) == ["Job 42 retried"]
    assert queue.get_state("42") == "wait"
    assert _post(actor, ACTIONS_URL, data) == [
        "Job 42 is no longer failed — someone retried it already"
    ]
    assert queue.get_state("42") == "wait"
    lines = [r.getMessage() for r in caplog.records if r.name == "echomq.audit"]
    assert lines[0] == "user=actor action=retry queue=bull:emails jobs=42 result=moved=1 refused=0"
    assert lines[1].endswith("result=moved=0 refused=1")


def test_retry_a_completed_job_runs_it_again(actor: Any, queue: Queue) -> None:
    seed_job(queue.connection, KEYS, "c", state="completed")
    messages = _post(actor, ACTIONS_URL, {"action": "retry", "ids": ["c"], "state": "completed"})
    assert messages == ["Job c retried"]
    assert queue.get_state("c") == "wait"


def test_promote_a_delayed_job(actor: Any, queue: Queue) -> None:
    job_id = queue.add("later", {"x": 1}, {"delay": 60_000})
    assert _post(actor, ACTIONS_URL, {"action": "promote", "ids": [job_id]}) == [
        f"Job {job_id} promoted"
    ]
    assert queue.get_state(job_id) == "wait"
    again = _post(actor, ACTIONS_URL, {"action": "promote", "ids": [job_id]})
    assert again == [f"Job {job_id} is no longer delayed — it was promoted or has run already"]


def test_fail_records_the_reason_and_the_user(actor: Any, queue: Queue) -> None:
    job_id = queue.add("stuck", {})
    _post(actor, ACTIONS_URL, {"action": "fail", "ids": [job_id], "reason": "bad payload"})
    job = queue.get_job(job_id)
    assert job is not None
    assert queue.get_state(job_id) == "failed"
    assert job.failed_reason == "bad payload (failed by actor)"


def test_remove_from_the_job_page_returns_to_the_queue(actor: Any, queue: Queue) -> None:
    job_id = queue.add("gone-soon", {})
    response = actor.post(
        ACTIONS_URL, {"action": "remove", "ids": [job_id], "next": QUEUE_URL}, follow=True
    )
    assert response.redirect_chain[-1][0] == QUEUE_URL
    assert _messages(response) == [f"Job {job_id} removed"]
    assert queue.get_job(job_id) is None


def test_selected_rows_move_together_and_refusals_are_listed(actor: Any, queue: Queue) -> None:
    seed_jobs(queue.connection, KEYS, "failed", 3)
    queue.retry("2")
    messages = _post(actor, ACTIONS_URL, {"action": "retry", "ids": ["1", "2", "3"]})
    assert messages == [
        "2 jobs retried. 1 not: Job 2 is no longer failed — someone retried it already"
    ]
    assert queue.get_counts("failed", "wait") == {"failed": 0, "wait": 3}


def test_bad_action_input_is_a_message_not_an_error(actor: Any, queue: Queue) -> None:
    seed_job(queue.connection, KEYS, "1", state="failed")
    assert _post(actor, ACTIONS_URL, {"action": "explode", "ids": ["1"]}) == [
        "Unknown action 'explode'"
    ]
    assert _post(actor, ACTIONS_URL, {"action": "retry"}) == ["Select at least one job"]
    assert "invalid job id" in _post(actor, ACTIONS_URL, {"action": "retry", "ids": ["a:b"]})[0]
    assert queue.get_state("1") == "failed"


def test_retry_all_promote_all_and_clean(actor: Any, queue: Queue) -> None:
    seed_jobs(queue.connection, KEYS, "failed", 5)
    assert _post(actor, BULK_URL, {"action": "retry_all", "state": "failed"}) == [
        "5 failed jobs moved back to waiting"
    ]
    for n in range(3):
        queue.add("later", {"n": n}, {"delay": 60_000})
    assert _post(actor, BULK_URL, {"action": "promote_all", "state": "delayed"}) == [
        "3 delayed jobs promoted to waiting"
    ]
    seed_jobs(queue.connection, KEYS, "completed", 4, first=100)
    messages = _post(actor, BULK_URL, {"action": "clean", "state": "completed", "grace_ms": 0})
    assert messages == ["4 completed jobs older than 0 seconds removed"]
    assert queue.get_counts("wait", "completed") == {"wait": 8, "completed": 0}


def test_clean_keeps_jobs_younger_than_the_chosen_age(actor: Any, queue: Queue) -> None:
    seed_jobs(queue.connection, KEYS, "failed", 2)
    messages = _post(actor, BULK_URL, {"action": "clean", "state": "failed", "grace_ms": 3_600_000})
    assert messages == ["0 failed jobs older than 1 hour removed"]
    assert queue.get_counts("failed") == {"failed": 2}


def test_pause_and_resume(actor: Any, queue: Queue) -> None:
    queue.add("x", {})
    assert _post(actor, BULK_URL, {"action": "pause"}) == [
        "Queue emails paused: workers take no new jobs"
    ]
    assert queue.is_paused()
    html = actor.get(QUEUE_URL + "?state=wait").content.decode()
    assert "Resume queue" in html
    assert _post(actor, BULK_URL, {"action": "resume"}) == ["Queue emails resumed"]
    assert not queue.is_paused()


def test_actor_sees_the_buttons_valid_for_the_state(actor: Any, queue: Queue) -> None:
    seed_job(queue.connection, KEYS, "f", state="failed")
    seed_job(queue.connection, KEYS, "d", state="delayed")
    failed_page = actor.get(QUEUE_URL + "job/f").content.decode()
    assert 'value="retry"' in failed_page
    assert 'value="promote"' not in failed_page
    assert 'value="fail"' not in failed_page
    delayed_page = actor.get(QUEUE_URL + "job/d").content.decode()
    assert 'value="promote"' in delayed_page
    assert 'value="fail"' in delayed_page
    assert 'data-confirm="Fail job d?' in delayed_page
    assert 'data-confirm="Remove job d?' in delayed_page
    tab = actor.get(QUEUE_URL + "?state=failed").content.decode()
    assert re.search(r'>Retry all <span data-count-exact="failed">1</span> failed<', tab)
    assert 'name="ids" value="f"' in tab


def test_destructive_buttons_confirm_what_happens_and_retry_does_not(
    actor: Any, queue: Queue
) -> None:
    for n in range(3):
        seed_job(queue.connection, KEYS, f"d{n}", state="delayed")
    seed_job(queue.connection, KEYS, "f", state="failed")
    delayed = actor.get(QUEUE_URL + "?state=delayed").content.decode()
    # The page's dialog puts the rows ticked for {selected} ("3 jobs").
    assert (
        'data-confirm="Fail {selected} of emails? They move to failed with your reason;' in delayed
    )
    assert 'data-confirm="Remove {selected} of emails? Their data and logs are deleted.' in delayed
    assert "Promote selected" in _button_text(delayed, "promote")
    failed = actor.get(QUEUE_URL + "?state=failed").content.decode()
    assert _button_text(failed, "retry") == "Retry selected"
    # The clean confirmation names the queue, the age picked and the most it can delete.
    assert (
        'data-confirm="Delete the failed jobs of emails older than {age}? At most {count},'
        in failed
    )


def test_clean_hides_in_a_menu_and_defaults_to_a_week(actor: Any, queue: Queue) -> None:
    seed_job(queue.connection, KEYS, "f", state="failed")
    failed = actor.get(QUEUE_URL + "?state=failed").content.decode()
    menu = failed[failed.index('<details class="menu">') : failed.index("</details>")]
    assert 'value="clean"' in menu
    assert re.search(r'<option value="604800000" selected>7 days</option>', menu)
    assert 'value="60000"' not in menu  # no "1 minute" to slip onto
    bulk = failed[failed.index('<div class="bulk-actions">') : failed.index("<details")]
    assert 'value="retry_all"' in bulk
    assert 'value="clean"' not in bulk


def test_rerunning_completed_jobs_is_secondary_and_asks_retrying_failed_ones_asks_for_many(
    actor: Any, queue: Queue
) -> None:
    """A completed password-reset job run again sends another email; retrying
    failed jobs asks only when more than a handful are ticked (dashboard.js
    counts them as the button is pressed)."""
    seed_job(queue.connection, KEYS, "c", state="completed")
    seed_job(queue.connection, KEYS, "f", state="failed")
    completed = actor.get(QUEUE_URL + "?state=completed").content.decode()
    rerun = _button(completed, "retry")
    assert _button_text(completed, "retry") == "Run again…"
    assert "btn-primary" not in rerun
    assert 'data-confirm="Run {selected} of emails again?' in rerun
    failed = actor.get(QUEUE_URL + "?state=failed").content.decode()
    retry = _button(failed, "retry")
    assert _button_text(failed, "retry") == "Retry selected"
    assert "btn-primary" in retry
    assert "data-confirm-many" in retry
    assert 'data-confirm="Retry {selected} of emails? Each moves back to waiting' in retry
    assert "data-confirm-many" not in rerun


def test_unsafe_next_is_ignored(actor: Any, queue: Queue) -> None:
    seed_job(queue.connection, KEYS, "1", state="failed")
    response = actor.post(
        ACTIONS_URL, {"action": "retry", "ids": ["1"], "next": "https://evil.example/"}
    )
    assert response.status_code == 302
    assert response["Location"] == QUEUE_URL + "?state=failed"


def test_posts_need_the_csrf_token(dashboard_redis: Redis, make_user: Any) -> None:
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("actor"))
    seed_job(dashboard_redis, KEYS, "1", state="failed")
    assert client.post(ACTIONS_URL, {"action": "retry", "ids": ["1"]}).status_code == 403
    assert Queue("emails", dashboard_redis).get_state("1") == "failed"


def test_a_live_refetch_leaves_the_flash_message_for_the_page_the_user_goes_to(
    actor: Any, queue: Queue
) -> None:
    seed_job(queue.connection, KEYS, "42", state="failed")
    job_url = QUEUE_URL + "job/42"
    data = {"action": "retry", "ids": ["42"], "state": "failed", "next": job_url}
    assert actor.post(ACTIONS_URL, data).status_code == 302
    # live.js refetching the job page (its job just moved) before the redirect lands.
    refetch = actor.get(job_url, headers={"X-Live-Refresh": "1"})
    assert "Job 42 retried" not in refetch.content.decode()
    assert _messages(actor.get(job_url)) == ["Job 42 retried"]
