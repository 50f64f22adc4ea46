"""A worker of our runtime failing every job as issue 21's payment gateway
did, run as its own process for the incident browser test.

    python tests/e2e/gateway_worker.py QUEUE

Each job fails with "gateway timeout after <ms> ms (order <its order id>)",
the milliseconds drawn anew at every attempt, the order id from the job's
data, so no two reasons are the same text. Prints "ready" once running,
"failed <id>" per failure, then runs until terminated. The Redis URL comes
from REDIS_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
from typing import Any

from queues.job import Job
from queues.worker import Worker
from tests.e2e.worker_process import run_until_terminated


async def main(queue: str) -> None:
    async def process(job: Job) -> Any:
        await asyncio.sleep(0.02)
        waited = random.randint(30_000, 31_000)
        print(f"failed {job.id}", flush=True)
        raise TimeoutError(f"gateway timeout after {waited} ms (order {job.data['order']})")

    worker = Worker(queue, process, connection_url=os.environ["REDIS_URL"], drain_delay_s=0.2)
    await run_until_terminated(worker)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("queue")
    asyncio.run(main(parser.parse_args().queue))
