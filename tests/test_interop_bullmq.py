"""Our runtime and the bullmq 2.20.1 peer share queues without noticing each other.

The peer runs in the same event loop as our Worker; its own connections come
from the same Redis URL.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import bullmq
import pytest
from redis import Redis

from queues.job import Job
from queues.queue import Queue
from tests.worker_helpers import FailsFirst, running, until

pytestmark = [
    pytest.mark.peer,
    # bullmq's worker leaves tasks and connections for the loop's finalizers
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

NAME = "shared"


@pytest.fixture
async def peer_queue(redis_url: str, redis_client: Redis) -> AsyncIterator[bullmq.Queue]:
    queue = bullmq.Queue(NAME, {"connection": redis_url})
    yield queue
    await queue.close()


@pytest.fixture
def ours(redis_client: Redis) -> Queue:
    return Queue(NAME, redis_client)


@asynccontextmanager
async def peer_worker(
    url: str, processor: Callable[[Any, str], Any]
) -> AsyncIterator[bullmq.Worker]:
    worker = bullmq.Worker(NAME, processor, {"connection": url, "drainDelay": 1})
    try:
        yield worker
    finally:
        await worker.close()


async def test_jobs_the_peer_adds_run_on_our_worker_in_the_right_order(
    redis_url: str, peer_queue: bullmq.Queue, ours: Queue
) -> None:
    await peer_queue.add("plain-1", {"n": 1})
    await peer_queue.add("plain-2", {"n": 2})
    await peer_queue.add("lifo", {"n": 3}, {"lifo": True})
    await peer_queue.add("urgent", {"n": 4}, {"priority": 1})
    await peer_queue.add("custom", {"n": 5}, {"jobId": "invoice-77"})
    await peer_queue.add("cleanup", {"n": 6}, {"removeOnComplete": True})
    delayed = await peer_queue.add("later", {"n": 7}, {"delay": 600})
    seen: list[tuple[str, str, Any]] = []

    async def record(job: Job) -> Any:
        seen.append((job.id, job.name, job.data))
        return {"doubled": job.data["n"] * 2}

    added_at = time.time()
    async with running(NAME, record, url=redis_url):
        await until(lambda: len(seen) == 7)
    assert [name for _id, name, _data in seen[:6]] == [
        "lifo", "plain-1", "plain-2", "custom", "cleanup", "urgent",
    ]  # fmt: skip
    assert seen[-1][1] == "later"
    later = ours.get_job(delayed.id)
    assert later is not None
    assert later.processed_on is not None
    assert later.processed_on - added_at * 1000 >= 550
    custom = ours.get_job("invoice-77")
    assert custom is not None
    assert custom.returnvalue == {"doubled": 10}
    # The peer reads what our worker wrote.
    peer_job = await bullmq.Job.fromId(peer_queue, "invoice-77")
    assert peer_job.returnvalue == {"doubled": 10}
    assert peer_job.attemptsMade == 1
    cleanup_id = next(job_id for job_id, name, _ in seen if name == "cleanup")
    assert ours.get_job(cleanup_id) is None
    assert ours.get_counts("completed")["completed"] == 6


async def test_a_peer_job_with_attempts_and_backoff_is_retried_by_our_worker(
    redis_url: str, peer_queue: bullmq.Queue, ours: Queue
) -> None:
    flaky = FailsFirst(2, "third time lucky")
    opts = {"attempts": 3, "backoff": {"type": "exponential", "delay": 200}}
    job = await peer_queue.add("flaky", {}, opts)
    async with running(NAME, flaky, url=redis_url):
        await until(lambda: ours.get_state(job.id) == "completed")
    assert flaky.gaps()[0] >= 0.19
    assert flaky.gaps()[1] >= 0.39
    peer_job = await bullmq.Job.fromId(peer_queue, job.id)
    assert peer_job.attemptsMade == 3
    assert peer_job.returnvalue == "third time lucky"
    assert len(peer_job.stacktrace) == 2


async def test_jobs_our_queue_adds_run_on_the_peer_worker(
    redis_url: str, peer_queue: bullmq.Queue, ours: Queue
) -> None:
    plain = ours.add("plain", {"x": 1})
    urgent = ours.add("urgent", {"x": 2}, {"priority": 3})
    later = ours.add("later", {"x": 3}, {"delay": 300})
    custom = ours.add("custom", {"x": 4}, {"jobId": "report-9", "attempts": 2})
    seen: list[str] = []

    async def peer_process(job: Any, token: str) -> Any:
        seen.append(job.name)
        return job.data["x"] + 100

    async with peer_worker(redis_url, peer_process):
        await until(lambda: ours.get_counts("completed")["completed"] == 4)
    assert seen[:2] == ["plain", "custom"]
    assert set(seen) == {"plain", "urgent", "later", "custom"}
    for job_id, expected in ((plain, 101), (urgent, 102), (later, 103), (custom, 104)):
        job = ours.get_job(job_id)
        assert job is not None
        assert job.returnvalue == expected
        assert job.attempts_made == 1
    assert custom == "report-9"


async def test_a_job_failed_by_the_peer_is_retried_by_us_and_completed_by_the_peer(
    redis_url: str, peer_queue: bullmq.Queue, ours: Queue
) -> None:
    calls: list[int] = []

    async def fails_once(job: Any, token: str) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("upstream 503")
        return "recovered"

    job = await peer_queue.add("sync", {"account": 5})
    async with peer_worker(redis_url, fails_once):
        await until(lambda: ours.get_state(job.id) == "failed")
        failed = ours.get_job(job.id)
        assert failed is not None
        # bullmq 2.20.1 (Python) stores the reason JSON-encoded ('"upstream 503"');
        # BullMQ in Node.js and our worker store the plain text.
        assert failed.failed_reason in ("upstream 503", '"upstream 503"')
        ours.retry(job.id)
        await until(lambda: ours.get_state(job.id) == "completed")
    done = ours.get_job(job.id)
    assert done is not None
    assert done.returnvalue == "recovered"
    assert len(calls) == 2


async def test_the_peer_counts_agree_with_ours(
    redis_url: str, peer_queue: bullmq.Queue, ours: Queue
) -> None:
    failing = ours.add("f", 8)
    await peer_queue.add("c", 9)

    async def outcome(job: Job) -> str:
        if job.id == failing:
            raise RuntimeError("nope")
        return "ok"

    async with running(NAME, outcome, url=redis_url):
        await until(lambda: ours.get_counts("completed", "failed") == {"completed": 1, "failed": 1})
    for n in range(3):
        await peer_queue.add("w", n)
    ours.add("w", 3)
    ours.add("p", 4, {"priority": 2})
    await peer_queue.add("p", 5, {"priority": 7})
    ours.add("d", 6, {"delay": 60_000})
    await peer_queue.add("d", 7, {"delay": 60_000})
    states = ["wait", "active", "prioritized", "delayed", "completed", "failed", "paused"]
    theirs = await peer_queue.getJobCounts(*states)
    mine = ours.get_counts(*states)
    assert theirs == mine
    assert mine == {
        "wait": 4, "active": 0, "prioritized": 2, "delayed": 2,
        "completed": 1, "failed": 1, "paused": 0,
    }  # fmt: skip
