"""A worker process for tests/test_crash.py: records each attempt in Redis.

    python tests/crash_worker.py URL QUEUE [--lock-ms N] [--stalled-ms N] [--concurrency N]
                                           [--prefix P]

The processor appends ``start <job> <pid> <ms>`` to the list ``crash:events``
when it begins a job and ``finish <job> <pid> <ms>`` when it ends, sleeping
``data["sleep"]`` seconds in between, so the test can tell which process ran
what, when, and whether any attempt overlapped another.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from queues.connection import connect_async
from queues.job import Job
from queues.worker import Worker

EVENTS = "crash:events"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("queue")
    parser.add_argument("--lock-ms", type=int, default=1000)
    parser.add_argument("--stalled-ms", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=5)
    parser.add_argument("--prefix", default="bull")
    args = parser.parse_args()
    client = connect_async(args.url)
    pid = os.getpid()

    async def record(job: Job) -> Any:
        await client.rpush(EVENTS, f"start {job.id} {pid} {int(time.time() * 1000)}")
        await asyncio.sleep(float(job.data.get("sleep", 0)))
        await client.rpush(EVENTS, f"finish {job.id} {pid} {int(time.time() * 1000)}")
        return pid

    worker = Worker(
        args.queue,
        record,
        client=client,
        prefix=args.prefix,
        concurrency=args.concurrency,
        lock_duration_ms=args.lock_ms,
        stalled_interval_ms=args.stalled_ms,
        drain_delay_s=0.5,
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    run = asyncio.create_task(worker.run())
    await client.rpush(EVENTS, f"ready - {pid} {int(time.time() * 1000)}")
    await stop.wait()
    await worker.close()
    await run
    await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
