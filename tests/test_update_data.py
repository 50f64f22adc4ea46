"""updateData-8.lua through ``Queue.update_data``: a job's data is replaced
only while it waits, is prioritized, delayed or failed; every refusal leaves
the keyspace exactly as it was; and what it writes is what workers read,
bullmq 2.20.1's included."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bullmq import Worker as BullWorker
from redis import Redis

from queues import errors
from queues.keys import QueueKeys
from queues.queue import Queue
from tests.test_queue_bullmq_peer import PEER_OPTS, wait_until
from tests.transition_helpers import NOW, fetch, seed_job

KEYS = QueueKeys("q")
NEW = {"to": "ops@example.com", "n": [1, 2.5, None], "ü": "✓"}


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue("q", redis_client)


def snapshot(client: Redis) -> dict[bytes, Any]:
    """Every key and its whole value: a refusal must change none of them."""
    dumped: dict[bytes, Any] = {}
    for key in sorted(client.keys("*")):
        kind = client.type(key)
        if kind == b"hash":
            dumped[key] = client.hgetall(key)
        elif kind == b"list":
            dumped[key] = client.lrange(key, 0, -1)
        elif kind == b"zset":
            dumped[key] = client.zrange(key, 0, -1, withscores=True)
        else:
            dumped[key] = client.dump(key)
    return dumped


@pytest.mark.parametrize("state", ["wait", "paused", "prioritized", "delayed", "failed"])
def test_the_data_of_a_job_no_worker_holds_is_replaced(
    redis_client: Redis, queue: Queue, state: str
) -> None:
    if state == "failed":
        seed_job(redis_client, KEYS, "7", data={"old": True})
        redis_client.lrem(KEYS.wait, 0, "7")
        redis_client.zadd(KEYS.failed, {"7": NOW})
    else:
        seed_job(redis_client, KEYS, "7", state=state, data={"old": True}, due_ms=NOW + 60_000)
    before = redis_client.hgetall(KEYS.job("7"))

    done = queue.update_data("7", NEW)

    assert done.state == state
    assert json.loads(done.previous) == {"old": True}
    after = redis_client.hgetall(KEYS.job("7"))
    # Compact JSON text in the data field, as every BullMQ runtime reads it; nothing else moved.
    assert after.pop(b"data") == json.dumps(NEW, separators=(",", ":"), ensure_ascii=False).encode()
    before.pop(b"data")
    assert after == before
    assert queue.get_state("7") == state
    assert not redis_client.exists(KEYS.events)  # no event: BullMQ's update emits none


@pytest.mark.parametrize("state", ["active", "completed", "waiting-children"])
def test_a_job_a_worker_holds_or_that_finished_is_refused_and_left_alone(
    redis_client: Redis, queue: Queue, state: str
) -> None:
    if state == "active":
        seed_job(redis_client, KEYS, "7", state="active", lock_token="tok")
    else:
        seed_job(redis_client, KEYS, "7")
        redis_client.lrem(KEYS.wait, 0, "7")
        redis_client.zadd(KEYS.state(state), {"7": NOW})
    before = snapshot(redis_client)
    with pytest.raises(errors.JobNotInState):
        queue.update_data("7", NEW)
    assert snapshot(redis_client) == before


def test_a_job_taken_by_a_worker_after_the_page_was_loaded_keeps_its_data(
    redis_client: Redis, queue: Queue
) -> None:
    """The race: the operator read a waiting job, a worker took it, the save
    comes after the pickup. The worker runs the data it read; the edit is refused."""
    seed_job(redis_client, KEYS, "7", data={"old": True})
    assert queue.get_state("7") == "wait"  # what the page showed
    fetched = fetch(redis_client, KEYS)  # the worker's real pickup (moveToActive)
    assert fetched.job_id == "7"
    before = snapshot(redis_client)
    with pytest.raises(errors.JobNotInState):
        queue.update_data("7", NEW)
    assert snapshot(redis_client) == before
    job = queue.get_job("7")
    assert job is not None
    assert job.data == {"old": True}


def test_a_missing_job_a_broken_key_and_a_job_in_two_states_are_refused(
    redis_client: Redis, queue: Queue
) -> None:
    with pytest.raises(errors.JobNotExist):
        queue.update_data("gone", NEW)
    redis_client.set(KEYS.job("str"), "not a hash")
    redis_client.lpush(KEYS.wait, "str")
    redis_client.hset(KEYS.job("nojob"), "colour", "blue")  # a hash with no job fields
    redis_client.lpush(KEYS.wait, "nojob")
    seed_job(redis_client, KEYS, "twice")
    redis_client.zadd(KEYS.failed, {"twice": NOW})
    before = snapshot(redis_client)
    for job_id, reason in (
        ("str", "type:string"),
        ("nojob", "not_a_job"),
        ("twice", "states:failed,wait"),
    ):
        with pytest.raises(errors.JobBroken) as refused:
            queue.update_data(job_id, NEW)
        assert refused.value.reason == reason
    assert snapshot(redis_client) == before


def test_a_queue_key_of_the_wrong_type_refuses_before_any_write(
    redis_client: Redis, queue: Queue
) -> None:
    seed_job(redis_client, KEYS, "7", data={"old": True})
    redis_client.set(KEYS.delayed, "not a zset")
    before = snapshot(redis_client)
    with pytest.raises(errors.CorruptKey) as refused:
        queue.update_data("7", NEW)
    assert refused.value.key == KEYS.delayed
    assert snapshot(redis_client) == before


@pytest.mark.peer
# bullmq's worker leaves tasks and connections for the loop's finalizers
@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_bullmq_2_20_1_runs_the_edited_data_of_a_failed_job_after_a_retry(
    redis_url: str, redis_client: Redis
) -> None:
    queue = Queue("edited", redis_client)
    job_id = queue.add("send", {"to": "wrong@example.com"})
    seen: list[Any] = []

    async def process(job: Any, token: str) -> Any:
        seen.append(job.data)
        if job.data["to"] == "wrong@example.com":
            raise RuntimeError("no such mailbox")
        return {"sent": job.data["to"]}

    worker = BullWorker("edited", process, {"connection": redis_url, **PEER_OPTS})
    try:
        await wait_until(lambda: queue.get_state(job_id) == "failed")
        done = queue.update_data(job_id, {"to": "right@example.com"})
        assert done.state == "failed"
        queue.retry(job_id)
        await wait_until(lambda: queue.get_state(job_id) == "completed")
    finally:
        await worker.close()
    assert seen == [{"to": "wrong@example.com"}, {"to": "right@example.com"}]
    job = queue.get_job(job_id)
    assert job is not None
    assert job.returnvalue == {"sent": "right@example.com"}
