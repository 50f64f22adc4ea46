"""What the metrics history collector costs at a given rate of jobs.

    python bench/collector.py [--rate 10000] [--seconds 30] [--queues 1] [--url redis://...]

A writer process XADDs the events of ``--rate`` jobs a second straight into
the queues' events streams, as BullMQ writes them (``waiting``, ``active``,
``completed``: three events a job, MAXLEN ~ 10000), for ``--seconds``; no
worker runs, so Redis does only the writing and the collecting. Two phases of
the same length on one private Redis (or ``--url``):

1. the writer alone: Redis's CPU (INFO used_cpu_sys + used_cpu_user) is the baseline;
2. the writer and a collector (queues.collector.HistoryCollector, in a process
   of its own): the collector process's CPU share (1.0 = one core) and
   Redis's extra CPU share over the baseline.

Targets: collector <= 10% of a core, extra Redis CPU <= 5%. Printed too: the
rate the writer reached (a loaded machine may not reach ``--rate``), and
whether the collector counted every job (events trimmed before it read them
would be missing).

    python bench/collector.py --replay 10000 [--per-pass 1500] [--pause 0.05] [--runs 6]

measures the collector alone, for a busy machine where the writer cannot keep
its rate: the events of ``--replay`` jobs are written into a stream first
(30 events a millisecond, as at 10,000 jobs/s), then a collector in this
process reads them ``--per-pass`` events a pass (what a pass reads at 10,000
jobs/s), ``--pause`` seconds apart (0.05: the collector's own pause between
passes that read something; 0: back to back, which leaves out what a pass
costs after a sleep, caches gone cold), and its CPU time per event is printed
(the least of ``--runs``), with what that costs at 10,000 jobs/s, and Redis's
CPU time per event beside it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil
from redis import Redis

from queues.collector import HistoryCollector
from queues.connection import connect
from queues.keys import COLLECTOR_LEASE, QueueKeys
from queues.read.history import totals
from queues.read.refs import QueueRef
from queues.redis_server import LocalRedisServer

TICK_S = 0.01  # the writer writes a tick's jobs in one pipeline


def refs(count: int, phase: str) -> list[QueueRef]:
    """The queues of a phase (each phase its own: the second counts only its jobs)."""
    return [QueueRef("bench", f"collector-{phase}-{n}") for n in range(count)]


def redis_cpu(client: Redis) -> float:
    info: dict[str, Any] = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def job_events(job_id: str) -> list[dict[str, str]]:
    """A job's three events, as BullMQ writes them."""
    return [
        {"event": "waiting", "jobId": job_id},
        {"event": "active", "jobId": job_id, "prev": "waiting"},
        {"event": "completed", "jobId": job_id, "returnvalue": "null", "prev": "active"},
    ]


def write(url: str, rate: int, seconds: float, queues: int, phase: str, done: Any) -> None:
    """The events of ``rate`` jobs a second, spread over the queues; the count in ``done``."""
    client = connect(url)
    streams = [QueueKeys(ref.name, ref.prefix).events for ref in refs(queues, phase)]
    per_tick = rate * TICK_S
    owed = 0.0
    written = 0
    started = time.perf_counter()
    next_tick = started
    while time.perf_counter() - started < seconds:
        owed += per_tick
        jobs, owed = int(owed), owed - int(owed)
        pipe = client.pipeline(transaction=False)
        for n in range(jobs):
            job_id = f"{phase}{written + n}"
            stream = streams[(written + n) % len(streams)]
            for fields in job_events(job_id):
                pipe.xadd(stream, fields, maxlen=10_000, approximate=True)  # type: ignore[arg-type]
        pipe.execute()
        written += jobs
        next_tick += TICK_S
        time.sleep(max(0.0, next_tick - time.perf_counter()))
    done.value = written
    client.close()


def collect(url: str, queues: int, phase: str, stop: Any) -> None:
    collector = HistoryCollector(connect(url), lambda: refs(queues, phase), name="bench")
    collector.start()
    stop.wait()
    collector.stop()


def phase(url: str, args: argparse.Namespace, name: str, with_collector: bool) -> dict[str, float]:
    client = connect(url)
    stop = multiprocessing.Event()
    collector = None
    if with_collector:
        collector = multiprocessing.Process(target=collect, args=(url, args.queues, name, stop))
        collector.start()
        time.sleep(1.0)  # lease taken, cursors read
    done = multiprocessing.Value("q", 0)
    writer = multiprocessing.Process(
        target=write, args=(url, args.rate, args.seconds, args.queues, name, done)
    )
    collector_ps = psutil.Process(collector.pid) if collector else None
    collector_cpu = sum(collector_ps.cpu_times()[:2]) if collector_ps else 0.0
    redis_before = redis_cpu(client)
    started = time.perf_counter()
    writer.start()
    writer.join()
    writing = time.perf_counter() - started
    if collector_ps:
        time.sleep(0.5)  # the collector reads the last events
        collector_cpu = sum(collector_ps.cpu_times()[:2]) - collector_cpu
    wall = time.perf_counter() - started
    result = {
        "wall": wall,
        "jobs": float(done.value),
        "rate": done.value / writing,
        "redis_cpu": (redis_cpu(client) - redis_before) / wall,
        "collector_cpu": collector_cpu / wall,
    }
    if collector:
        stop.set()
        collector.join(10)
        recorded = totals(client, refs(args.queues, name)).values()
        result["counted"] = float(sum(t.figures.completed for t in recorded))
        result["gaps"] = float(sum(t.figures.gaps for t in recorded))
    client.close()
    return result


def replay(url: str, jobs: int, per_pass: int, runs: int, pause: float) -> None:
    """The collector's CPU per event over ``jobs`` jobs' events already written."""
    client = connect(url)
    best = redis_best = float("inf")
    for run in range(runs):
        ref = QueueRef("bench", f"replay-{run}")
        pipe = client.pipeline(transaction=False)
        start_ms = int(time.time() * 1000) - 60_000
        for job in range(jobs):
            for n, fields in enumerate(job_events(f"r{job}"), start=3 * job):
                at = f"{start_ms + n // 30}-*"  # 30 events a millisecond
                pipe.xadd(ref.keys.events, fields, id=at)  # type: ignore[arg-type]
        pipe.execute()
        collector = HistoryCollector(client, lambda ref=ref: [ref], name="replay", batch=per_pass)
        collector.step()  # the lease, and the first pass
        cpu = time.process_time()
        redis_before = redis_cpu(client)
        # Until a pass reads nothing: the collector records then what it folded.
        while collector.step() or collector.read_last_pass:
            time.sleep(pause)
        cpu = time.process_time() - cpu
        redis_used = redis_cpu(client) - redis_before
        counted = totals(client, [ref])[ref].figures.completed
        if counted != jobs:
            raise SystemExit(f"the collector counted {counted:,} of {jobs:,} jobs")
        collector.stop()
        client.delete(COLLECTOR_LEASE)
        best = min(best, cpu / (jobs * 3 - per_pass))
        redis_best = min(redis_best, redis_used / (jobs * 3 - per_pass))
    print(f"collector CPU per event: {best * 1e6:.2f} us (least of {runs} runs of {jobs:,} jobs)")
    print(f"at 10,000 jobs/s (30,000 events/s): {best * 30_000:.1%} of a core (target <= 10%)")
    print(f"Redis CPU per event read: {redis_best * 1e6:.2f} us (least of {runs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=int, default=10_000, help="jobs a second (3 events each)")
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each phase")
    parser.add_argument("--queues", type=int, default=1, help="queues the jobs are spread over")
    parser.add_argument("--url", default=None, help="a Redis to use (default: a private one)")
    parser.add_argument("--replay", type=int, default=0, help="jobs replayed to measure CPU alone")
    parser.add_argument("--per-pass", type=int, default=1500, help="events a replay pass reads")
    parser.add_argument("--runs", type=int, default=6, help="replay runs (the least is printed)")
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between replay passes")
    args = parser.parse_args()
    server = None
    url = args.url
    if url is None:
        binary = shutil.which("redis-server")
        if binary is None:
            sys.exit("bench/collector.py needs redis-server on PATH (or --url)")
        server = LocalRedisServer(binary).start()
        url = server.url
    try:
        connect(url).flushall()
        if args.replay:
            replay(url, args.replay, args.per_pass, args.runs, args.pause)
            return
        alone = phase(url, args, "a", with_collector=False)
        both = phase(url, args, "b", with_collector=True)
    finally:
        if server is not None:
            server.stop()
    extra = both["redis_cpu"] - alone["redis_cpu"]
    print(
        f"target rate {args.rate:,} jobs/s over {args.queues} queue(s), {args.seconds:g} s a phase"
    )
    for label, run in (("writer alone:      ", alone), ("writer + collector:", both)):
        print(f"{label}   {run['rate']:,.0f} jobs/s, Redis {run['redis_cpu']:.1%} of a core")
    print(f"collector process:    {both['collector_cpu']:.1%} of a core (target <= 10%)")
    print(f"extra Redis CPU:      {extra:.1%} of a core (target <= 5%)")
    print(
        f"jobs counted:         {both['counted']:,.0f} of {both['jobs']:,.0f} written"
        f" (gaps said: {both['gaps']:.0f})"
    )
    if both["rate"] < 0.95 * args.rate:
        print("the writer did not reach the target rate: the machine is too busy for the figures")


if __name__ == "__main__":
    main()
