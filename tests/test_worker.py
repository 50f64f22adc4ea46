from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from redis import Redis

from queues import codec
from queues.commands.transitions import RateLimit
from queues.job import Job
from queues.queue import Queue
from queues.worker import UnrecoverableError, Worker
from tests.worker_helpers import FailsFirst, PeakConcurrency, running, until

QUEUE = "work"


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue(QUEUE, redis_client)


def events_of(client: Redis, queue: Queue, job_id: str) -> list[str]:
    return [
        codec.text(fields[b"event"]) or ""
        for _id, fields in client.xrange(queue.keys.events)
        if codec.text(fields.get(b"jobId")) == job_id
    ]


def echo_after(seconds: float) -> Callable[[Job], Awaitable[Any]]:
    async def process(job: Job) -> Any:
        await asyncio.sleep(seconds)
        return job.data

    return process


async def test_jobs_are_processed_and_their_results_recorded(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    ids = [queue.add("send", {"n": n}) for n in range(5)]
    async with running(QUEUE, echo_after(0), url=redis_url, name="w-1"):
        await until(lambda: queue.get_counts("completed")["completed"] == 5)
    job = queue.get_job(ids[0])
    assert job is not None
    assert job.returnvalue == {"n": 0}
    assert job.processed_by == "w-1"
    assert job.attempts_made == 1
    assert job.finished_on is not None
    assert job.processed_on is not None
    assert events_of(redis_client, queue, ids[0]) == ["added", "waiting", "active", "completed"]
    assert queue.get_counts("wait", "active") == {"wait": 0, "active": 0}
    assert redis_client.exists(queue.keys.lock(ids[0])) == 0


async def test_a_failure_is_retried_after_its_exponential_backoff(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    flaky = FailsFirst(2)
    job_id = queue.add(
        "flaky", None, {"attempts": 3, "backoff": {"type": "exponential", "delay": 150}}
    )
    async with running(QUEUE, flaky, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "completed")
    gaps = flaky.gaps()
    assert gaps[0] >= 0.14  # 150 ms after the first failure
    assert gaps[1] >= 0.29  # 300 ms after the second
    job = queue.get_job(job_id)
    assert job is not None
    assert job.attempts_made == 3
    assert job.returnvalue == "ok"
    assert len(job.stacktrace) == 2
    assert "boom 2" in job.stacktrace[1]
    assert events_of(redis_client, queue, job_id).count("delayed") == 2


async def test_exhausted_attempts_fail_the_job_with_its_stacktraces(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    async def always_fails(job: Job) -> None:
        raise ValueError(f"bad input {job.data}")

    job_id = queue.add("doomed", 7, {"attempts": 2, "backoff": 10})
    async with running(QUEUE, always_fails, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "failed")
    job = queue.get_job(job_id)
    assert job is not None
    assert job.failed_reason == "bad input 7"
    assert job.attempts_made == 2
    assert len(job.stacktrace) == 2
    assert all("ValueError: bad input 7" in trace for trace in job.stacktrace)
    assert "Traceback" in job.stacktrace[0]
    events = events_of(redis_client, queue, job_id)
    assert events[-2:] == ["failed", "retries-exhausted"]


async def test_an_unrecoverable_error_skips_the_remaining_attempts(
    redis_url: str, queue: Queue
) -> None:
    calls = 0

    async def give_up(job: Job) -> None:
        nonlocal calls
        calls += 1
        raise UnrecoverableError("card declined")

    job_id = queue.add("charge", None, {"attempts": 5})
    async with running(QUEUE, give_up, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "failed")
    assert calls == 1


@pytest.mark.parametrize("result", [{1, 2}, float("nan")])
async def test_a_result_that_is_not_json_fails_the_job(
    redis_url: str, queue: Queue, result: Any
) -> None:
    async def returns_a_set(job: Job) -> Any:
        return result

    job_id = queue.add("weird")
    async with running(QUEUE, returns_a_set, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "failed")
    job = queue.get_job(job_id)
    assert job is not None
    assert "JSON" in (job.failed_reason or "") + "".join(job.stacktrace)


async def test_remove_on_complete_and_remove_on_fail_are_applied(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    async def odd_fails(job: Job) -> None:
        if job.data % 2:
            raise RuntimeError("odd")

    gone = queue.add("x", 0, {"removeOnComplete": True})
    kept = [queue.add("x", n, {"removeOnFail": 1}) for n in (1, 3, 5)]
    async with running(QUEUE, odd_fails, url=redis_url):
        await until(lambda: len(events_of(redis_client, queue, kept[-1])) >= 4)
        await until(lambda: redis_client.exists(queue.keys.job(gone)) == 0)
    assert queue.get_counts("completed", "failed") == {"completed": 0, "failed": 1}
    assert [job.id for job in queue.get_jobs("failed")] == [kept[-1]]
    assert redis_client.exists(queue.keys.job(kept[0])) == 0


async def test_concurrency_runs_that_many_jobs_at_once_and_no_more(
    redis_url: str, queue: Queue
) -> None:
    tracked = PeakConcurrency(0.05)

    queue.add_bulk([("t", n, None) for n in range(20)])
    async with running(QUEUE, tracked, url=redis_url, concurrency=4):
        await until(lambda: queue.get_counts("completed")["completed"] == 20)
    assert tracked.peak == 4


async def test_the_rate_limit_spaces_out_job_starts(redis_url: str, queue: Queue) -> None:
    starts: list[float] = []

    async def record(job: Job) -> None:
        starts.append(time.monotonic())

    queue.add_bulk([("r", n, None) for n in range(6)])
    async with running(QUEUE, record, url=redis_url, concurrency=5, limiter=RateLimit(2, 300)):
        await until(lambda: len(starts) == 6)
    # 6 jobs, at most 2 per 300 ms window: three windows, the last opening >= 600 ms in
    assert starts[-1] - starts[0] >= 0.55
    assert all(b - a >= 0.25 for a, b in zip(starts[0::2], starts[2::2], strict=False))


async def test_global_concurrency_caps_all_workers_together(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    redis_client.hset(queue.keys.meta, "concurrency", 2)
    tracked = PeakConcurrency(0.03)

    queue.add_bulk([("g", n, None) for n in range(10)])
    async with (
        running(QUEUE, tracked, url=redis_url, concurrency=5),
        running(QUEUE, tracked, url=redis_url, concurrency=5),
    ):
        await until(lambda: queue.get_counts("completed")["completed"] == 10)
    assert tracked.peak == 2


async def test_a_delayed_job_runs_when_due_without_busy_polling(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    ran_at: list[float] = []

    async def record(job: Job) -> None:
        ran_at.append(time.time())

    async with running(QUEUE, record, url=redis_url, drain_delay_s=5):
        await asyncio.sleep(0.1)  # the worker is now blocked on the marker
        redis_client.config_resetstat()
        added_at = time.time()
        queue.add("later", None, {"delay": 400})
        await until(lambda: bool(ran_at))
        calls = redis_client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    assert 0.38 <= ran_at[0] - added_at < 3  # due at 0.4 s, not at the 5 s drain delay
    assert calls <= 6  # the add, a pick-up or two: no polling loop


async def test_a_delayed_job_is_taken_when_due_not_on_redis_s_next_clock_tick(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    """Redis ends a blocked command's wait on its clock tick (every 100 ms at
    its default hz 10), so a BZPOPMIN timed to a due time returned up to 100
    ms past it: a run every 200 ms then skipped slots under load. Each job
    here is due 5 ms after a tick (found by a BZPOPMIN timing out), where the
    next tick is 95 ms away; nothing else talks to Redis meanwhile."""
    due: dict[str, int] = {}
    late: list[float] = []
    taken = asyncio.Event()

    async def record(job: Job) -> None:
        late.append(time.time() * 1000 - due[job.id])
        taken.set()

    async with running(QUEUE, record, url=redis_url, drain_delay_s=5):
        for _ in range(5):
            await asyncio.sleep(0.05)  # the worker is blocked on the marker
            redis_client.bzpopmin("tick-finder", 0.001)  # returns on a tick
            tick = time.time() * 1000
            delay = int(tick + 205 - time.time() * 1000)
            taken.clear()
            job_id = queue.add("on-time", None, {"delay": delay})
            due[job_id] = int(redis_client.hget(queue.keys.job(job_id), "timestamp") or 0) + delay
            await asyncio.wait_for(taken.wait(), 5)
    assert sorted(late)[2] < 45, f"taken {sorted(late)} ms after they were due"


async def test_a_wait_past_redis_pys_default_read_timeout_is_no_outage(
    redis_url: str, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    """A delayed job due in 7 s: the worker blocks on the marker that long
    (BZPOPMIN, up to MAX_BLOCK_S). redis-py 8's default 5 s read timeout under
    it would cut the wait into a reported outage and a reconnect."""
    caplog.set_level(logging.WARNING, logger="echomq")
    ran_at: list[float] = []

    async def record(job: Job) -> None:
        ran_at.append(time.time())

    async with running(QUEUE, record, url=redis_url, drain_delay_s=5):
        await asyncio.sleep(0.1)
        added_at = time.time()
        queue.add("later", None, {"delay": 7_000})
        await until(lambda: bool(ran_at), 12)
    assert 6.9 <= ran_at[0] - added_at < 9
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_graceful_close_waits_for_jobs_in_flight(redis_url: str, queue: Queue) -> None:
    started = asyncio.Event()

    async def slow(job: Job) -> str:
        started.set()
        await asyncio.sleep(0.3)
        return "done"

    first = queue.add("slow")
    worker = Worker("work", slow, connection_url=redis_url, drain_delay_s=0.2)
    task = asyncio.create_task(worker.run())
    await started.wait()
    second = queue.add("slow")
    await worker.close()
    await asyncio.wait_for(task, 1)
    assert queue.get_state(first) == "completed"
    assert queue.get_state(second) == "wait"  # not taken once closing began


async def test_a_forced_close_returns_jobs_in_flight_to_the_queue(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    started = asyncio.Event()

    async def endless(job: Job) -> None:
        started.set()
        await asyncio.sleep(60)

    job_id = queue.add("stuck", None, {"attempts": 1})
    worker = Worker("work", endless, connection_url=redis_url)
    task = asyncio.create_task(worker.run())
    await started.wait()
    began = time.monotonic()
    await worker.close(force=True)
    await asyncio.wait_for(task, 1)
    assert time.monotonic() - began < 1
    assert redis_client.exists(queue.keys.lock(job_id)) == 0
    assert queue.get_state(job_id) == "wait"
    assert events_of(redis_client, queue, job_id)[-2:] == ["active", "waiting"]
    job = queue.get_job(job_id)
    assert job is not None
    assert job.attempts_made == 0
    async with running(QUEUE, echo_after(0), url=redis_url):
        await until(lambda: queue.get_state(job_id) == "completed")


async def test_a_close_with_timeout_releases_what_is_still_running(
    redis_url: str, queue: Queue
) -> None:
    async def sleepy(job: Job) -> None:
        await asyncio.sleep(0.05 if job.data == "quick" else 30)

    quick = queue.add("q", "quick")
    slow = queue.add("q", "slow")
    worker = Worker("work", sleepy, connection_url=redis_url, concurrency=2)
    task = asyncio.create_task(worker.run())
    await until(lambda: queue.get_counts("active")["active"] == 2)
    await worker.close(timeout=0.3)
    await asyncio.wait_for(task, 1)
    assert queue.get_state(quick) == "completed"
    assert queue.get_state(slow) == "wait"


async def test_locks_are_renewed_so_a_long_job_is_not_taken_as_stalled(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    # A 2 s lock renewed every second: a 500 ms lock (renewed every 250 ms)
    # lapsed on this 2-core machine at load 17 (the job recovered as stalled),
    # where the process, and the sync calls below on the loop the renewals
    # share, are held up for longer than a quarter of a second.
    job_id = queue.add("long")
    checker = Worker("work", echo_after(0), connection_url=redis_url, stalled_interval_ms=100)
    async with running(
        QUEUE, echo_after(4.6), url=redis_url, lock_duration_ms=2_000, stalled_interval_ms=100
    ):
        await until(lambda: queue.get_state(job_id) == "active")
        # Checks spanning more than twice the lock duration: without renewal
        # the job would be marked at one check and recovered at a later one.
        started = time.monotonic()
        while time.monotonic() - started < 4.2:
            redis_client.delete(queue.keys.stalled_check)  # run each check, whoever ran last
            assert await checker.check_stalled() == []
            await asyncio.sleep(0.12)
        await until(lambda: queue.get_state(job_id) == "completed")
    await checker.close()
    assert events_of(redis_client, queue, job_id).count("stalled") == 0


async def test_a_job_whose_lock_vanished_is_recovered_by_the_stalled_checker(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    hold = asyncio.Event()

    async def blocked(job: Job) -> None:
        await hold.wait()

    job_id = queue.add("lost")
    async with running(QUEUE, blocked, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "active")
        redis_client.delete(queue.keys.lock(job_id))  # as if the worker had died
        checker = Worker("work", echo_after(0), connection_url=redis_url, stalled_interval_ms=50)
        # Start from a clean slate whatever the running worker's own check did.
        redis_client.delete(queue.keys.stalled_check, queue.keys.stalled)
        assert await checker.check_stalled() == []  # first sighting: marked
        await asyncio.sleep(0.06)
        assert await checker.check_stalled() == [job_id]  # still unlocked: moved back
        await checker.close()
        assert queue.get_state(job_id) == "wait"
        hold.set()
    assert "stalled" in events_of(redis_client, queue, job_id)


async def test_metrics_count_finished_jobs_per_minute(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    async def half_fail(job: Job) -> None:
        if job.data >= 3:
            raise RuntimeError("no")

    queue.add_bulk([("m", n, None) for n in range(5)])
    async with running(QUEUE, half_fail, url=redis_url, metrics=True):
        await until(
            lambda: queue.get_counts("completed", "failed") == {"completed": 3, "failed": 2}
        )
    assert int(redis_client.hget(queue.keys.metrics_completed, "count") or 0) == 3
    assert int(redis_client.hget(queue.keys.metrics_failed, "count") or 0) == 2


async def test_without_metrics_nothing_is_recorded(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    queue.add("m")
    async with running(QUEUE, echo_after(0), url=redis_url):
        await until(lambda: queue.get_counts("completed")["completed"] == 1)
    assert redis_client.exists(queue.keys.metrics_completed) == 0


async def test_priorities_and_lifo_decide_the_order(redis_url: str, queue: Queue) -> None:
    order: list[str] = []

    async def record(job: Job) -> None:
        order.append(job.name)

    queue.add("fifo-1")
    queue.add("fifo-2")
    queue.add("lifo", None, {"lifo": True})
    queue.add("low", None, {"priority": 9})
    queue.add("high", None, {"priority": 1})
    async with running(QUEUE, record, url=redis_url):
        await until(lambda: len(order) == 5)
    assert order == ["lifo", "fifo-1", "fifo-2", "high", "low"]


async def test_the_return_value_is_stored_as_json(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    async def answer(job: Job) -> dict[str, Any]:
        return {"sent": True, "to": ["a@example.com"], "n": None}

    job_id = queue.add("send")
    async with running(QUEUE, answer, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "completed")
    raw = redis_client.hget(queue.keys.job(job_id), "returnvalue")
    assert json.loads(raw or b"") == {"sent": True, "to": ["a@example.com"], "n": None}


async def test_the_worker_carries_on_after_its_connections_are_dropped(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    async with running(QUEUE, echo_after(0), url=redis_url):
        queue.add("before")
        await until(lambda: queue.get_counts("completed")["completed"] == 1)
        redis_client.client_kill_filter(_type="normal", skipme=True)
        queue.add("after")
        await until(lambda: queue.get_counts("completed")["completed"] == 2, 10)


async def test_a_cancelled_error_raised_by_the_processor_itself_is_a_failure(
    redis_url: str, queue: Queue
) -> None:
    async def gives_up(job: Job) -> None:
        raise asyncio.CancelledError

    job_id = queue.add("cancelled")
    async with running(QUEUE, gives_up, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "failed")
    job = queue.get_job(job_id)
    assert job is not None
    assert job.failed_reason == "CancelledError"


async def test_a_paused_queue_is_left_alone_until_resumed(redis_url: str, queue: Queue) -> None:
    queue.pause()
    job_id = queue.add("held")
    async with running(QUEUE, echo_after(0), url=redis_url, drain_delay_s=5):
        await asyncio.sleep(0.3)
        assert queue.get_state(job_id) in ("paused", "wait")
        assert queue.get_counts("completed")["completed"] == 0
        resumed_at = time.monotonic()
        queue.resume()
        # resume wakes the blocked worker at once, well before its 5 s drain delay
        await until(lambda: queue.get_state(job_id) == "completed", 4)
    assert time.monotonic() - resumed_at < 3


async def test_a_busy_worker_costs_one_script_call_per_job(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    queue.add_bulk([("busy", n, None) for n in range(300)])
    redis_client.config_resetstat()
    async with running(QUEUE, echo_after(0), url=redis_url, concurrency=10):
        await until(lambda: queue.get_counts("completed")["completed"] == 300)
        stats = redis_client.info("commandstats")
    calls = sum(stats.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("evalsha", "eval"))
    # 300 finishes that each fetch the next job, plus the first pick-up of each
    # slot, the stalled check and the pick-ups that found the queue drained
    assert 300 <= calls <= 300 + 25


async def test_an_unknown_backoff_type_retries_without_delay(
    redis_url: str, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = FailsFirst(1)
    job_id = queue.add("odd", None, {"attempts": 2, "backoff": {"type": "linear", "delay": 60_000}})
    async with running(QUEUE, flaky, url=redis_url):
        await until(lambda: queue.get_state(job_id) == "completed", 3)
    assert flaky.gaps()[0] < 1
    assert "unknown backoff type 'linear'" in caplog.text


async def test_renewal_reports_a_lock_taken_away_from_a_running_job(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    hold = asyncio.Event()

    async def blocked(job: Job) -> None:
        await hold.wait()

    kept = queue.add("kept")
    taken = queue.add("taken")
    async with running(QUEUE, blocked, url=redis_url, concurrency=2) as worker:
        await until(lambda: len(worker.held) == 2)
        redis_client.set(queue.keys.lock(taken), "someone-else")
        assert await worker.renew_locks() == [taken]
        assert 0 < (redis_client.pttl(queue.keys.lock(kept)) or 0) <= 30_000
        hold.set()
        await until(lambda: queue.get_state(kept) == "completed")
    # finishing without the lock is refused: the job stays where the new holder has it
    assert queue.get_state(taken) == "active"
