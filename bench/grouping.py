"""Failures grouped by error, at size (issue 13); bench/search.py runs it after
its search figures, and it runs alone too:

    python bench/grouping.py [--groups-jobs 100000] [--groups-kinds 40] [--changes 200]
                             [--reasons numbers|ids]

N failed jobs with reasons of K kinds (numbers, ids and quoted values varying
per job, as real reasons do) are seeded straight into a private redis-server.
It prints the first grouping's time (the index built from nothing, what the
first look at the failed tab costs), the longest single Redis command during
that build (SLOWLOG, threshold 1 ms), the cost of a look after one new failure
and after one retry (median of ``--changes`` each), the same at N / 10 (a flat
ratio means O(1) per change, not O(failed)), and the index's memory per
failed job.

Targets: the first grouping of 100,000 failed jobs <= 3 s; each Redis command
short (<= 10 ms); a look after a change O(1): ratio N / (N / 10) <= 1.5.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from queues.connection import connect  # noqa: E402
from queues.queue import Queue  # noqa: E402
from queues.read import error_groups  # noqa: E402
from queues.read.refs import QueueRef  # noqa: E402
from queues.redis_server import LocalRedisServer, server_binary  # noqa: E402

# ----------------------------------------------------------------------- grouping

GROUPED = QueueRef("bull", "grouped")
# Bench data only, not a protocol script: ARGV[2] failed jobs from id ARGV[3]
# under key prefix ARGV[1], reason kind (id mod ARGV[5]), finishedOn from
# ARGV[4]; ARGV[6] "ids": reasons hold an id of letters and digits per job
# (issue 21's "(order ord_d3587f749c)"), which the folding's digit cache
# cannot share between jobs, else only numbers and a quoted value vary.
_SEED_FAILURES = """
local base, count, first, now, kinds = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]),
  tonumber(ARGV[4]), tonumber(ARGV[5])
local with_ids = ARGV[6] == 'ids'
for i = first, first + count - 1 do
  local id = tostring(i)
  local kind = i % kinds
  -- A kind is a word (a number would be folded away): "kind-ab", "kind-ac"...
  local word = 'kind-' .. string.char(97 + math.floor(kind / 26) % 26, 97 + kind % 26)
  local reason
  if with_ids then
    reason = word .. ' failed: gateway timeout after ' .. (30000 + i % 977)
      .. string.format(' ms (order ord_%010x)', (i * 2654435761) % 1099511627776)
  else
    reason = word .. ' failed: timeout after ' .. (30000 + i % 977)
      .. ' ms on job ' .. id .. " for user '" .. (i * 7919 % 100003) .. "'"
  end
  redis.call('HSET', base .. id, 'name', 'bench', 'data', '{"n":' .. id .. '}',
    'opts', '{"attempts":1}', 'timestamp', now + i - 5, 'processedOn', now + i - 2,
    'finishedOn', now + i, 'atm', 1, 'ats', 1, 'failedReason', reason,
    'stacktrace', '["Error: ' .. reason .. '\\\\n    at work (worker.js:1:1)"]')
  redis.call('ZADD', KEYS[1], now + i, id)
end
return count
"""
_KIND_WORDS = "kind-{kind} failed: timeout after {ms} ms on job {id} for user '{user}'"


def seed_failures(
    client: Any, count: int, kinds: int, *, first: int = 1, reasons: str = "numbers"
) -> None:
    script = client.register_script(_SEED_FAILURES)
    start = int(time.time() * 1000) - 10 * count
    for offset in range(0, count, 20_000):
        n = min(20_000, count - offset)
        script(
            keys=[GROUPED.keys.failed],
            args=[GROUPED.keys.base, n, first + offset, start, kinds, reasons],
        )


def _one_failure(client: Any, job_id: str) -> None:
    now = int(time.time() * 1000)
    reason = _KIND_WORDS.format(kind="ad", ms=30_123, id=job_id, user=42)
    client.hset(
        GROUPED.keys.job(job_id),
        mapping={"name": "bench", "data": "{}", "opts": "{}", "timestamp": now,
                 "finishedOn": now, "failedReason": reason},
    )  # fmt: skip
    client.zadd(GROUPED.keys.failed, {job_id: now})


def _longest_command_ms(client: Any) -> float:
    entries = client.slowlog_get(1000)
    return max((entry["duration"] for entry in entries), default=0) / 1000


def _looks_after_changes(client: Any, changes: int) -> tuple[float, float]:
    """Median ms of a look after one new failure, and after one retry."""
    queue = Queue(GROUPED.name, client, prefix=GROUPED.prefix)
    after_failure, after_retry = [], []
    for n in range(changes):
        _one_failure(client, f"new-{n}")
        started = time.perf_counter()
        error_groups.error_groups(client, GROUPED)
        after_failure.append((time.perf_counter() - started) * 1000)
        queue.retry(f"new-{n}")
        started = time.perf_counter()
        error_groups.error_groups(client, GROUPED)
        after_retry.append((time.perf_counter() - started) * 1000)
    return statistics.median(after_failure), statistics.median(after_retry)


def _redis_cpu_s(client: Any) -> float:
    """CPU seconds the Redis server has used (main thread, user + system)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def _index_bytes(client: Any) -> int:
    total = 0
    for key in client.scan_iter(match=GROUPED.keys.error_groups("*"), count=1000):
        total += int(client.memory_usage(key, samples=0) or 0)
    return total


def grouping_run(
    count: int, kinds: int, changes: int, reasons: str = "numbers"
) -> dict[str, float]:
    """One size on its own private Redis: the figures of the grouping section."""
    redis = LocalRedisServer(server_binary()[0]).start()
    try:
        client = connect(redis.url)
        seed_failures(client, count, kinds, reasons=reasons)
        client.config_set("slowlog-log-slower-than", 1000)
        client.slowlog_reset()
        redis_cpu = _redis_cpu_s(client)
        python_cpu = time.process_time()
        started = time.perf_counter()
        grouped = error_groups.error_groups(client, GROUPED)
        first_s = time.perf_counter() - started
        python_cpu = time.process_time() - python_cpu
        redis_cpu = _redis_cpu_s(client) - redis_cpu
        if not grouped.complete or grouped.indexed != count:
            raise SystemExit(f"the first grouping counted {grouped.indexed:,} of {count:,}")
        longest_ms = _longest_command_ms(client)
        failure_ms, retry_ms = _looks_after_changes(client, changes)
        check = error_groups.error_groups(client, GROUPED)
        if not check.indexed == check.failed == count:
            raise SystemExit(
                f"after the changes: {check.indexed:,} counted, {check.failed:,} failed"
            )
        return {
            "first_s": first_s,
            "python_cpu_s": python_cpu,
            "redis_cpu_s": redis_cpu,
            "longest_ms": longest_ms,
            "failure_ms": failure_ms,
            "retry_ms": retry_ms,
            "bytes_per_job": _index_bytes(client) / count,
            "groups": len(grouped.groups),
        }
    finally:
        redis.stop()


def grouping_section(count: int, kinds: int, changes: int, reasons: str = "numbers") -> None:
    print(f"grouping: {count:,} failed jobs of {kinds} kinds, {reasons} varying in the reasons")
    small = grouping_run(max(1, count // 10), kinds, changes, reasons)
    big = grouping_run(count, kinds, changes, reasons)
    print(f"  first grouping of {count:,}: {big['first_s']:.2f} s ({big['groups']:.0f} groups)")
    print(
        f"  CPU for it: dashboard {big['python_cpu_s']:.2f} s, Redis {big['redis_cpu_s']:.2f} s "
        "(they overlap: the wall time is about the larger on an idle machine)"
    )
    print(f"  longest Redis command during it: {big['longest_ms']:.1f} ms")
    print(
        f"  a look after one new failure: {big['failure_ms']:.2f} ms "
        f"(at {count // 10:,}: {small['failure_ms']:.2f} ms, ratio "
        f"{big['failure_ms'] / small['failure_ms']:.2f})"
    )
    print(
        f"  a look after one retry: {big['retry_ms']:.2f} ms "
        f"(at {count // 10:,}: {small['retry_ms']:.2f} ms, ratio "
        f"{big['retry_ms'] / small['retry_ms']:.2f})"
    )
    print(f"  index memory: {big['bytes_per_job']:.0f} bytes per failed job")


# ----------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups-jobs", type=int, default=100_000)
    parser.add_argument("--groups-kinds", type=int, default=40)
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument(
        "--reasons",
        choices=("numbers", "ids"),
        default="numbers",
        help="what varies per job in the reasons: numbers and a quoted value, or an id",
    )
    args = parser.parse_args()
    grouping_section(args.groups_jobs, args.groups_kinds, args.changes, args.reasons)


if __name__ == "__main__":
    main()
