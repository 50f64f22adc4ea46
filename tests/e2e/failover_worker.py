"""A worker of our runtime that notes every job it runs, for the failover test.

    python tests/e2e/failover_worker.py QUEUE RUNS --lock-ms MS

Appends each job's id to RUNS as it starts it (one a line), so a job run
twice shows twice. Its lock and stalled check are ``--lock-ms`` (a worker's
own options: BullMQ's and ours default to 30 s, which would keep a test
waiting a minute for the stalled check). Prints "ready" once running; SIGTERM
closes it. The Redis URL comes from REDIS_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

from queues.job import Job
from queues.worker import Worker
from tests.e2e.worker_process import run_until_terminated


async def main(queue: str, runs: Path, lock_ms: int, concurrency: int) -> None:
    with runs.open("a", buffering=1) as noted:

        async def process(job: Job) -> Any:
            noted.write(job.id + "\n")
            await asyncio.sleep(0.002)  # a short call to another service
            return None

        worker = Worker(
            queue,
            process,
            connection_url=os.environ["REDIS_URL"],
            concurrency=concurrency,
            lock_duration_ms=lock_ms,
            stalled_interval_ms=lock_ms,
            drain_delay_s=0.5,
        )
        await run_until_terminated(worker)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("queue")
    parser.add_argument("runs", type=Path)
    parser.add_argument("--lock-ms", type=int, default=30_000)
    parser.add_argument("--concurrency", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.queue, args.runs, args.lock_ms, args.concurrency))
