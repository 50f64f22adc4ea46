"""A full Redis refuses an action before it starts (issue 10, point 9).

Redis with ``maxmemory`` and ``noeviction`` lets a script whose first write is
a removal write on past the limit. The scripts declare their flags (Redis 7):
without ``allow-oom`` Redis refuses them with ``OOM`` before they run; the
legacy sources (Redis < 7) ask ``INFO memory`` first. Deleting and renewing
locks still run, since that is how memory is freed and jobs kept alive.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import OutOfMemoryError, ResponseError

from dashboard.acting import actions
from dashboard.models import AuditEntry
from queues import scripts
from queues.commands import transitions as t
from queues.job import Job
from queues.queue import BulkStopped, Queue, now_ms
from queues.read.counts import queue_summaries
from queues.read.refs import QueueRef
from tests.keyspace import snapshot, states_of
from tests.test_queue_admin import activate, finish
from tests.worker_helpers import running, until


@contextmanager
def redis_full(client: Redis) -> Iterator[None]:
    """Redis over its maxmemory with noeviction (the limit below what it uses)."""
    limit = client.config_get("maxmemory")["maxmemory"]
    policy = client.config_get("maxmemory-policy")["maxmemory-policy"]
    client.config_set("maxmemory-policy", "noeviction")
    client.config_set("maxmemory", 1)
    try:
        yield
    finally:
        client.config_set("maxmemory", limit)
        client.config_set("maxmemory-policy", policy)


@pytest.fixture(params=["flagged", "legacy"])
def sources(request: pytest.FixtureRequest, redis_client: Redis) -> Iterator[str]:
    """Every test runs with the flagged sources (Redis 7+) and the legacy ones
    (no shebang, memory guard in front: what Redis < 7 gets)."""
    scripts.use_legacy_sources(request.param == "legacy")
    redis_client.script_flush()
    yield request.param
    scripts.use_legacy_sources(False)


@pytest.fixture
def queue(redis_client: Redis, sources: str) -> Queue:
    return Queue("jobs", redis_client)


def _seeded(client: Redis, queue: Queue) -> dict[str, str]:
    failed, completed, waiting, _ = queue.add_bulk([("n", {"i": i}, None) for i in range(4)])
    delayed = queue.add("later", opts={"delay": 60_000})
    finish(client, queue, [failed], "failed", at=now_ms() - 1000)
    finish(client, queue, [completed], "completed", at=now_ms() - 1000)
    return {"failed": failed, "completed": completed, "wait": waiting, "delayed": delayed}


MOVES: dict[str, Callable[[Queue, dict[str, str]], object]] = {
    "retry": lambda q, j: q.retry(j["failed"]),
    "promote": lambda q, j: q.promote(j["delayed"]),
    "fail": lambda q, j: q.fail(j["wait"], "stop"),
    "retry all": lambda q, j: q.retry_all(),
    "retry all completed": lambda q, j: q.retry_all("completed"),
    "promote all": lambda q, j: q.promote_all(),
    "pause": lambda q, j: q.pause(),
    "add": lambda q, j: q.add("more"),
    "add bulk": lambda q, j: q.add_bulk([("more", None, None)]),
    "progress": lambda q, j: q.update_progress(j["wait"], 10),
    "log": lambda q, j: q.add_log(j["wait"], "line"),
}


@pytest.mark.parametrize("move", MOVES)
def test_a_full_redis_refuses_every_move_and_nothing_changes(
    redis_client: Redis, queue: Queue, move: str
) -> None:
    jobs = _seeded(redis_client, queue)
    before = snapshot(redis_client)
    with redis_full(redis_client), pytest.raises((OutOfMemoryError, BulkStopped)) as refused:
        MOVES[move](queue, jobs)
    if isinstance(refused.value, BulkStopped):
        assert isinstance(refused.value.refusal, OutOfMemoryError)
        assert refused.value.done.count == 0
    assert snapshot(redis_client) == before


def test_deleting_still_runs_when_redis_is_full(redis_client: Redis, queue: Queue) -> None:
    jobs = _seeded(redis_client, queue)
    with redis_full(redis_client):
        queue.remove(jobs["wait"])
        cleaned = queue.clean("completed", grace_ms=0)
        counts = queue_summaries(redis_client, [QueueRef("bull", "jobs")])[0]
    assert cleaned.ids == [jobs["completed"]]
    assert not redis_client.exists(queue.keys.job(jobs["wait"]), queue.keys.job(jobs["completed"]))
    assert counts.counts["failed"] == 1  # reading runs too (queueCounts is no-writes)


def test_a_worker_keeps_a_job_whose_finish_a_full_redis_refused_and_finishes_it_later(
    redis_client: Redis, redis_url: str, queue: Queue
) -> None:
    job_id = queue.add("slow")
    started, release = asyncio.Event(), asyncio.Event()
    runs: list[str] = []

    async def processor(job: Job) -> str:
        runs.append(job.id)
        started.set()
        await release.wait()
        return "done"

    async def scenario() -> None:
        async with running("jobs", processor, url=redis_url, lock_duration_ms=1500) as worker:
            await asyncio.wait_for(started.wait(), 10)
            with redis_full(redis_client):
                release.set()
                # Refused for lack of memory: the job stays active and held
                # (out of `held` only while a new attempt is in flight), its
                # lock renewed past its 1.5 s (renewals run when Redis is full).
                await asyncio.sleep(2.0)
                assert states_of(redis_client, queue.keys, job_id) == ["active"]
                await until(lambda: job_id in worker.held)
                assert redis_client.exists(queue.keys.lock(job_id))
            await until(lambda: states_of(redis_client, queue.keys, job_id) == ["completed"])

    asyncio.run(scenario())
    assert runs == [job_id]
    job = queue.get_job(job_id)
    assert job is not None
    assert job.returnvalue == "done"


def test_the_stalled_check_and_pickup_wait_for_room(redis_client: Redis, queue: Queue) -> None:
    queue.add("n")
    job_id = activate(redis_client, queue)
    redis_client.delete(queue.keys.lock(job_id))
    before = snapshot(redis_client)
    stalled = t.move_stalled_jobs_to_wait(
        queue.keys, max_stalled_count=1, now_ms=now_ms(), stalled_interval_ms=1
    )
    pickup = t.move_to_active(queue.keys, token="t", lock_duration_ms=1000, now_ms=now_ms())
    with redis_full(redis_client):
        for call in (stalled, pickup):
            with pytest.raises(OutOfMemoryError):
                scripts.run(redis_client, call)
    assert snapshot(redis_client) == before


def test_a_server_without_script_flags_switches_this_process_to_the_legacy_sources() -> None:
    script = scripts.script("requeueJob")
    try:
        assert scripts.code(script) == (script.sha, script.source)
        # What Redis 6 answers when it meets the shebang.
        error = ResponseError(
            "Error compiling script (new function): user_script:1: unexpected symbol near '#'"
        )
        assert scripts.fell_back_to_legacy(error, script)
        assert scripts.code(script) == (script.legacy_sha, script.legacy_source)
        assert not scripts.fell_back_to_legacy(error, script)  # switched once
    finally:
        scripts.use_legacy_sources(False)


# -- the dashboard says so ----------------------------------------------------------------

API = "/api/queues/bull/jobs/"


@pytest.fixture
def actor(dashboard_redis: Redis, client_as: Callable[[str | None], Any]) -> Any:
    return client_as("actor")


def test_the_api_answers_507_with_nothing_moved(
    dashboard_redis: Redis, actor: Any, queue: Queue
) -> None:
    jobs = _seeded(dashboard_redis, queue)
    with redis_full(dashboard_redis):
        bulk = actor.post(API + "bulk/", json.dumps({"action": "retry_all"}), "application/json")
        single = actor.post(
            API + "actions/",
            json.dumps({"action": "retry", "ids": [jobs["failed"]]}),
            "application/json",
        )
    for response in (bulk, single):
        assert response.status_code == 507
        error = response.json()["error"]
        assert error["code"] == "redis_out_of_memory"
        assert error["message"].startswith("Redis is out of memory: nothing was changed.")
    assert states_of(dashboard_redis, queue.keys, jobs["failed"]) == ["failed"]


def test_the_page_says_redis_is_out_of_memory(
    dashboard_redis: Redis, actor: Any, queue: Queue
) -> None:
    _seeded(dashboard_redis, queue)
    with redis_full(dashboard_redis):
        response = actor.post(
            "/queues/bull/jobs/bulk/", {"action": "promote_all", "state": "delayed"}, follow=True
        )
    assert response.status_code == 200
    messages = [str(m) for m in response.context["messages"]]
    assert len(messages) == 1
    assert messages[0].startswith("Redis is out of memory: nothing was changed.")
    assert queue.get_counts("delayed") == {"delayed": 1}


# The read-only search before a bulk action's first batch (listedJobs),
# by SHA (EVALSHA) or source (EVAL), either variant.
_LISTED = scripts.script("listedJobs")
_SEARCH = {_LISTED.sha, _LISTED.source, _LISTED.legacy_sha, _LISTED.legacy_source}


class FillsAfterOneBatch(Redis):
    """A client after whose first batch Redis is full (as if the batches
    themselves, or other writers, had used the last memory)."""

    def evalsha(self, *args: Any) -> Any:
        answer = super().evalsha(*args)
        if args[0] not in _SEARCH:
            self.config_set("maxmemory", 1)
        return answer

    def eval(self, *args: Any) -> Any:  # the first call, when the script is not loaded yet
        answer = super().eval(*args)
        if args[0] not in _SEARCH:
            self.config_set("maxmemory", 1)
        return answer


def test_a_bulk_action_stopped_by_a_full_redis_says_how_far_it_got(
    dashboard_redis: Redis, queue: Queue, db: None
) -> None:
    ids = queue.add_bulk([("n", None, None) for _ in range(2_000)])
    finish(dashboard_redis, queue, ids, "failed", at=now_ms() - 1000)
    dashboard_redis.set(queue.keys.job(ids[0]), "corrupt")  # the oldest failure
    client = FillsAfterOneBatch(connection_pool=dashboard_redis.connection_pool)
    try:
        with pytest.raises(actions.RedisOutOfMemory) as refused:
            actions.queue_action(client, QueueRef("bull", "jobs"), "retry_all", user="u")
    finally:
        dashboard_redis.config_set("maxmemory", 0)
    # The first batch (1,000 ids) went through whole, the second never started.
    assert dashboard_redis.llen(queue.keys.wait) == 999
    assert dashboard_redis.zcard(queue.keys.failed) == 1_001
    assert str(refused.value) == (
        "Redis is out of memory: it refused to go on. 999 failed jobs were moved back to "
        f"waiting; 1 skipped as broken: job {ids[0]} (its key is a string, not a job hash) "
        "before that; the rest was left as it was. Free memory (clean or remove old jobs) or "
        "raise maxmemory, then try again."
    )
    assert refused.value.status == 507
    # The audit trail (and the chart's marker) records what the finished batches moved.
    (entry,) = AuditEntry.objects.filter(action="retry_all")
    assert (entry.count, entry.result) == (999, str(refused.value))
