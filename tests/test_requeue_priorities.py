"""Where a bulk retry puts a job back, by its priority (issue 26's mutation
run): priority 1, the most urgent, goes to the prioritized set like any
other priority; a hash with no priority field at all (a writer that never
set one) is a plain job and goes to the wait list."""

from __future__ import annotations

from redis import Redis

from queues.queue import Queue
from tests.dashboard_seed import seed_job

REASON = "psycopg.OperationalError: connection to server at 10.0.4.12, port 5432 failed"


def test_a_retried_job_of_priority_one_goes_back_to_the_prioritized_set(
    redis_client: Redis,
) -> None:
    queue = Queue("billing", redis_client)
    seed_job(
        redis_client,
        queue.keys,
        "charge-9921",
        state="failed",
        name="charge-card",
        data={"invoice": "INV-9921"},
        opts={"priority": 1},
        fields={"priority": 1, "failedReason": REASON},
    )
    seed_job(
        redis_client,
        queue.keys,
        "charge-9922",
        state="failed",
        name="charge-card",
        data={"invoice": "INV-9922"},
        fields={"failedReason": REASON},
    )
    assert queue.retry_all().count == 2
    assert redis_client.zrange(queue.keys.prioritized, 0, -1) == [b"charge-9921"]
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"charge-9922"]


def test_a_retried_job_whose_hash_has_no_priority_goes_back_to_the_wait_list(
    redis_client: Redis,
) -> None:
    queue = Queue("billing", redis_client)
    seed_job(
        redis_client,
        queue.keys,
        "charge-9923",
        state="failed",
        name="charge-card",
        data={"invoice": "INV-9923"},
        fields={"failedReason": REASON},
    )
    redis_client.hdel(queue.keys.job("charge-9923"), "priority")
    assert queue.retry_all().count == 1
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"charge-9923"]
    assert redis_client.zcard(queue.keys.prioritized) == 0
