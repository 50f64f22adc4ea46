"""A worker of our runtime for the "what became of an action" browser test,
run as its own process.

    python tests/e2e/cohort_worker.py QUEUE [--sleep S] [--prefix P]

Each job takes ``--sleep`` seconds, then by its data's ``n``: every fourth
fails again with a timeout worded like the one it had before ("same
reason", folded), the next one fails with another reason, the other half
completes. Prints "ready" once running, then runs until terminated. The
Redis URL comes from REDIS_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

from queues.job import Job
from queues.keys import DEFAULT_PREFIX
from queues.worker import Worker
from tests.e2e.worker_process import run_until_terminated


async def main(queue: str, sleep: float, prefix: str) -> None:
    async def process(job: Job) -> Any:
        await asyncio.sleep(sleep)
        n = int(job.data["n"])
        if n % 4 == 0:
            raise RuntimeError(f"timeout after {n * 7} ms on job {job.id}")
        if n % 4 == 1:
            raise RuntimeError("card declined")
        return {"sent": n}

    url = os.environ["REDIS_URL"]
    worker = Worker(queue, process, connection_url=url, prefix=prefix, drain_delay_s=0.2)
    await run_until_terminated(worker)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("queue")
    parser.add_argument("--sleep", type=float, default=0.2)
    parser.add_argument("--prefix", default=DEFAULT_PREFIX)
    args = parser.parse_args()
    asyncio.run(main(args.queue, args.sleep, args.prefix))
