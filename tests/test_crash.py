"""A worker process killed with SIGKILL mid-job loses nothing.

Worker processes (tests/crash_worker.py) record every attempt's start and
finish in Redis; the test kills them with SIGKILL while jobs run and lets
other worker processes' stalled checkers bring the jobs back.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from redis import Redis

from queues.queue import Queue

SCRIPT = Path(__file__).resolve().parent / "crash_worker.py"
EVENTS = "crash:events"
LOCK_MS = 1000
STALLED_MS = 300
LIMIT_REASON = "job stalled more than allowable limit"


@dataclass(frozen=True)
class Attempt:
    job_id: str
    pid: int
    started_ms: int
    finished_ms: int | None


def attempts(client: Redis) -> list[Attempt]:
    starts: dict[tuple[str, int], int] = {}
    finishes: dict[tuple[str, int], int] = {}
    for raw in client.lrange(EVENTS, 0, -1):
        kind, job_id, pid, at = raw.decode().split()
        if kind != "ready":
            (starts if kind == "start" else finishes)[(job_id, int(pid))] = int(at)
    return [Attempt(job, pid, at, finishes.get((job, pid))) for (job, pid), at in starts.items()]


def assert_never_concurrent(runs: list[Attempt], killed_at_ms: dict[int, int]) -> None:
    """No two attempts of a job overlap; a killed process's attempt ends at its kill."""
    by_job: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in runs:
        by_job[attempt.job_id].append(attempt)
    for job_runs in by_job.values():
        job_runs.sort(key=lambda a: a.started_ms)
        for earlier, later in itertools.pairwise(job_runs):
            ended = earlier.finished_ms or killed_at_ms[earlier.pid]
            assert later.started_ms >= ended, (earlier, later)


def wait_for(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


@contextmanager
def worker_processes(
    url: str, queue: str = "crashy", prefix: str = "bull"
) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Starts tests/crash_worker.py processes; stops (SIGTERM) those still alive at exit."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        command = [sys.executable, str(SCRIPT), url, queue, "--prefix", prefix]
        command += ["--lock-ms", str(LOCK_MS), "--stalled-ms", str(STALLED_MS)]
        started.append(subprocess.Popen(command))
        return started[-1]

    try:
        yield start
    finally:
        for process in started:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in started:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def started_by(client: Redis, pid: int) -> set[str]:
    return {a.job_id for a in attempts(client) if a.pid == pid}


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue("crashy", redis_client)


def test_jobs_of_a_killed_worker_are_recovered_and_completed_once(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    long_ids = [queue.add("long", {"sleep": 1.5}) for _ in range(4)]
    with worker_processes(redis_url) as start:
        doomed = start()
        wait_for(lambda: started_by(redis_client, doomed.pid) == set(long_ids))
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        killed_at = int(time.time() * 1000)
        short_ids = [queue.add("short", {"sleep": 0.05}) for _ in range(6)]
        rescuer = start()
        wait_for(lambda: queue.get_counts("completed")["completed"] == 10, 20)
    assert queue.get_counts("wait", "active", "delayed", "failed") == {
        "wait": 0, "active": 0, "delayed": 0, "failed": 0,
    }  # fmt: skip
    by_job: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in attempts(redis_client):
        by_job[attempt.job_id].append(attempt)
    for job_id in long_ids:
        first, second = sorted(by_job[job_id], key=lambda a: a.started_ms)
        assert (first.pid, first.finished_ms) == (doomed.pid, None)  # killed mid-job
        assert second.pid == rescuer.pid
        assert second.finished_ms is not None
        # re-run only after the dead worker's lock had expired
        assert second.started_ms >= first.started_ms + LOCK_MS
        assert second.started_ms >= killed_at
        job = queue.get_job(job_id)
        assert job is not None
        assert job.returnvalue == rescuer.pid
        assert job.stalled_counter == 1
        assert job.attempts_made == 1
    for job_id in short_ids:
        assert [a.finished_ms is not None for a in by_job[job_id]] == [True]
    finished = [a for a in attempts(redis_client) if a.finished_ms is not None]
    assert sorted(a.job_id for a in finished) == sorted(long_ids + short_ids)
    assert_never_concurrent(attempts(redis_client), {doomed.pid: killed_at})


def test_a_job_that_stalls_past_the_limit_fails_with_the_stalled_reason(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    job_id = queue.add("poison", {"sleep": 30})
    killed_at: dict[int, int] = {}
    with worker_processes(redis_url) as start:
        for _ in range(2):  # max stalled count is 1: the second stall is one too many
            victim = start()
            wait_for(lambda pid=victim.pid: job_id in started_by(redis_client, pid))
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            killed_at[victim.pid] = int(time.time() * 1000)
        start()
        wait_for(lambda: queue.get_state(job_id) == "failed", 20)
    job = queue.get_job(job_id)
    assert job is not None
    assert job.failed_reason == LIMIT_REASON
    assert job.stalled_counter == 2
    # two attempts began (both killed); the third pick-up failed it without running it
    assert len([a for a in attempts(redis_client) if a.job_id == job_id]) == 2
    assert_never_concurrent(attempts(redis_client), killed_at)
