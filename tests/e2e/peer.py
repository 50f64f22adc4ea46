"""The BullMQ 2.20.1 peer, run as its own process by the browser tests.

    python tests/e2e/peer.py add QUEUE NAME [--delay MS] [--attempts N] [--count N]
        prints each new job id on its own line
    python tests/e2e/peer.py worker QUEUE [--fail-first] [--sleep S] [--name NAME] [--echo-data]
        processes jobs until terminated; prints "completed <id>", "failed <id> <reason>"
        and "error <message>" lines (flushed) as they happen

``--fail-first`` fails a job's first attempt and completes later ones;
``--sleep`` makes each job take that many seconds (to catch it active);
``--chatty`` writes log lines and progress on the way; ``--name`` names the
worker (its connections become ``bull:QUEUE:w:NAME``); ``--echo-data`` puts the
data the worker was given into the job's return value.
The Redis URL comes from REDIS_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from typing import Any

from bullmq import Queue, Worker


async def add(args: argparse.Namespace) -> None:
    queue = Queue(args.queue, {"connection": os.environ["REDIS_URL"]})
    opts: dict[str, Any] = {"attempts": args.attempts}
    if args.delay:
        opts["delay"] = args.delay
    for n in range(args.count):
        job = await queue.add(args.name, {"n": n}, opts)
        print(job.id, flush=True)
    await queue.close()


async def work(args: argparse.Namespace) -> None:
    async def process(job: Any, token: str) -> Any:
        if args.chatty:
            await job.log(f"resizing {job.name} #{job.id}: fetching the source")
            await job.updateProgress(40)
            await job.log("uploading to the bucket")
            await job.updateProgress(80)
        if args.sleep:
            await asyncio.sleep(args.sleep)
        if args.fail_first and job.attemptsMade == 0:
            raise RuntimeError(f"first attempt of {job.id} fails on purpose")
        if args.echo_data:
            return {"done": job.id, "data": job.data}
        return {"done": job.id}

    opts: dict[str, Any] = {"connection": os.environ["REDIS_URL"]}
    if args.name:
        opts["name"] = args.name
    worker = Worker(args.queue, process, opts)
    worker.on("completed", lambda job, result: print("completed", job.id, flush=True))
    worker.on("failed", lambda job, err: print("failed", job.id, err, flush=True))
    worker.on("error", lambda err, *rest: print("error", err, flush=True))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    await stop.wait()
    await worker.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    adding = sub.add_parser("add")
    adding.add_argument("queue")
    adding.add_argument("name")
    adding.add_argument("--delay", type=int, default=0)
    adding.add_argument("--attempts", type=int, default=1)
    adding.add_argument("--count", type=int, default=1)
    working = sub.add_parser("worker")
    working.add_argument("queue")
    working.add_argument("--fail-first", action="store_true")
    working.add_argument("--sleep", type=float, default=0.0)
    working.add_argument("--chatty", action="store_true")
    working.add_argument("--name", default="")
    working.add_argument("--echo-data", action="store_true")
    args = parser.parse_args()
    asyncio.run(add(args) if args.command == "add" else work(args))


if __name__ == "__main__":
    main()
