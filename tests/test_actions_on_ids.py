"""dashboard.acting.actions.act_on_ids: retry, promote or remove an explicit set of
jobs (a search result) through the per-job scripts, each job re-checked by
its script; against a real Redis, with a worker moving the same jobs."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from redis import Redis

from dashboard.acting import actions
from dashboard.acting.actions import ActionRefused, act_on_ids
from dashboard.models import AuditEntry
from queues.job import Job
from queues.queue import Queue, now_ms
from queues.read.cohorts import Cohort, fold_reason, recent_cohorts
from queues.read.refs import QueueRef
from queues.read.search import parse_query, search_all
from queues.read.states import KEY_STATES
from tests.round_trips import counted_sends
from tests.worker_helpers import running, until

pytestmark = pytest.mark.django_db(transaction=True)

NAME = "acts"
REF = QueueRef("bull", NAME)


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue(NAME, redis_client)


def _failed(queue: Queue, n: int, reason: str = "Timeout after 30 s") -> list[str]:
    ids = queue.add_bulk([("job", {"i": i}, None) for i in range(n)])
    for job_id in ids:
        queue.fail(job_id, reason)
    return ids


def _everywhere(client: Redis) -> dict[str, int]:
    """Jobs per key state, every one of them."""
    pipe = client.pipeline(transaction=False)
    for state in KEY_STATES:
        key = f"bull:{NAME}:{state.name}"
        pipe.llen(key) if state.is_list else pipe.zcard(key)
    return {state.name: int(n) for state, n in zip(KEY_STATES, pipe.execute(), strict=True)}


def _matching(client: Redis, text: str, state: str = "failed") -> list[str]:
    hits: list[str] = []
    for step in search_all(client, REF, state, parse_query(text)):
        hits.extend(step.hits)
    return list(dict.fromkeys(hits))


def test_retrying_a_search_result_moves_those_jobs_and_no_others(
    redis_client: Redis, queue: Queue
) -> None:
    timeouts = _failed(queue, 30)
    others = _failed(queue, 10, "connection reset")
    ids = _matching(redis_client, "reason ~ timeout")
    assert sorted(ids) == sorted(timeouts)
    result = act_on_ids(redis_client, REF, "retry", ids, user="oncall", state="failed")
    assert (result.count, result.moved_meanwhile, result.skipped) == (30, 0, [])
    assert result.message == "30 of 30 jobs retried"
    assert sorted(job.id for job in queue.get_jobs("wait")) == sorted(timeouts)
    assert sorted(job.id for job in queue.get_jobs("failed")) == sorted(others)
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.count, entry.user) == ("retry", 30, "oncall")
    assert entry.jobs.startswith("30 ids from failed: ")


def test_jobs_that_moved_or_went_meanwhile_are_skipped_and_counted_and_broken_ones_named(
    redis_client: Redis, queue: Queue
) -> None:
    ids = _failed(queue, 6)
    queue.retry(ids[0])  # someone else retried it: in wait now
    queue.remove(ids[1])  # gone
    redis_client.delete(f"bull:{NAME}:{ids[2]}")
    redis_client.set(f"bull:{NAME}:{ids[2]}", "not a hash")  # broken
    result = act_on_ids(redis_client, REF, "retry", ids, user="u", state="failed")
    assert result.count == 3
    assert result.moved_meanwhile == 2
    assert [job.job_id for job in result.skipped] == [ids[2]]
    assert "3 of 6 jobs retried; 2 had moved meanwhile and were skipped" in result.message
    assert f"job {ids[2]} (its key is a string, not a job hash)" in result.message
    assert queue.get_state(ids[0]) == "wait"  # retried once, not twice


def test_remove_takes_only_jobs_still_in_the_state_the_set_came_from(
    redis_client: Redis, queue: Queue
) -> None:
    ids = _failed(queue, 5)
    queue.retry(ids[0])  # moved to wait meanwhile: must stay
    result = act_on_ids(redis_client, REF, "remove", ids, user="u", state="failed")
    assert (result.count, result.moved_meanwhile) == (4, 1)
    assert queue.get_state(ids[0]) == "wait"
    assert all(queue.get_state(job_id) is None for job_id in ids[1:])


def test_promote_and_remove_from_the_wait_tab_cover_the_paused_list(
    redis_client: Redis, queue: Queue
) -> None:
    delayed = queue.add_bulk([("later", {}, {"delay": 60_000}) for _ in range(3)])
    result = act_on_ids(redis_client, REF, "promote", delayed, user="u", state="delayed")
    assert result.count == 3
    queue.pause()
    result = act_on_ids(redis_client, REF, "remove", delayed, user="u", state="wait")
    assert result.count == 3  # they sat in "paused", which the wait tab holds
    assert _everywhere(redis_client) == dict.fromkeys(_everywhere(redis_client), 0)


@pytest.mark.parametrize(
    ("action", "ids", "state", "words"),
    [
        ("fail", ["1"], "failed", "Unknown action"),
        ("retry", ["1"], "wait", "Only failed or completed"),
        ("promote", ["1"], "failed", "Only delayed"),
        ("retry", [], "failed", "No jobs"),
        ("retry", ["a:b"], "failed", "Not a job id"),
        ("retry", ["1"], "nowhere", "Unknown state"),
        ("retry", [str(i) for i in range(actions.MAX_IDS_PER_SET + 1)], "failed", "At most"),
    ],
)
def test_a_bad_request_is_refused_before_anything_moves(
    redis_client: Redis, action: str, ids: list[str], state: str, words: str
) -> None:
    with pytest.raises(ActionRefused, match=words):
        act_on_ids(redis_client, REF, action, ids, user="u", state=state)
    assert not AuditEntry.objects.exists()


def test_a_corrupt_queue_key_stops_the_action_with_what_was_done(
    redis_client: Redis, queue: Queue
) -> None:
    ids = _failed(queue, 3)
    redis_client.delete(f"bull:{NAME}:wait")
    redis_client.set(f"bull:{NAME}:wait", "garbage")
    with pytest.raises(actions.QueueKeyCorrupt, match="wait"):
        act_on_ids(redis_client, REF, "retry", ids, user="u", state="failed")
    assert queue.get_counts("failed")["failed"] == 3
    assert AuditEntry.objects.get().count == 0


def _act_while_others_move(
    redis_url: str, redis_client: Redis, queue: Queue, action: str
) -> tuple[actions.ActionResult, int, list[str]]:
    """A search result of 1,500 failed jobs acted on while, at the same
    time, another admin retries all failed jobs in small batches and a
    worker completes whatever reaches wait."""
    ids = _failed(queue, 1500)
    before = sum(_everywhere(redis_client).values())
    found = _matching(redis_client, "reason ~ timeout")
    assert len(found) == 1500
    completed: list[str] = []

    async def work() -> None:
        async def done(job: Job) -> Any:
            completed.append(job.id)
            return "ok"

        async with running(NAME, done, url=redis_url, concurrency=20):
            await until(
                lambda: (
                    sum(_everywhere(redis_client)[s] for s in ("wait", "active", "failed")) == 0
                    and outcome
                ),
                timeout=60,
            )

    outcome: list[actions.ActionResult] = []
    retried_by_other = []

    def other_admin() -> None:
        retried_by_other.append(Queue(NAME, redis_client).retry_all(batch=50).count)

    def act() -> None:
        outcome.append(act_on_ids(redis_client, REF, action, found, user="u", state="failed"))

    threads = [threading.Thread(target=other_admin), threading.Thread(target=act)]
    worker = threading.Thread(target=asyncio.run, args=(work(),))
    worker.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    worker.join(90)
    (result,) = outcome
    assert result.count + retried_by_other[0] == len(ids)  # each job moved once
    assert result.moved_meanwhile == retried_by_other[0]
    assert before == 1500
    return result, sum(_everywhere(redis_client).values()), completed


def test_retrying_a_result_while_a_worker_and_another_admin_move_the_same_jobs_loses_none(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    _, after, completed = _act_while_others_move(redis_url, redis_client, queue, "retry")
    assert after == 1500  # none lost: every job is in exactly one state
    assert _everywhere(redis_client)["completed"] == 1500
    assert len(completed) == len(set(completed)) == 1500  # each ran exactly once


def test_removing_a_result_while_others_retry_it_removes_only_what_was_still_failed(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    result, after, completed = _act_while_others_move(redis_url, redis_client, queue, "remove")
    # What the removal did not take was retried by the other admin and ran once.
    assert after == 1500 - result.count == len(completed) == len(set(completed))
    assert _everywhere(redis_client)["completed"] == after


def test_a_retried_result_is_kept_as_a_cohort_of_the_jobs_that_moved(
    redis_client: Redis, queue: Queue
) -> None:
    """The set's retry is followed like any retry (Recent actions): exactly the
    jobs it moved, with the reason each had failed with."""
    ids = _failed(queue, 6, reason="Timeout after 30 s")
    queue.retry(ids[0])  # moved meanwhile: not part of what this action moved
    result = act_on_ids(redis_client, REF, "retry", ids, user="oncall", state="failed")
    assert result.count == 5
    (cohort,) = recent_cohorts(redis_client, REF.keys, now_ms())
    assert isinstance(cohort, Cohort)
    assert cohort.action == "retry"
    assert cohort.source == "failed"
    assert cohort.user == "oncall"
    assert sorted(cohort.ids) == sorted(ids[1:])
    assert cohort.top_previous_reason == fold_reason("Timeout after 30 s")
    # Removing is not followed: nothing comes back to run.
    act_on_ids(redis_client, REF, "remove", ids[1:], user="oncall", state="wait")
    assert len(recent_cohorts(redis_client, REF.keys, now_ms())) == 1


@pytest.mark.parametrize(("action", "ticked"), [("retry", 1), ("retry", 250), ("fail", 250)])
def test_ticked_jobs_move_a_batch_to_a_round_trip_not_one_each(
    redis_client: Redis, queue: Queue, monkeypatch: pytest.MonkeyPatch, action: str, ticked: int
) -> None:
    """A page's job action runs each job's own script, pipelined actions.BATCH
    to a round trip: 250 ticked jobs are three round trips of scripts, one job
    still one (no SCRIPT LOAD in front), and each job is still answered alone."""
    state = "failed" if action == "retry" else "wait"
    ids = (
        _failed(queue, ticked + 1)
        if action == "retry"
        else queue.add_bulk([("j", {}, None)] * (ticked + 1))
    )
    actions.job_action(redis_client, REF, action, ids[:1], user="oncall", state=state)  # loaded
    with counted_sends(monkeypatch) as sent:
        result = actions.job_action(redis_client, REF, action, ids[1:], user="oncall", state=state)
    scripts_sent = [args for args in sent if "EVALSHA" in repr(args)]
    assert len(scripts_sent) == -(-ticked // 100)
    assert result.count == ticked
    past = actions.PAST[action]
    assert [o.message for o in result.outcomes] == [f"Job {i} {past}" for i in ids[1:]]


@pytest.mark.cluster
def test_ticked_jobs_move_on_a_cluster_and_one_refused_says_why(cluster: Redis) -> None:
    """The pipeline of a page's job action on a Redis Cluster (a cold script
    cache first: its NOSCRIPT answers run again on their own, loading it)."""
    ref = QueueRef("{ops}", "tagged")
    queue = Queue(ref.name, cluster, prefix=ref.prefix)
    ids = _failed(queue, 3)
    cluster.script_flush()
    result = actions.job_action(cluster, ref, "retry", [*ids, ids[0]], user="oncall")
    assert [o.message for o in result.outcomes] == [
        *(f"Job {i} retried" for i in ids),
        f"Job {ids[0]} is no longer failed — someone retried it already",
    ]
    assert sorted(job.id for job in queue.get_jobs("wait")) == sorted(ids)
