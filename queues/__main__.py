"""Command line: ``python -m queues worker <queue>`` and ``python -m queues demo``.

Both use ``REDIS_URL`` when set, else a private redis-server (see
``queues.redis_server.resolve_redis``); ``--url`` overrides. Ctrl-C closes
gracefully: jobs in flight finish (up to ``--grace`` seconds), then return to
the queue.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from typing import Any

from queues.commands.transitions import RateLimit
from queues.connection import redacted
from queues.demo import DEMO_QUEUES, run_demo
from queues.job import Job
from queues.keys import DEFAULT_PREFIX
from queues.redis_server import resolve_redis
from queues.worker import Worker


async def noop(job: Job) -> Any:
    """The default processor: completes every job at once, returning nothing."""
    return None


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)


async def _worker(args: argparse.Namespace) -> None:
    limiter = RateLimit(args.limit, args.limit_ms) if args.limit else None
    worker = Worker(
        args.queue,
        noop,
        connection_url=args.url or resolve_redis().url,
        prefix=args.prefix,
        concurrency=args.concurrency,
        limiter=limiter,
        metrics=args.metrics,
        name=args.name,
    )
    stop = asyncio.Event()
    _stop_on_signals(stop)
    run = asyncio.create_task(worker.run())
    print(f"worker {worker.name} on {worker.keys.base}* (concurrency {args.concurrency})")
    await asyncio.wait([run, asyncio.create_task(stop.wait())], return_when="FIRST_COMPLETED")
    await worker.close(timeout=args.grace)
    await run


async def _demo(args: argparse.Namespace) -> None:
    url = args.url or resolve_redis().url
    stop = asyncio.Event()
    _stop_on_signals(stop)
    if args.seconds:
        asyncio.get_running_loop().call_later(args.seconds, stop.set)
    names = ", ".join(spec.name for spec in DEMO_QUEUES)
    print(f"demo traffic on {names} at {redacted(url)} (prefix {args.prefix!r}); Ctrl-C stops")
    await run_demo(url, prefix=args.prefix, stop=stop, print_every_s=args.every)


def main(argv: list[str] | None = None) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", help="Redis URL (default: REDIS_URL, else a private server)")
    common.add_argument("--prefix", default=DEFAULT_PREFIX, help="key prefix (default: bull)")
    parser = argparse.ArgumentParser(prog="python -m queues")
    commands = parser.add_subparsers(dest="command", required=True)
    worker = commands.add_parser(
        "worker", parents=[common], help="run a worker with a no-op processor"
    )
    worker.add_argument("queue")
    worker.add_argument("--concurrency", type=int, default=1)
    worker.add_argument("--limit", type=int, default=0, help="rate limit: jobs per window")
    worker.add_argument("--limit-ms", type=int, default=1000, help="rate limit window (ms)")
    worker.add_argument("--metrics", action="store_true", help="record per-minute metrics")
    worker.add_argument("--grace", type=float, default=30.0, help="seconds to finish on stop")
    worker.add_argument(
        "--name",
        default="",
        help="the worker's name (default: host:pid:random), shown in CLIENT LIST",
    )
    demo = commands.add_parser(
        "demo", parents=[common], help="generate demo traffic and process it"
    )
    demo.add_argument("--seconds", type=float, default=0, help="stop after this long")
    demo.add_argument("--every", type=float, default=5.0, help="print counts this often (s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    asyncio.run(_worker(args) if args.command == "worker" else _demo(args))


if __name__ == "__main__":
    main()
