"""Jobs our Queue adds (and retries) are processed by bullmq 2.20.1's Worker:
same hash fields, opts JSON, marker, priority and delayed encodings."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from bullmq import Queue as BullQueue
from bullmq import Worker
from redis import Redis

from queues.queue import Queue

pytestmark = pytest.mark.peer
# A short block on the marker keeps the peer worker's close() quick.
PEER_OPTS = {"drainDelay": 1}


async def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "peer worker took too long"
        await asyncio.sleep(0.02)


async def test_bullmq_worker_runs_standard_prioritized_delayed_and_retried_jobs(
    redis_url: str, redis_client: Redis
) -> None:
    queue = Queue("peer", redis_client)
    plain = queue.add("plain", {"n": 1})
    urgent = queue.add("urgent", {"n": 2}, {"priority": 1})
    later = queue.add("later", {"n": 3}, {"delay": 300})
    flaky = queue.add("flaky", {"n": 4}, {"jobId": "flaky-1", "attempts": 2, "backoff": 20})
    runs: list[str] = []

    async def process(job: Any, token: str) -> dict[str, int]:
        runs.append(job.id)
        if job.name == "flaky" and job.attemptsMade == 0:
            raise RuntimeError("first attempt fails")
        return {"double": job.data["n"] * 2}

    worker = Worker("peer", process, {"connection": redis_url, **PEER_OPTS})
    try:
        await wait_until(lambda: queue.get_counts("completed")["completed"] == 4)
    finally:
        await worker.close()

    assert runs.count(flaky) == 2
    assert set(runs) == {plain, urgent, later, flaky}
    assert runs.index(urgent) > runs.index(plain)  # wait runs before prioritized
    job = queue.get_job(later)
    assert job is not None
    assert job.returnvalue == {"double": 6}
    assert job.attempts_made == 1


async def test_job_failed_under_bullmq_is_retried_by_us_and_run_again(
    redis_url: str, redis_client: Redis
) -> None:
    queue = Queue("peer", redis_client)
    job_id = queue.add("once", {"n": 1})
    outcomes = iter([RuntimeError("boom"), None])

    async def process(job: Any, token: str) -> str:
        error = next(outcomes)
        if error:
            raise error
        return "ok"

    worker = Worker("peer", process, {"connection": redis_url, **PEER_OPTS})
    try:
        await wait_until(lambda: queue.get_state(job_id) == "failed")
        failed = queue.get_job(job_id)
        assert failed is not None
        # bullmq 2.20.1 (Python) stores the reason JSON-quoted: '"boom"'.
        assert "boom" in (failed.failed_reason or "")
        queue.retry(job_id)
        await wait_until(lambda: queue.get_state(job_id) == "completed")
    finally:
        await worker.close()

    done = queue.get_job(job_id)
    assert done is not None
    assert (done.returnvalue, done.failed_reason) == ("ok", None)


async def test_jobs_added_by_bullmq_are_listed_promoted_failed_and_removed_by_us(
    redis_url: str, redis_client: Redis
) -> None:
    peer = BullQueue("peer", {"connection": redis_url})
    try:
        delayed = (await peer.add("d", {"n": 1}, {"delay": 60_000})).id
        ready = (await peer.add("r", {"n": 2}, {"priority": 3})).id
        doomed = (await peer.add("x", {"n": 3})).id
    finally:
        await peer.close()
    queue = Queue("peer", redis_client)

    assert [j.id for j in queue.get_jobs("delayed")] == [delayed]
    assert queue.get_counts("wait", "prioritized") == {"wait": 1, "prioritized": 1}
    queue.promote(delayed)
    queue.fail(ready, "not wanted")
    queue.remove(doomed)

    assert queue.get_state(delayed) == "wait"
    assert queue.get_state(ready) == "failed"
    assert queue.get_state(doomed) is None
    promoted = queue.get_job(delayed)
    assert promoted is not None
    assert (promoted.name, promoted.data, promoted.delay) == ("d", {"n": 1}, 0)
