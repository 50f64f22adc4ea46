"""Our worker and the demo producer carry on by themselves after a Redis outage."""

from __future__ import annotations

import asyncio
import logging

import pytest

from queues.connection import connect
from queues.demo import run_demo
from queues.queue import Queue
from queues.reconnect import Outage
from tests.outage import RestartableRedis, own_redis
from tests.worker_helpers import running, until

__all__ = ["own_redis"]


async def _done(job: object) -> str:
    return "done"


async def _restart(redis: RestartableRedis, down_s: float) -> None:
    redis.stop()
    await asyncio.sleep(down_s)  # the loops meet the outage, more than once
    redis.start()  # empty: whatever is there now came after the outage


def assert_outage_logged(caplog: pytest.LogCaptureFixture, logger: str) -> None:
    messages = [r.getMessage() for r in caplog.records if r.name == logger]
    assert any("Redis unreachable" in m for m in messages), messages
    assert any("Redis reachable again" in m for m in messages), messages


async def test_a_worker_resumes_after_redis_restarts(
    own_redis: RestartableRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="echomq")
    client = connect(own_redis.url)
    queue = Queue("outage", client)
    async with running("outage", _done, url=own_redis.url):
        queue.add("before", {})
        await until(lambda: queue.get_counts("completed")["completed"] == 1)
        await _restart(own_redis, 1.5)
        queue.add("after", {})
        await until(lambda: queue.get_counts("completed")["completed"] == 1, timeout=15)
    client.close()
    assert_outage_logged(caplog, "echomq.worker")


async def test_the_demo_producer_and_workers_resume_after_redis_restarts(
    own_redis: RestartableRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="echomq")
    client = connect(own_redis.url)
    emails = Queue("emails", client)
    stop = asyncio.Event()
    demo = asyncio.create_task(run_demo(own_redis.url, stop=stop, print_every_s=60, seed=5))
    try:
        await until(lambda: emails.get_counts("completed")["completed"] > 0, timeout=15)
        await _restart(own_redis, 2.0)
        await until(lambda: emails.get_counts("completed")["completed"] > 0, timeout=20)
    finally:
        stop.set()
        await asyncio.wait_for(demo, 20)
        client.close()
    assert_outage_logged(caplog, "echomq.demo")


def test_the_wait_between_attempts_grows_to_a_bound_and_starts_over_after_recovery(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="echomq.test")
    outage = Outage(logging.getLogger("echomq.test"), "loop", first_s=0.5, longest_s=3.0)
    error = ConnectionError("refused")
    assert [outage.failed(error) for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    outage.recovered()
    outage.recovered()
    assert outage.failed(error) == 0.5
    # One line when it starts and one when it ends, however many attempts between.
    assert [r.getMessage().split(":")[1].split("(")[0].strip() for r in caplog.records] == [
        "Redis unreachable",
        "Redis reachable again after 0.0 s",
        "Redis unreachable",
    ]
