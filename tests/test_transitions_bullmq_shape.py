"""Jobs moved by our transition scripts read back correctly through bullmq
2.20.1 (its Job.fromId / Job.fromJSON, getJobState, getJobCounts), and its
Worker runs what our moveToDelayed and stalled recovery left behind."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from bullmq import Job as PeerJob
from bullmq import Queue as PeerQueue
from bullmq import Worker as PeerWorker
from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.keys import QueueKeys
from queues.queue import Queue
from tests.transition_helpers import LOCK_MS, TOKEN, fetch, finish, finish_options

pytestmark = pytest.mark.peer

NAME = "shape"


@pytest.fixture
def keys() -> QueueKeys:
    return QueueKeys(NAME)


@pytest.fixture
async def peer(redis_url: str) -> AsyncIterator[PeerQueue]:
    queue = PeerQueue(NAME, {"connection": redis_url})
    yield queue
    await queue.close()


def _now() -> int:
    return int(time.time() * 1000)


async def _peer_job(peer: PeerQueue, job_id: str) -> Any:
    job = await PeerJob.fromId(peer, job_id)
    assert job is not None
    return job


async def _wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "the peer worker took too long"
        await asyncio.sleep(0.02)


async def test_a_job_we_completed_reads_back_through_bullmq(
    redis_client: Redis, keys: QueueKeys, peer: PeerQueue
) -> None:
    job_id = Queue(NAME, redis_client).add("resize", {"w": 640}, {"attempts": 2})
    start = _now()
    got = fetch(redis_client, keys, now_ms=start, worker_name="ours")
    assert got.job_id == job_id
    options = finish_options(attempts=2, max_metrics_size=10)
    assert (
        finish(redis_client, keys, job_id, value='{"ok":true}', now_ms=start + 5, options=options)
        == 0
    )

    assert await peer.getJobState(job_id) == "completed"
    assert (await peer.getJobCounts("completed", "active", "wait")) == {
        "completed": 1,
        "active": 0,
        "wait": 0,
    }
    job = await _peer_job(peer, job_id)
    assert (job.name, job.data, job.opts["attempts"]) == ("resize", {"w": 640}, 2)
    assert (job.attemptsMade, job.attemptsStarted, job.stalledCounter) == (1, 1, 0)
    assert (job.processedOn, job.finishedOn) == (start, start + 5)
    assert job.returnvalue == {"ok": True}
    assert job.failedReason is None
    assert job.deferredFailure is None


async def test_a_job_we_retried_then_failed_reads_back_through_bullmq(
    redis_client: Redis, keys: QueueKeys, peer: PeerQueue
) -> None:
    job_id = Queue(NAME, redis_client).add("send", {"to": "x"}, {"attempts": 2, "backoff": 10})
    start = _now()
    fetch(redis_client, keys, now_ms=start)
    delay = t.move_to_delayed(
        keys,
        job_id,
        token=TOKEN,
        now_ms=start,
        delay_ms=10,
        fields={"stacktrace": json.dumps(["trace 1"])},
    )
    assert scripts.run(redis_client, delay) == 0
    assert await peer.getJobState(job_id) == "delayed"
    assert (await _peer_job(peer, job_id)).delay == 10

    assert fetch(redis_client, keys, now_ms=start + 10).job_id == job_id
    result = finish(
        redis_client,
        keys,
        job_id,
        target="failed",
        value="smtp down",
        now_ms=start + 20,
        options=finish_options(attempts=2),
        extra_fields={"stacktrace": json.dumps(["trace 1", "trace 2"])},
    )
    assert result == 0
    assert await peer.getJobState(job_id) == "failed"
    job = await _peer_job(peer, job_id)
    assert (job.failedReason, job.stacktrace) == ("smtp down", ["trace 1", "trace 2"])
    assert (job.attemptsMade, job.attemptsStarted, job.delay) == (2, 2, 0)
    assert job.finishedOn == start + 20


async def test_jobs_bullmq_added_are_taken_in_its_order_and_finished_by_us(
    redis_client: Redis, keys: QueueKeys, peer: PeerQueue
) -> None:
    low = await peer.add("low", {"n": 1}, {"priority": 5})
    high = await peer.add("high", {"n": 2}, {"priority": 1})
    plain = await peer.add("plain", {"n": 3})
    jumper = await peer.add("jumper", {"n": 4}, {"lifo": True})
    order = []
    for _ in range(4):
        got = fetch(redis_client, keys, now_ms=_now())
        assert got.job is not None
        assert got.job.data["n"] in (1, 2, 3, 4)
        order.append(got.job_id)
        assert finish(redis_client, keys, got.job.id, value=json.dumps(got.job.data)) == 0
    assert order == [jumper.id, plain.id, high.id, low.id]
    job = await _peer_job(peer, high.id)
    assert job.returnvalue == {"n": 2}
    assert await peer.getJobState(low.id) == "completed"


async def test_bullmq_worker_runs_a_job_we_delayed_and_one_we_recovered_from_a_stall(
    redis_url: str, redis_client: Redis, keys: QueueKeys, peer: PeerQueue
) -> None:
    ours = Queue(NAME, redis_client)
    delayed_id = ours.add("retry-me", {"n": 1}, {"attempts": 3})
    stalled_id = ours.add("stall-me", {"n": 2})
    now = _now()
    assert fetch(redis_client, keys, now_ms=now).job_id == delayed_id
    assert fetch(redis_client, keys, now_ms=now).job_id == stalled_id
    delay = t.move_to_delayed(keys, delayed_id, token=TOKEN, now_ms=now, delay_ms=300)
    assert scripts.run(redis_client, delay) == 0
    # The stalled job's worker died: first check marks it, its lock expires,
    # the next check recovers it.
    check = t.move_stalled_jobs_to_wait(
        keys, max_stalled_count=1, now_ms=now, stalled_interval_ms=LOCK_MS
    )
    assert t.decode_stalled(scripts.run(redis_client, check)).recovered == []
    redis_client.delete(keys.lock(stalled_id), keys.stalled_check)
    assert t.decode_stalled(scripts.run(redis_client, check)).recovered == [stalled_id]
    recovered = await _peer_job(peer, stalled_id)
    assert recovered.stalledCounter == 1
    assert await peer.getJobState(stalled_id) == "waiting"

    seen: dict[str, int] = {}

    async def process(job: Any, token: str) -> int:
        seen[job.id] = job.attemptsMade
        return int(job.data["n"]) * 10

    worker = PeerWorker(NAME, process, {"connection": redis_url, "drainDelay": 0.2})
    try:
        await _wait_until(lambda: ours.get_counts("completed")["completed"] == 2)
    finally:
        await worker.close()
    assert seen == {stalled_id: 0, delayed_id: 1}
    delayed_job = await _peer_job(peer, delayed_id)
    assert delayed_job.returnvalue == 10
    assert delayed_job.processedOn >= now + 300


async def test_a_deferred_failure_left_by_bullmqs_stalled_checker_is_carried_out_by_us(
    redis_client: Redis, keys: QueueKeys, peer: PeerQueue
) -> None:
    ours = Queue(NAME, redis_client)
    doomed = ours.add("doomed", {"n": 1})
    after = ours.add("after", {"n": 2})
    assert fetch(redis_client, keys, now_ms=_now()).job_id == doomed
    redis_client.delete(keys.lock(doomed))
    # bullmq's own checker, max stalled count 0: the first recovery is too many.
    await peer.scripts.moveStalledJobsToWait(0, LOCK_MS)
    redis_client.delete(keys.stalled_check)
    assert await peer.scripts.moveStalledJobsToWait(0, LOCK_MS) == [doomed]
    assert (
        await _peer_job(peer, doomed)
    ).deferredFailure == "job stalled more than allowable limit"

    assert fetch(redis_client, keys, now_ms=_now()).job_id == after
    assert await peer.getJobState(doomed) == "failed"
    job = await _peer_job(peer, doomed)
    assert job.failedReason == "job stalled more than allowable limit"
    assert job.deferredFailure is None
