"""Two dashboard server processes, one metrics history collector: the other
takes over when the collecting process is killed, within 30 s, with nothing
lost and nothing counted twice; a process stopped cleanly hands the lease back."""

from __future__ import annotations

import time
from pathlib import Path

from redis import Redis

from queues.keys import COLLECTOR_LEASE
from queues.read.history import collector_status, totals
from queues.read.refs import QueueRef
from tests.e2e.server import DashboardServer, free_port, prepare
from tests.history_helpers import job_events, write_events

REF = QueueRef("bull", "hist-processes")


def wait_for(predicate: object, timeout: float, what: str) -> float:
    """Seconds until ``predicate()`` holds; fails after ``timeout``."""
    began = time.monotonic()
    while not predicate():  # type: ignore[operator]
        if time.monotonic() - began > timeout:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)
    return time.monotonic() - began


def holder_pid(client: Redis) -> int | None:
    holder = collector_status(client).holder
    return int(holder.split(":")[-2]) if holder else None


def completed(client: Redis) -> int:
    return totals(client, [REF])[REF].figures.completed


def test_the_other_process_takes_over_a_killed_collector_with_no_gap_or_double_count(
    redis_client: Redis, redis_url: str, tmp_path: Path
) -> None:
    env = prepare(redis_url, tmp_path, ECHOMQ_HISTORY_COLLECTOR="1", ECHOMQ_QUEUES=REF.qualified)
    first = DashboardServer(env, free_port(), tmp_path / "a.log")
    second = DashboardServer(env, free_port(), tmp_path / "b.log")
    first.start()
    try:
        assert first.process is not None
        wait_for(lambda: holder_pid(redis_client) == first.process.pid, 30, "A collects")  # type: ignore[union-attr]
        second.start()
        assert second.process is not None
        base = int(time.time() * 1000)
        write_events(
            redis_client,
            REF,
            [e for n in range(100) for e in job_events(f"a{n}", base + 10 * n, 2, 3)],
        )
        wait_for(lambda: completed(redis_client) == 100, 20, "A counts the first 100")
        assert holder_pid(redis_client) == first.process.pid

        first.process.kill()  # no clean stop: the lease stays until it lapses
        first.process.wait()
        killed = time.monotonic()
        later = base + 5000
        write_events(
            redis_client,
            REF,
            [e for n in range(100) for e in job_events(f"b{n}", later + 10 * n, 2, 3)],
        )
        wait_for(lambda: holder_pid(redis_client) == second.process.pid, 30, "B takes over")  # type: ignore[union-attr]
        wait_for(lambda: completed(redis_client) >= 200, 10, "B counts the rest")
        took = time.monotonic() - killed
        time.sleep(1.0)  # a double count would show by now
        figures = totals(redis_client, [REF])[REF].figures
        assert figures.completed == 200
        assert figures.run.count == 200
        assert took < 30

        # A clean stop (SIGTERM) hands the lease back at once.
        second.stop()
        assert redis_client.exists(COLLECTOR_LEASE) == 0
    finally:
        first.stop()
        second.stop()
