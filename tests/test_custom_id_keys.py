"""A custom job id that is the name of one of the queue's own keys.

A job's hash lives at <prefix>:<queue>:<id>, beside the queue's wait, paused,
meta ... keys: a job named "meta" or "wait" of a running queue was answered
"duplicated" and never added, and one named "paused" took the paused list's
place, after which the queue could not be paused until someone repaired the key."""

from __future__ import annotations

import contextlib

import pytest
from redis import Redis

from queues.job import Job
from queues.job_options import InvalidJobOptions
from queues.queue import Queue
from tests.worker_helpers import running, until


@pytest.mark.parametrize("job_id", ["paused", "wait", "meta", "id", "events", "waiting-children"])
def test_a_job_may_not_be_named_after_one_of_its_queues_keys(
    redis_client: Redis, job_id: str
) -> None:
    queue = Queue("invoices", redis_client)
    queue.add("render-pdf", {"invoice": "INV-2024-1187"}, {"jobId": "inv-2024-1187"})
    before = {key: redis_client.type(key) for key in redis_client.keys("*")}
    with pytest.raises(InvalidJobOptions, match="one of the queue's own keys"):
        queue.add("render-pdf", {"invoice": "INV-2024-1188"}, {"jobId": job_id})
    assert {key: redis_client.type(key) for key in redis_client.keys("*")} == before


def test_a_job_named_like_a_key_of_another_kind_is_still_a_job(redis_client: Redis) -> None:
    # Only the exact names collide: "paused-orders" or "waitlist-7" are ids like any other.
    queue = Queue("invoices", redis_client)
    for job_id in ("paused-orders", "waitlist-7", "metadata", "Wait", "metrics-daily"):
        assert queue.add("render-pdf", {}, {"jobId": job_id}) == job_id
        assert redis_client.type(f"bull:invoices:{job_id}") == b"hash"


async def test_a_job_named_metrics_never_takes_the_failure_metrics_with_it(
    redis_url: str, redis_client: Redis
) -> None:
    # A parent keeps its failed-and-ignored children at <id>:failed, and removing
    # a job deletes that key (removeJobKeys.lua): for a job "metrics" it is the
    # queue's metrics:failed, where its workers count their failures.
    queue = Queue("invoices", redis_client)

    async def charge(job: Job) -> None:
        raise RuntimeError("card_declined: Your card was declined.")

    queue.add("charge-card", {"invoice": "INV-2024-1187", "amount_cents": 12900})
    async with running("invoices", charge, url=redis_url, metrics=True):
        await until(lambda: queue.get_counts("failed")["failed"] == 1)
    counted = redis_client.hgetall(queue.keys.metrics_failed)
    assert counted[b"count"] == b"1"
    with contextlib.suppress(InvalidJobOptions):  # added, then removed, as a job may be
        queue.add("render-pdf", {"invoice": "INV-2024-1188"}, {"jobId": "metrics"})
        queue.remove("metrics")
    assert redis_client.hgetall(queue.keys.metrics_failed) == counted
    with pytest.raises(InvalidJobOptions, match="one of the queue's own keys"):
        queue.add("render-pdf", {"invoice": "INV-2024-1188"}, {"jobId": "metrics"})
