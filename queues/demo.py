"""Realistic demo traffic: four queues with producers and workers in one process.

- ``emails``: many quick jobs; transactional ones are prioritized, newsletters
  are delayed; transient SMTP errors are retried with exponential backoff.
- ``payments``: retried with a fixed, jittered backoff; a declined card fails
  for good at once; completed jobs beyond the newest 200 are removed.
- ``thumbnails``: progress updates and log lines; corrupt images fail for good.
- ``reports``: slow jobs with progress and logs, some scheduled for later.

``run_demo`` runs until ``stop`` is set; given ``print_every_s`` it prints
every queue's counts that often (``python -m queues demo`` does, against
:func:`queues.redis_server.resolve_redis`; ``manage.py demo`` does not: the
dashboard shows them). A Redis outage pauses it (the workers and the producer
retry with a growing wait, ``queues.reconnect``); it resumes by itself when
Redis answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from redis.exceptions import RedisError

from queues.connection import connect, connect_async
from queues.job import Job
from queues.keys import DEFAULT_PREFIX
from queues.queue import Queue
from queues.read.states import STATES, WAITING_CHILDREN
from queues.reconnect import Outage
from queues.worker import UnrecoverableError, Worker

log = logging.getLogger("echomq.demo")
DemoProcessor = Callable[[Worker, Job], Awaitable[Any]]
# The demo adds no flows: no job ever waits for children.
COUNTED_STATES = tuple(name for name in STATES if name != WAITING_CHILDREN.name)


class TransientError(Exception):
    """A failure worth retrying (timeouts, 5xx answers ...)."""


async def send_email(worker: Worker, job: Job) -> Any:
    await asyncio.sleep(random.uniform(0.02, 0.15))
    if random.random() < 0.08:
        raise TransientError("SMTP 451: temporary local problem, try again later")
    return {"messageId": f"<{job.id}.{random.getrandbits(32):08x}@mail.example>"}


async def charge_card(worker: Worker, job: Job) -> Any:
    await asyncio.sleep(random.uniform(0.05, 0.4))
    roll = random.random()
    if roll < 0.03:
        raise UnrecoverableError("card declined: insufficient funds")
    if roll < 0.15:
        raise TransientError("payment gateway timed out after 10s")
    amount = job.data.get("amount") if isinstance(job.data, dict) else None
    return {"charged": amount, "receipt": f"rcpt_{random.getrandbits(40):010x}"}


async def make_thumbnail(worker: Worker, job: Job) -> Any:
    source = job.data.get("image") if isinstance(job.data, dict) else "unknown"
    await worker.add_log(job, f"downloading {source}")
    for step in (25, 50, 75):
        await asyncio.sleep(random.uniform(0.05, 0.25))
        await worker.update_progress(job, step)
    if random.random() < 0.05:
        await worker.add_log(job, "decoder error: truncated JPEG data")
        raise UnrecoverableError(f"corrupt image {source}")
    await worker.update_progress(job, 100)
    await worker.add_log(job, "wrote 3 sizes: 64px, 256px, 1024px")
    return {"sizes": [64, 256, 1024]}


async def build_report(worker: Worker, job: Job) -> Any:
    kind = job.data.get("kind") if isinstance(job.data, dict) else "report"
    await worker.add_log(job, f"querying data for {kind}")
    for step in range(1, 6):
        await asyncio.sleep(random.uniform(0.2, 0.6))
        await worker.update_progress(job, {"step": step, "of": 5})
    if random.random() < 0.1:
        raise TransientError("warehouse connection reset by peer")
    await worker.add_log(job, "rendered PDF, 12 pages")
    return {"url": f"https://reports.example/{job.id}.pdf", "pages": 12}


@dataclass(frozen=True)
class DemoQueue:
    name: str
    processor: DemoProcessor
    concurrency: int
    per_second: float  # jobs added, on average
    make_job: Callable[[random.Random], tuple[str, Any, dict[str, Any]]]


def _email(rng: random.Random) -> tuple[str, Any, dict[str, Any]]:
    user = f"user{rng.randint(1, 5000)}@example.com"
    # A demo left running for hours must not grow without bound: keep an hour.
    retry = {
        "attempts": 3,
        "backoff": {"type": "exponential", "delay": 500},
        "removeOnComplete": {"age": 3600, "count": 2000},
    }
    kind = rng.random()
    if kind < 0.2:
        return "password-reset", {"to": user}, {**retry, "priority": 1}
    if kind < 0.3:
        return (
            "newsletter",
            {"to": user, "issue": 42},
            {**retry, "delay": rng.randint(5, 60) * 1000},
        )
    return "welcome", {"to": user, "template": "welcome-v2"}, retry


def _payment(rng: random.Random) -> tuple[str, Any, dict[str, Any]]:
    data = {"order": f"ord_{rng.getrandbits(32):08x}", "amount": rng.randint(500, 25000)}
    backoff = {"type": "fixed", "delay": 1000, "jitter": 0.5}
    return "charge", data, {"attempts": 5, "backoff": backoff, "removeOnComplete": 200}


def _thumbnail(rng: random.Random) -> tuple[str, Any, dict[str, Any]]:
    image = f"s3://uploads/{rng.getrandbits(48):012x}.jpg"
    keep = {"removeOnComplete": 1000, "removeOnFail": {"count": 100}}
    return "resize", {"image": image}, {"attempts": 1, **keep}


def _report(rng: random.Random) -> tuple[str, Any, dict[str, Any]]:
    kind = rng.choice(["daily-sales", "weekly-churn", "monthly-invoices"])
    opts: dict[str, Any] = {"attempts": 2, "backoff": 2000, "priority": rng.choice([1, 5, 10])}
    if rng.random() < 0.3:
        opts["delay"] = rng.randint(10, 90) * 1000
    return kind, {"kind": kind, "tenant": rng.randint(1, 40)}, opts


DEMO_QUEUES = (
    DemoQueue("emails", send_email, 8, 6.0, _email),
    DemoQueue("payments", charge_card, 4, 2.0, _payment),
    DemoQueue("thumbnails", make_thumbnail, 3, 2.0, _thumbnail),
    DemoQueue("reports", build_report, 2, 0.4, _report),
)


class _BoundProcessor:
    """A demo processor given the worker running it (for progress and logs)."""

    def __init__(self, processor: DemoProcessor) -> None:
        self.processor = processor
        self.worker: Worker | None = None

    async def __call__(self, job: Job) -> Any:
        assert self.worker is not None
        return await self.processor(self.worker, job)


async def _produce(queues: dict[str, Queue], stop: asyncio.Event, rng: random.Random) -> None:
    tick = 0.5
    outage = Outage(log, "demo producer")
    while not stop.is_set():
        wait = tick
        try:
            for spec in DEMO_QUEUES:
                # The expected arrivals per tick, the fraction settled by a coin toss.
                expected = spec.per_second * tick
                count = int(expected) + (rng.random() < expected % 1)
                if count:
                    jobs = [spec.make_job(rng) for _ in range(count)]
                    await asyncio.to_thread(queues[spec.name].add_bulk, jobs)
        except RedisError as error:
            # The jobs of this tick are dropped: a demo need not catch up.
            wait = outage.failed(error)
        else:
            outage.recovered()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)


def format_counts(name: str, counts: dict[str, int]) -> str:
    return f"{name:<11} " + "  ".join(f"{state} {counts[state]:>5}" for state in COUNTED_STATES)


async def _report_counts(queues: dict[str, Queue], stop: asyncio.Event, every_s: float) -> None:
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
        try:
            for name, queue in queues.items():
                counts = await asyncio.to_thread(queue.get_counts, *COUNTED_STATES)
                print(format_counts(name, counts), flush=True)
        except RedisError:
            continue  # the producer says so; counts come back with Redis
        print(flush=True)


async def _follow(outside: threading.Event, inside: asyncio.Event) -> None:
    # A threading.Event (set from another thread) cannot be awaited: poll it.
    while not outside.is_set() and not inside.is_set():
        await asyncio.sleep(0.2)
    inside.set()


async def run_demo(
    url: str,
    *,
    prefix: str = DEFAULT_PREFIX,
    stop: asyncio.Event | threading.Event | None = None,
    print_every_s: float | None = None,
    seed: int | None = None,
) -> None:
    """Produce and process demo traffic on ``url`` until ``stop`` is set.

    ``stop`` may be a ``threading.Event`` when the demo runs in its own thread
    (``manage.py demo`` does that) and is stopped from another.
    """
    done = stop if isinstance(stop, asyncio.Event) else asyncio.Event()
    rng = random.Random(seed)
    client = connect(url)
    aclient = connect_async(url)
    queues = {spec.name: Queue(spec.name, client, prefix=prefix) for spec in DEMO_QUEUES}
    workers: list[Worker] = []
    for spec in DEMO_QUEUES:
        bound = _BoundProcessor(spec.processor)
        worker = Worker(
            spec.name,
            bound,
            client=aclient,
            prefix=prefix,
            concurrency=spec.concurrency,
            metrics=True,
        )
        bound.worker = worker
        workers.append(worker)
    runs = [asyncio.create_task(worker.run()) for worker in workers]
    background = [asyncio.create_task(_produce(queues, done, rng))]
    if print_every_s is not None:
        background.append(asyncio.create_task(_report_counts(queues, done, print_every_s)))
    if isinstance(stop, threading.Event):
        background.append(asyncio.create_task(_follow(stop, done)))
    try:
        await done.wait()
    finally:
        done.set()
        await asyncio.gather(*background, return_exceptions=True)
        await asyncio.gather(*(worker.close(timeout=10) for worker in workers))
        await asyncio.gather(*runs, return_exceptions=True)
        await aclient.aclose()
        client.close()
