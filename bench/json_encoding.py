"""The job JSON encoder against the standard library's, alone and inside a bulk add.

    python bench/json_encoding.py [--rounds 7] [--jobs 50000]

Prints, for queues.job_options.to_json (python-rapidjson, one encoder built
once) and for the standard library's public API (one json.JSONEncoder, which
builds a new C encoder on every call): the time of one call on a tiny job's
data, a small realistic job's data and a typical options object; then, on a
private redis-server, ``--rounds`` bulk adds of ``--jobs`` tiny jobs with each
encoder in turn (interleaved, so the machine's other work hits both alike):
jobs/s and the Python process's CPU per job, which load moves least.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from queues import job_options
from queues.connection import connect
from queues.queue import Queue
from queues.redis_server import LocalRedisServer, server_binary

SAMPLES = {
    "tiny data": {"n": 0},
    "small job data": {
        "to": "ann@example.com",
        "subject": "Welcome",
        "vars": {"name": "Ann", "items": [1, 2, 3], "coupon": None},
        "ratio": 0.25,
    },
    "options": {"attempts": 3, "backoff": {"type": "exponential", "delay": 1000}, "lifo": True},
}
_STDLIB = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def stdlib_to_json(value: Any) -> str:
    try:
        return _STDLIB.encode(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise job_options.InvalidJobOptions(f"not JSON-serialisable: {exc}") from None


ENCODERS: dict[str, Callable[[Any], str]] = {
    "to_json (rapidjson)": job_options.to_json,
    "json.JSONEncoder": stdlib_to_json,
}


def per_call_ns(encode: Callable[[Any], str], value: Any) -> float:
    runs = timeit.repeat(lambda: encode(value), number=20_000, repeat=5)
    return min(runs) / 20_000 * 1e9


def bulk_adds(rounds: int, jobs: int) -> dict[str, list[tuple[float, float]]]:
    """(jobs/s, Python CPU us per job) of each round, per encoder."""
    redis = LocalRedisServer(server_binary()[0]).start()
    client = connect(redis.url)
    queue = Queue("bench", client)
    specs = [("tiny", {"n": 0}, None) for _ in range(jobs)]
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in ENCODERS}
    try:
        for _ in range(rounds):
            for name, encode in ENCODERS.items():
                job_options.to_json = encode  # prepare_job looks it up at each call
                client.flushall()
                cpu, started = time.process_time(), time.perf_counter()
                queue.add_bulk(specs)
                wall = time.perf_counter() - started
                results[name].append((jobs / wall, (time.process_time() - cpu) / jobs * 1e6))
    finally:
        job_options.to_json = ENCODERS["to_json (rapidjson)"]
        client.close()
        redis.stop()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=50_000)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, value in SAMPLES.items():
        cells = ", ".join(f"{name} {per_call_ns(f, value):,.0f} ns" for name, f in ENCODERS.items())
        print(f"one call, {label}: {cells}")
    for name, rows in bulk_adds(args.rounds, args.jobs).items():
        rates, cpus = [r for r, _ in rows], [c for _, c in rows]
        print(
            f"bulk add of {args.jobs:,} tiny jobs, {name}: median {statistics.median(rates):,.0f} "
            f"jobs/s (best {max(rates):,.0f}), Python CPU median {statistics.median(cpus):.2f} "
            f"us per job"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
