"""Search and error grouping over a large failed set, on a private Redis.

    python bench/search.py [--jobs 1000000] [--worker-seconds 10]

Search (issue 13, capability 1; queues/read/search.py): ``--jobs`` failed
jobs of about 200 bytes of data each are written in BullMQ's layout
(pipelined HSET + ZADD, not through the scripts: only the search is
measured). Then, with the search's real pacing (slices of ~3 ms, 60% duty):

- a full scan by failed reason and one by data substring (target <= 20 s each),
- the time to the first page (50 hits) of each (target <= 1 s),
- the longest single Redis call, timed around each call and read back from
  SLOWLOG (target <= 10 ms),
- the jobs/s of a worker (our runtime, a no-op processor, another queue on
  the same Redis, in a child process) with a search running beside it,
  against the same worker alone (target >= 80%),
- what the first page's matched text costs (each of its 50 rows with the
  field's text around the match, read inside the calls that found them):
  the first step as the page asks it, with and without the text,
  alternated; and what reading those rows' fields afterwards would cost.

Error grouping (capability 2; bench/grouping.py, which also runs alone):
``--groups-jobs`` failed jobs of ``--groups-kinds`` kinds of reason on a Redis
of their own: the first grouping's time (target <= 3 s at 100,000), its
longest Redis command, and a look after one change at N and at N / 10 (O(1)
per change: a ratio near 1).

``--jobs 20000 --worker-seconds 2 --groups-jobs 5000 --changes 20`` is a
smoke run of a few seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import grouping
from redis import Redis

from queues.connection import connect
from queues.queue import Queue
from queues.read.refs import QueueRef
from queues.read.search import Pacing, parse_query, search_all, search_step
from queues.redis_server import LocalRedisServer, server_binary

QUEUE = "bench-failed"
SIDE_QUEUE = "bench-side"
WRITE_BATCH = 5_000
PAGE = 50
# One job in this many fails on a timeout, and has user_id 777: what the
# searches look for (the rest fail on a connection reset).
RARE = 100


def _job_fields(i: int, now: int) -> tuple[dict[str, str], str]:
    rare = i % RARE == 0
    data = {
        "user_id": 777 if rare else i % 5000,
        "email": f"customer{i}@example.com",
        "order": {"id": f"ord-{i:08d}", "total": (i % 997) / 10, "currency": "EUR"},
        "note": "express delivery, leave at the door, call before arriving",
    }
    reason = (
        f"Timeout after {30000 + i % 500} ms calling payments"
        if rare
        else f"connection reset by peer (attempt {i % 3 + 1})"
    )
    fields = {
        "name": "charge",
        "data": json.dumps(data, separators=(",", ":")),
        "opts": '{"attempts":3}',
        "timestamp": str(now - 60_000),
        "processedOn": str(now - 30_000),
        "finishedOn": str(now - i),
        "atm": "3",
        "failedReason": reason,
    }
    return fields, reason


def write_failed(client: Redis, count: int) -> float:
    """``count`` failed jobs, newest = id 1; returns the seconds it took."""
    started = time.perf_counter()
    now = int(time.time() * 1000)
    base, failed = f"bull:{QUEUE}:", f"bull:{QUEUE}:failed"
    for first in range(1, count + 1, WRITE_BATCH):
        pipe = client.pipeline(transaction=False)
        scores = {}
        for i in range(first, min(first + WRITE_BATCH, count + 1)):
            fields, _ = _job_fields(i, now)
            pipe.hset(base + str(i), mapping=fields)
            scores[str(i)] = now - i
        pipe.zadd(failed, scores)
        pipe.execute()
    client.set(f"bull:{QUEUE}:id", count)
    return time.perf_counter() - started


@dataclass
class ScanFigures:
    query: str
    seconds: float
    first_page_s: float
    hits: int
    searched: int
    calls: int
    longest_call_ms: float
    busy_share: float


def scan(client: Redis, text: str) -> ScanFigures:
    query = parse_query(text)
    ref = QueueRef("bull", QUEUE)
    started = time.perf_counter()
    first_page = 0.0
    hits, calls, longest, busy, searched = 0, 0, 0.0, 0.0, 0
    for step in search_all(client, ref, "failed", query):
        hits += len(step.hits)
        calls += step.calls
        longest = max(longest, step.longest_call_ms)
        busy += step.busy_ms
        searched = step.searched
        if not first_page and (hits >= PAGE or step.done):
            first_page = time.perf_counter() - started
    seconds = time.perf_counter() - started
    return ScanFigures(
        text, seconds, first_page, hits, searched, calls, longest, busy / 1000 / seconds
    )


def first_page_ms(client: Redis, text: str, around: int) -> tuple[float, int]:
    """The first step of a search as the page asks it (its first 50 rows),
    with the text around ``around`` of its matches: the step's time in calls
    (its pauses left out) and its hits."""
    no_rest = Pacing(sleep=lambda _: None)
    ref = QueueRef("bull", QUEUE)
    step = search_step(client, ref, "failed", parse_query(text), around=around, pacing=no_rest)
    return step.busy_ms, len(step.found)


def matched_text_cost(client: Redis, text: str, rounds: int = 40) -> str:
    """The first page's matched text, alternated with none, medians; and the
    other way, every row's field read by the dashboard after the step."""
    with_text, without = [], []
    for _ in range(rounds):
        without.append(first_page_ms(client, text, 0)[0])
        busy, shown = first_page_ms(client, text, PAGE)
        with_text.append(busy)
    field = "failedReason" if text.startswith("reason") else "data"
    ids = [str(i) for i in range(RARE, RARE * (PAGE + 1), RARE)]
    reads = []
    for _ in range(rounds):
        began = time.perf_counter()
        pipe = client.pipeline(transaction=False)
        for job_id in ids:
            pipe.hget(f"bull:{QUEUE}:{job_id}", field)
        pipe.execute()
        reads.append((time.perf_counter() - began) * 1000)
    with_ms, without_ms = statistics.median(with_text), statistics.median(without)
    return (
        f"first page of {text!r} with {shown} rows' matched text: {with_ms:.2f} ms in calls, "
        f"without {without_ms:.2f} ms ({with_ms - without_ms:+.2f}); reading the {PAGE} rows' "
        f"{field} afterwards instead: {statistics.median(reads):.2f} ms more"
    )


# -- the worker beside it ---------------------------------------------------------


def worker_child(url: str, seconds: float) -> None:
    """Run in a child process: a no-op worker on SIDE_QUEUE for ``seconds``;
    prints how many jobs it completed."""
    from queues.worker import Worker

    done = 0

    async def processor(job: object) -> None:
        nonlocal done
        done += 1

    async def main() -> None:
        worker = Worker(SIDE_QUEUE, processor, connection_url=url, concurrency=50)
        task = asyncio.create_task(worker.run())
        await asyncio.sleep(seconds)
        counted = done
        await worker.close(timeout=5)
        await asyncio.wait_for(task, 10)
        print(counted)

    asyncio.run(main())


def start_worker(url: str, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--worker-child", url, "--worker-seconds", str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )


def fill_side_queue(client: Redis, count: int) -> None:
    queue = Queue(SIDE_QUEUE, client)
    for first in range(0, count, 10_000):
        queue.add_bulk([("tick", {"n": n}, None) for n in range(first, min(first + 10_000, count))])


def worker_rate(url: str, seconds: float, client: Redis | None = None, query: str = "") -> float:
    """Jobs/s of the side worker; with ``client``, while searches run beside it."""
    child = start_worker(url, seconds)
    time.sleep(1.0)  # the child starts (imports, connects) before the window it measures
    if client is not None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and child.poll() is None:
            steps = search_all(client, QueueRef("bull", QUEUE), "failed", parse_query(query))
            for _ in steps:
                if time.monotonic() > deadline:
                    break
    out, _ = child.communicate(timeout=seconds + 60)
    return int(out.strip().splitlines()[-1]) / seconds


# -- main ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--worker-seconds", type=float, default=10.0)
    parser.add_argument("--worker-child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--groups-jobs", type=int, default=100_000, help="0: no grouping")
    parser.add_argument("--groups-kinds", type=int, default=40)
    parser.add_argument("--changes", type=int, default=200)
    args = parser.parse_args()
    if args.worker_child:
        worker_child(args.worker_child, args.worker_seconds)
        return

    redis = LocalRedisServer(server_binary()[0]).start()
    try:
        client = connect(redis.url)
        print(f"writing {args.jobs:,} failed jobs ...", flush=True)
        wrote = write_failed(client, args.jobs)
        memory = client.info("memory")["used_memory_human"]
        print(f"  written in {wrote:.1f} s ({args.jobs / wrote:,.0f} jobs/s), Redis {memory}")
        client.config_set("slowlog-log-slower-than", 1000)  # µs: every call over 1 ms
        client.slowlog_reset()
        queries = ("reason ~ timeout after", 'data ~ "user_id":777,')
        for text in queries:
            figures = scan(client, text)
            print(
                f"search {figures.query!r}: full scan {figures.seconds:.2f} s (target <= 20), "
                f"first page {figures.first_page_s * 1000:.0f} ms (target <= 1000), "
                f"{figures.hits:,} hits of {figures.searched:,} searched, {figures.calls:,} calls, "
                f"longest call {figures.longest_call_ms:.2f} ms (target <= 10), "
                f"Redis busy {figures.busy_share:.0%} of the scan"
            )
        for text in queries:
            print(matched_text_cost(client, text))
        slow = client.slowlog_get(128)
        longest_logged = max((entry["duration"] for entry in slow), default=0) / 1000
        print(
            f"SLOWLOG: {len(slow)} calls over 1 ms, the longest {longest_logged:.2f} ms "
            "(target <= 10)"
        )
        side_jobs = int(max(20_000, 8_000 * args.worker_seconds) * 2.5)
        fill_side_queue(client, side_jobs)
        alone = worker_rate(redis.url, args.worker_seconds)
        fill_side_queue(client, side_jobs)
        beside = worker_rate(redis.url, args.worker_seconds, client, queries[1])
        print(
            f"worker alone {alone:,.0f} jobs/s, beside a search {beside:,.0f} jobs/s: "
            f"{beside / alone:.0%} (target >= 80%)"
        )
    finally:
        redis.stop()
    if args.groups_jobs:
        grouping.grouping_section(args.groups_jobs, args.groups_kinds, args.changes)


if __name__ == "__main__":
    main()
