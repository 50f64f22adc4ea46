"""Job schedulers in our runtime: the BullMQ 5.x layout they write, and our
worker keeping their schedule (queues.schedulers, the scheduler scripts)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from redis import Redis

from queues import codec
from queues.job_options import InvalidJobOptions
from queues.keys import InvalidName, QueueKeys, validate_custom_job_id, validate_job_id
from queues.queue import Queue
from queues.schedulers import (
    InvalidSchedule,
    JobSchedulers,
    Repeat,
    SchedulerRefused,
    next_cron_run,
)
from tests.keyspace import snapshot
from tests.scheduler_helpers import Runs, assert_every_run_once_on_the_grid, run_time
from tests.worker_helpers import running, until

QUEUE = "sched"
KEYS = QueueKeys(QUEUE)


@pytest.fixture
def schedulers(redis_client: Redis) -> JobSchedulers:
    return JobSchedulers(QUEUE, redis_client)


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue(QUEUE, redis_client)


def definition(client: Redis, scheduler_id: str) -> dict[str, str]:
    raw = client.hgetall(f"bull:{QUEUE}:repeat:{scheduler_id}")
    return {codec.text(k) or "": codec.text(v) or "" for k, v in raw.items()}


def next_run(client: Redis, scheduler_id: str) -> int | None:
    score = client.zscore(f"bull:{QUEUE}:repeat", scheduler_id)
    return None if score is None else int(score)


def stream_events(client: Redis) -> list[tuple[str, str]]:
    return [
        (codec.text(fields[b"event"]) or "", codec.text(fields.get(b"jobId")) or "")
        for _id, fields in client.xrange(f"bull:{QUEUE}:events")
    ]


def test_an_every_scheduler_is_stored_as_bullmq_lays_it_out_with_its_first_run_due_now(
    redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    before = int(time.time() * 1000)
    job_id = schedulers.upsert(
        "heartbeat",
        Repeat(every_ms=60_000, limit=10),
        name="ping",
        data={"to": "ops"},
        opts={"attempts": 3, "removeOnComplete": 5},
    )
    run = next_run(redis_client, "heartbeat")
    assert run is not None
    assert before <= run <= int(time.time() * 1000)
    assert job_id == f"repeat:heartbeat:{run}"
    stored = definition(redis_client, "heartbeat")
    assert stored["name"] == "ping"
    assert stored["every"] == "60000"
    assert stored["limit"] == "10"
    assert stored["ic"] == "1"
    assert json.loads(stored["data"]) == {"to": "ops"}
    assert json.loads(stored["opts"]) == {"attempts": 3, "removeOnComplete": 5}
    assert int(stored["offset"]) == run % 60_000
    # The first run of an every scheduler is due at once: it waits, not delayed.
    assert queue.get_state(job_id) == "wait"
    job = queue.get_job(job_id)
    assert job is not None
    assert job.scheduler_id == "heartbeat"
    assert job.name == "ping"
    assert job.data == {"to": "ops"}
    assert job.opts["attempts"] == 3
    assert job.opts["jobId"] == job_id
    assert job.opts["prevMillis"] == run
    assert job.opts["repeat"] == {"every": 60_000, "limit": 10, "count": 1, "offset": run % 60_000}


def test_a_cron_scheduler_waits_delayed_for_the_pattern_s_next_time_in_its_time_zone(
    redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    job_id = schedulers.upsert(
        "nightly",
        Repeat(pattern="30 2 * * *", tz="Europe/Paris"),
        name="report",
    )
    run = next_run(redis_client, "nightly")
    assert run is not None
    local = datetime.fromtimestamp(run / 1000, tz=ZoneInfo("Europe/Paris"))
    assert (local.hour, local.minute, local.second) == (2, 30, 0)
    assert 0 < run - time.time() * 1000 <= 86_400_000
    assert queue.get_state(job_id) == "delayed"
    stored = definition(redis_client, "nightly")
    assert stored["pattern"] == "30 2 * * *"
    assert stored["tz"] == "Europe/Paris"
    # An empty template is left out of the hash, as BullMQ does.
    assert "data" not in stored
    assert "opts" not in stored
    job = queue.get_job(job_id)
    assert job is not None
    assert job.data == {}
    assert job.delay > 0


def test_cron_next_times_follow_bullmq_s_patterns_with_seconds_first_and_time_zones() -> None:
    monday_noon_utc = int(datetime(2026, 3, 2, 12, 0, 0, tzinfo=UTC).timestamp() * 1000)
    # Five fields: minutes first.
    assert next_cron_run("0 9 * * 1-5", monday_noon_utc, tz="America/New_York") == int(
        datetime(2026, 3, 2, 14, 0, 0, tzinfo=UTC).timestamp() * 1000
    )
    # Six fields: seconds first; strictly after the given time.
    assert next_cron_run("*/10 * * * * *", monday_noon_utc) == monday_noon_utc + 10_000
    assert next_cron_run("* * * * * *", monday_noon_utc + 1) == monday_noon_utc + 1000
    # Past the end date: no run.
    assert next_cron_run("0 0 1 1 *", monday_noon_utc, end_ms=monday_noon_utc + 1000) is None
    # Not before the start date.
    start = monday_noon_utc + 3_600_000
    assert next_cron_run("0 * * * *", monday_noon_utc, start_ms=start) == start + 3_600_000


@pytest.mark.parametrize(
    ("repeat", "message"),
    [
        (lambda: Repeat(), "exactly one"),
        (lambda: Repeat(every_ms=1000, pattern="* * * * *"), "exactly one"),
        (lambda: Repeat(every_ms=0), ">= 1"),
        (lambda: Repeat(pattern="every tuesday"), "cron pattern"),
        (lambda: Repeat(pattern="* * * * *", tz="Mars/Olympus"), "time zone"),
        (lambda: Repeat(every_ms=1000, limit=0), "limit"),
    ],
)
def test_a_definition_no_runtime_could_follow_is_refused(repeat: Any, message: str) -> None:
    with pytest.raises(InvalidSchedule, match=message):
        repeat()


def test_a_template_that_sets_a_run_s_own_options_is_refused_and_nothing_is_written(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    with pytest.raises(InvalidJobOptions, match="jobId"):
        schedulers.upsert("s", Repeat(every_ms=1000), name="n", opts={"jobId": "x"})
    with pytest.raises(InvalidName):
        schedulers.upsert("a:b", Repeat(every_ms=1000), name="n")
    with pytest.raises(InvalidSchedule, match="end date"):
        schedulers.upsert("s", Repeat(every_ms=1000, end_ms=1), name="n")
    assert redis_client.keys("*") == []


def test_upserting_again_replaces_the_pending_run_and_keeps_the_iteration_count(
    redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    first = schedulers.upsert("s", Repeat(pattern="0 0 1 1 *"), name="old", data={"v": 1})
    redis_client.hset(f"bull:{QUEUE}:repeat:s", "ic", "7")
    second = schedulers.upsert("s", Repeat(pattern="0 12 * * *"), name="new", data={"v": 2})
    assert first != second
    assert queue.get_job(first) is None
    assert queue.get_state(second) == "delayed"
    assert redis_client.zcard(f"bull:{QUEUE}:delayed") == 1
    stored = definition(redis_client, "s")
    assert stored["name"] == "new"
    assert stored["ic"] == "7"
    assert ("removed", first) in stream_events(redis_client)


def test_removing_a_scheduler_deletes_its_definition_and_its_pending_run(
    redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    job_id = schedulers.upsert("s", Repeat(pattern="0 0 1 1 *"), name="n")
    removed = schedulers.remove("s")
    assert removed.existed
    assert removed.pending_job_id == job_id
    assert queue.get_job(job_id) is None
    assert redis_client.zcard(f"bull:{QUEUE}:delayed") == 0
    assert next_run(redis_client, "s") is None
    assert definition(redis_client, "s") == {}
    assert ("removed", job_id) in stream_events(redis_client)
    again = schedulers.remove("s")
    assert not again.existed


def test_removing_a_legacy_key_deletes_its_pending_run_found_by_its_checksum_id(
    redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    """A legacy repeatable job as BullMQ before 5.0 left it: the zset member is
    the key, the pending run's id a checksum (md5sum by hand, as in
    test_read_schedulers), its hash naming the key in rjk. A job that has one
    of the possible ids but names another key is not taken for it."""
    key = "cleanup:job-1:1767222000000:UTC:0 * * * *"
    run_ms = 1_767_000_000_000
    run_id = f"repeat:9aa8072704ff0741b32deeba5df2814d:{run_ms}"
    other_key = "cleanup:job-2:1767222000000:UTC:0 * * * *"
    redis_client.zadd(f"bull:{QUEUE}:repeat", {key: run_ms, other_key: run_ms})
    redis_client.hset(
        f"bull:{QUEUE}:{run_id}", mapping={"name": "cleanup", "data": "{}", "rjk": key}
    )
    redis_client.zadd(f"bull:{QUEUE}:delayed", {run_id: run_ms * 0x1000})

    # The other key's possible ids do not include run_id: nothing of it is touched.
    kept = schedulers.remove(other_key)
    assert (kept.existed, kept.pending_job_id) == (True, "")
    assert queue.get_job(run_id) is not None

    removed = schedulers.remove(key)
    assert (removed.existed, removed.pending_job_id) == (True, run_id)
    assert queue.get_job(run_id) is None
    assert redis_client.zcard(f"bull:{QUEUE}:delayed") == 0
    assert redis_client.zcard(f"bull:{QUEUE}:repeat") == 0
    assert ("removed", run_id) in stream_events(redis_client)


def test_a_job_with_a_legacy_run_id_that_names_another_key_is_not_removed_with_it(
    redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    key = "cleanup:job-1:1767222000000:UTC:0 * * * *"
    run_ms = 1_767_000_000_000
    run_id = f"repeat:9aa8072704ff0741b32deeba5df2814d:{run_ms}"
    redis_client.zadd(f"bull:{QUEUE}:repeat", {key: run_ms})
    redis_client.hset(f"bull:{QUEUE}:{run_id}", mapping={"name": "x", "rjk": "someone-else"})
    redis_client.zadd(f"bull:{QUEUE}:delayed", {run_id: run_ms * 0x1000})
    removed = schedulers.remove(key)
    assert (removed.existed, removed.pending_job_id) == (True, "")
    assert queue.get_job(run_id) is not None
    assert redis_client.zcard(f"bull:{QUEUE}:delayed") == 1


def test_run_now_adds_a_plain_job_from_the_template_and_leaves_the_schedule_alone(
    redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    pending = schedulers.upsert(
        "s", Repeat(pattern="0 0 1 1 *"), name="report", data={"k": [1, 2]}, opts={"attempts": 2}
    )
    before = (next_run(redis_client, "s"), definition(redis_client, "s"))
    job_id = schedulers.run_now("s")
    assert queue.get_state(job_id) == "wait"
    job = queue.get_job(job_id)
    assert job is not None
    assert (job.name, job.data, job.opts) == ("report", {"k": [1, 2]}, {"attempts": 2})
    assert job.scheduler_id is None  # no worker takes it for a scheduled run
    assert (next_run(redis_client, "s"), definition(redis_client, "s")) == before
    assert queue.get_state(pending) == "delayed"


def test_run_now_of_a_missing_or_broken_scheduler_refuses_and_changes_nothing(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    with pytest.raises(SchedulerRefused, match="no such job scheduler"):
        schedulers.run_now("nope")
    schedulers.upsert("s", Repeat(pattern="0 0 1 1 *"), name="n", data={"a": 1})
    redis_client.hset(f"bull:{QUEUE}:repeat:s", "data", "{not json")
    dump = snapshot(redis_client)
    with pytest.raises(SchedulerRefused, match="not valid JSON"):
        schedulers.run_now("s")
    redis_client.hdel(f"bull:{QUEUE}:repeat:s", "ic")
    with pytest.raises(SchedulerRefused, match="legacy"):
        schedulers.run_now("s")
    redis_client.hset(f"bull:{QUEUE}:repeat:s", "ic", "1")
    assert snapshot(redis_client) == dump


def test_a_scheduler_run_id_is_a_job_id_but_never_a_custom_one() -> None:
    assert validate_job_id("repeat:heartbeat:1767222000000") == "repeat:heartbeat:1767222000000"
    assert validate_job_id("repeat:a:b:1767222000000")  # BullMQ ids may hold ':'
    for bad in ("repeat:x:", "a:b", "repeat:x:12ab"):
        with pytest.raises(InvalidName):
            validate_job_id(bad)
    with pytest.raises(InvalidName):
        validate_custom_job_id("repeat:heartbeat:1767222000000")


# -- our worker keeps the schedule --------------------------------------------


async def test_our_worker_keeps_an_every_schedule_without_drift_or_duplicates(
    redis_url: str, redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    schedulers.upsert("tick", Repeat(every_ms=200), name="tick", data={"n": 1})
    runs = Runs()
    async with running(QUEUE, runs, url=redis_url):
        await until(lambda: len(runs.ids) >= 21, timeout=30)
    assert_every_run_once_on_the_grid(redis_client, KEYS, runs.ids, 200)
    assert all(job_id.startswith("repeat:tick:") for job_id in runs.ids)
    # One run is pending, every processed one completed, and ic counts them all.
    pending = f"repeat:tick:{next_run(redis_client, 'tick')}"
    assert pending not in runs.ids
    assert int(definition(redis_client, "tick")["ic"]) == len(runs.ids) + 1
    done = queue.get_job(runs.ids[5])
    assert done is not None
    assert done.returnvalue == {"run": runs.ids[5]}
    assert done.opts["repeat"]["count"] == 6


async def test_two_workers_on_one_schedule_run_each_iteration_once(
    redis_url: str, redis_client: Redis, schedulers: JobSchedulers
) -> None:
    # 400 ms: a slot is skipped by design when a run is taken after the next
    # one was due, which a loaded machine (the whole suite beside) did at 150 ms.
    schedulers.upsert("tick", Repeat(every_ms=400), name="tick")
    runs = Runs()
    async with (
        running(QUEUE, runs, url=redis_url, name="a"),
        running(QUEUE, runs, url=redis_url, name="b"),
    ):
        await until(lambda: len(runs.ids) >= 20, timeout=40)
    assert_every_run_once_on_the_grid(redis_client, KEYS, runs.ids, 400)
    duplicated = [event for event in stream_events(redis_client) if event[0] == "duplicated"]
    assert duplicated == []


async def test_a_per_second_cron_runs_on_whole_seconds_one_after_the_other(
    redis_url: str, redis_client: Redis, schedulers: JobSchedulers
) -> None:
    schedulers.upsert("sec", Repeat(pattern="* * * * * *"), name="tick")
    runs = Runs()
    async with running(QUEUE, runs, url=redis_url):
        await until(lambda: len(runs.ids) >= 3, timeout=15)
    assert all(run_time(job_id) % 1000 == 0 for job_id in runs.ids)
    assert_every_run_once_on_the_grid(redis_client, KEYS, runs.ids, 1000)


async def test_a_limit_stops_the_schedule_after_that_many_runs(
    redis_url: str, redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    schedulers.upsert("three", Repeat(every_ms=100, limit=3), name="n")
    runs = Runs()
    async with running(QUEUE, runs, url=redis_url):
        await until(lambda: len(runs.ids) >= 3, timeout=15)
        await asyncio.sleep(0.5)
    assert len(runs.ids) == 3
    assert queue.get_counts("delayed", "wait") == {"delayed": 0, "wait": 0}


async def test_a_run_whose_scheduler_was_removed_runs_but_adds_no_next_run(
    redis_url: str, redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    job_id = schedulers.upsert("gone", Repeat(every_ms=100), name="n")
    # The run is waiting (due now); the scheduler goes before a worker takes it.
    redis_client.zrem(f"bull:{QUEUE}:repeat", "gone")
    runs = Runs()
    async with running(QUEUE, runs, url=redis_url):
        await until(lambda: runs.ids == [job_id], timeout=10)
        await asyncio.sleep(0.4)
    assert runs.ids == [job_id]
    assert queue.get_counts("delayed", "wait") == {"delayed": 0, "wait": 0}


async def test_a_run_now_job_does_not_add_a_run_of_its_own(
    redis_url: str, redis_client: Redis, schedulers: JobSchedulers, queue: Queue
) -> None:
    pending = schedulers.upsert("s", Repeat(pattern="0 0 1 1 *"), name="n")
    extra = schedulers.run_now("s")
    runs = Runs()
    async with running(QUEUE, runs, url=redis_url):
        await until(lambda: runs.ids == [extra], timeout=10)
        await asyncio.sleep(0.3)
    assert queue.get_state(pending) == "delayed"
    assert redis_client.zcard(f"bull:{QUEUE}:delayed") == 1
    assert definition(redis_client, "s")["ic"] == "1"
