"""A bulk retry wakes the workers blocked on the queue's marker (issue 26):
without the wake-up, a worker asleep on an empty queue leaves the retried
jobs waiting until its block times out (up to 10 s). A real worker, really
blocked (its connection shows BZPOPMIN), on a real Redis."""

from __future__ import annotations

import asyncio
import time

from redis import Redis

from queues.job import Job
from queues.queue import Queue
from tests.dashboard_seed import seed_job
from tests.worker_helpers import running, until

REASON = "requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='hooks.slack.com', port=443)"


def _blocked_on_the_marker(client: Redis) -> bool:
    return any(entry.get("cmd") == "bzpopmin" for entry in client.client_list())


async def test_a_bulk_retry_wakes_a_worker_blocked_on_the_marker(
    redis_client: Redis, redis_url: str
) -> None:
    queue = Queue("webhooks", redis_client)
    ids = [f"wh-{n}" for n in range(3001, 3013)]
    for job_id in ids:
        seed_job(
            redis_client,
            queue.keys,
            job_id,
            state="failed",
            name="deliver-webhook",
            data={
                "url": "https://hooks.slack.com/services/T0001/B0001/XXXX",
                "event": "order.paid",
            },
            fields={"failedReason": REASON},
        )
    done: list[str] = []

    async def deliver(job: Job) -> str:
        done.append(job.id)
        return "200 OK"

    # drain_delay 30 s: asleep on an empty queue, the worker wakes only when told
    # (or after MAX_BLOCK_S, 10 s, when it cuts a block short to check its connection).
    async with running("webhooks", deliver, url=redis_url, drain_delay_s=30.0):
        await until(lambda: _blocked_on_the_marker(redis_client), timeout=10)
        retried_at = time.monotonic()
        moved = await asyncio.to_thread(queue.retry_all)
        assert moved.count == len(ids)
        await until(lambda: len(done) == len(ids), timeout=3)
        assert time.monotonic() - retried_at < 3
    assert sorted(done) == sorted(ids)
