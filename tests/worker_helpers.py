"""Helpers shared by the worker tests (plain Redis, cluster, bullmq peer)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from queues.job import Job
from queues.worker import Processor, Worker


@asynccontextmanager
async def running(
    queue: str, processor: Processor, *, url: str, **options: Any
) -> AsyncIterator[Worker]:
    """A worker running in the background for the block; closed at the end
    (gracefully, up to 5 s, so a failing test does not hang on a stuck job)."""
    options.setdefault("drain_delay_s", 0.2)
    worker = Worker(queue, processor, connection_url=url, **options)
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        await worker.close(timeout=5)
        await asyncio.wait_for(task, 5)


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


class PeakConcurrency:
    """A processor taking ``seconds`` per job that records the most jobs it
    ever ran at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.now = 0
        self.peak = 0

    async def __call__(self, job: Job) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(self.seconds)
        self.now -= 1


class FailsFirst:
    """A processor failing the first ``failures`` calls, then returning ``result``;
    ``starts`` holds the monotonic time of every call."""

    def __init__(self, failures: int, result: Any = "ok") -> None:
        self.failures = failures
        self.result = result
        self.starts: list[float] = []

    async def __call__(self, job: Job) -> Any:
        self.starts.append(time.monotonic())
        if len(self.starts) <= self.failures:
            raise RuntimeError(f"boom {len(self.starts)}")
        return self.result

    def gaps(self) -> list[float]:
        return [
            later - earlier for earlier, later in zip(self.starts, self.starts[1:], strict=False)
        ]
