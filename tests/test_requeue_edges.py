"""Where a bulk retry puts a job back, by its priority (issue 26's mutation
run): priority 1, the most urgent, goes to the prioritized set like any
other priority; a hash with no priority field at all (a writer that never
set one) is a plain job and goes to the wait list. And what it refuses."""

from __future__ import annotations

from typing import Any

import pytest
from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.errors import CorruptKey
from queues.queue import BulkStopped, Queue
from tests.dashboard_seed import seed_job

REASON = "psycopg.OperationalError: connection to server at 10.0.4.12, port 5432 failed"


def _failed_charge(client: Redis, queue: Queue, job_id: str, **options: Any) -> None:
    """A charge-card job that failed on the database (``options``: seed_job's)."""
    fields = {"failedReason": REASON, **options.pop("fields", {})}
    seed_job(
        client, queue.keys, job_id, state="failed", name="charge-card", fields=fields, **options
    )


def test_a_retried_job_of_priority_one_goes_back_to_the_prioritized_set(
    redis_client: Redis,
) -> None:
    queue = Queue("billing", redis_client)
    _failed_charge(
        redis_client,
        queue,
        "charge-9921",
        data={"invoice": "INV-9921"},
        opts={"priority": 1},
        fields={"priority": 1, "failedReason": REASON},
    )
    _failed_charge(redis_client, queue, "charge-9922", data={"invoice": "INV-9922"})
    assert queue.retry_all().count == 2
    assert redis_client.zrange(queue.keys.prioritized, 0, -1) == [b"charge-9921"]
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"charge-9922"]


def test_a_retried_job_whose_hash_has_no_priority_goes_back_to_the_wait_list(
    redis_client: Redis,
) -> None:
    queue = Queue("billing", redis_client)
    _failed_charge(redis_client, queue, "charge-9923", data={"invoice": "INV-9923"})
    redis_client.hdel(queue.keys.job("charge-9923"), "priority")
    assert queue.retry_all().count == 1
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"charge-9923"]
    assert redis_client.zcard(queue.keys.prioritized) == 0


def test_a_retry_refuses_by_name_a_state_set_it_checks_that_is_no_sorted_set(
    redis_client: Redis,
) -> None:
    """A retry reads the other sorted-set states to skip a job also held
    there: a delayed key some script left as a string is named in the
    refusal, before anything is written."""
    queue = Queue("billing", redis_client)
    _failed_charge(redis_client, queue, "charge-9924")
    redis_client.set(queue.keys.delayed, "migrated")
    with pytest.raises(BulkStopped) as stopped:
        queue.retry_all()
    refusal = stopped.value.refusal
    assert isinstance(refusal, CorruptKey)
    assert (refusal.key, refusal.actual, refusal.expected) == (queue.keys.delayed, "string", "zset")
    assert redis_client.zrange(queue.keys.failed, 0, -1) == [b"charge-9924"]


def test_one_batch_answers_what_is_left_after_the_jobs_it_could_not_move(
    redis_client: Redis,
) -> None:
    """A batch of 10 over 4 sound jobs and 3 whose hash another writer left
    as a string: 4 moved, 3 skipped (they stay in the failed set and the
    next batch passes over them), so nothing is left for a next batch."""
    queue = Queue("billing", redis_client)
    for n in range(1, 8):
        _failed_charge(redis_client, queue, f"charge-99{n:02d}", score=n)
    for n in (2, 4, 6):
        redis_client.delete(queue.keys.job(f"charge-99{n:02d}"))
        redis_client.set(queue.keys.job(f"charge-99{n:02d}"), "corrupt")
    moved, left, skipped, reported = scripts.run(
        redis_client, admin.requeue_jobs(queue.keys, "failed", batch=10)
    )
    assert (moved, left, len(skipped) // 2, reported) == (4, 0, 3, [])


def test_reasons_are_reported_cut_to_the_bytes_asked_even_one(redis_client: Redis) -> None:
    queue = Queue("billing", redis_client)
    _failed_charge(redis_client, queue, "charge-9931")
    answer = scripts.run(
        redis_client, admin.requeue_jobs(queue.keys, "failed", batch=10, report_reason_bytes=1)
    )
    assert answer[3] == [b"charge-9931", b"p"]
