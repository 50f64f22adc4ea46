"""Jobs written by bullmq 2.20.1 (the peer) are listed, shown and acted on."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from bullmq import Queue as BullQueue
from bullmq import Worker
from redis import Redis

from queues.queue import Queue

pytestmark = pytest.mark.peer
Q = "/queues/bull/peer/"


async def _produce(url: str) -> dict[str, str]:
    """Plain, prioritized, delayed, custom-id jobs and one failed twice with traces."""
    bull = BullQueue("peer", {"connection": url})
    ids: dict[str, str] = {}
    try:
        ids["doomed"] = (
            await bull.add("doomed", {"n": 0}, {"attempts": 2, "jobId": "doomed-1"})
        ).id
        attempts = 0

        async def process(job: Any, token: str) -> None:
            nonlocal attempts
            attempts += 1
            raise ValueError(f"attempt {attempts} broke <b>badly</b>")

        worker = Worker("peer", process, {"connection": url, "drainDelay": 1})
        try:
            deadline = asyncio.get_running_loop().time() + 15
            while await bull.getJobState(ids["doomed"]) != "failed":
                assert asyncio.get_running_loop().time() < deadline, "peer worker too slow"
                await asyncio.sleep(0.05)
        finally:
            await worker.close()
        ids["plain"] = (await bull.add("plain", {"n": 1})).id
        ids["urgent"] = (await bull.add("urgent", {"n": 2}, {"priority": 3})).id
        ids["later"] = (await bull.add("later", {"n": 3}, {"delay": 600_000})).id
        ids["custom"] = (await bull.add("custom", {"n": 4}, {"jobId": "order-77"})).id
    finally:
        await bull.close()
    return ids


@pytest.fixture
def peer_jobs(dashboard_redis: Redis, redis_url: str) -> dict[str, str]:
    return asyncio.run(_produce(redis_url))


def test_bullmq_jobs_on_every_page(
    peer_jobs: dict[str, str], client_as: Callable[[str | None], Any]
) -> None:
    client = client_as("actor")
    overview = client.get("/").content.decode()
    assert 'data-queue="bull:peer"' in overview
    tabs = {
        "wait": [peer_jobs["plain"], "order-77"],
        "prioritized": [peer_jobs["urgent"]],
        "delayed": [peer_jobs["later"]],
        "failed": ["doomed-1"],
    }
    for state, ids in tabs.items():
        html = client.get(Q, {"state": state}).content.decode()
        for job_id in ids:
            assert f'data-job-id="{job_id}"' in html, (state, job_id)
    failed_row = client.get(Q, {"state": "failed"}).content.decode()
    assert "2/2" in failed_row
    assert "attempt 2 broke &lt;b&gt;badly&lt;/b&gt;" in failed_row
    job = client.get(Q + "job/doomed-1").content.decode()
    assert 'data-job-state="failed"' in job
    assert "Attempt 2 (latest)" in job
    assert "Attempt 1" in job
    assert "&lt;b&gt;badly&lt;/b&gt;" in job
    delayed = client.get(Q + "job/" + peer_jobs["later"]).content.decode()
    assert 'data-job-state="delayed"' in delayed
    api = client.get("/api/queues/bull/peer/job/order-77").json()
    assert api["state"] == "wait"
    assert api["data"] == {"n": 4}
    assert json.loads(json.dumps(api["opts"]))["jobId"] == "order-77"


def test_actions_on_bullmq_jobs(
    peer_jobs: dict[str, str], dashboard_redis: Redis, client_as: Callable[[str | None], Any]
) -> None:
    client = client_as("actor")
    queue = Queue("peer", dashboard_redis)
    url = Q + "actions/"
    client.post(url, {"action": "retry", "ids": ["doomed-1"], "state": "failed"})
    client.post(url, {"action": "promote", "ids": [peer_jobs["later"]]})
    client.post(url, {"action": "fail", "ids": [peer_jobs["urgent"]], "reason": "stop"})
    client.post(url, {"action": "remove", "ids": ["order-77"]})
    assert queue.get_state("doomed-1") == "wait"
    assert queue.get_state(peer_jobs["later"]) == "wait"
    assert queue.get_state(peer_jobs["urgent"]) == "failed"
    assert queue.get_job("order-77") is None
