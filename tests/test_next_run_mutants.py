"""scheduleNextRun-11.lua (a worker that takes a job scheduler's run adds
the next one) at the edges bench/mutate.py's thirteenth pass
(docs/mutation.md) found its tests silent on: a run-now job taken, a next
run that exists already, a run due exactly now, an every of 1 ms or of 0, a
worker back after missed runs, a definition without its grid's offset, the
run's data and the taken run's pointer to the next. Real Redis; the script
called as a worker calls it, at chosen times."""

from __future__ import annotations

import json
from typing import Any

import pytest
from redis import Redis

from queues import codec, scripts
from queues.commands import schedulers as cmd
from queues.errors import broken_reason
from queues.keys import QueueKeys
from queues.schedulers import JobSchedulers, Repeat

QUEUE = "usage"
KEYS = QueueKeys(QUEUE)
SCHEDULER = "hourly-usage-export"
DEFINITION = KEYS.repeat_scheduler(SCHEDULER)
DATA = {"account": "acct_1Nv0FGQ9RKHgCVdK", "period": "hourly", "format": "parquet"}
# 2030-01-01 00:00:12.345 UTC: a start date twelve seconds and 345 ms past a
# whole minute, so an every-minute grid has an offset of 12,345 ms.
START_MS = 1_893_456_012_345
OFFSET_MS = 12_345
MINUTE_MS = 60_000


@pytest.fixture
def schedulers(redis_client: Redis) -> JobSchedulers:
    return JobSchedulers(QUEUE, redis_client)


def every_minute(schedulers: JobSchedulers, every_ms: int = MINUTE_MS) -> str:
    """The scheduler, its first run due at START_MS; answers that run's id."""
    return schedulers.upsert(
        SCHEDULER, Repeat(every_ms=every_ms, start_ms=START_MS), name="export-usage", data=DATA
    )


def run_opts(count: int = 2, every_ms: int = MINUTE_MS) -> str:
    return json.dumps({"attempts": 3, "repeat": {"every": every_ms, "count": count}})


def picked(client: Redis, job_id: str) -> str:
    """The run moved from delayed to active, as a worker's pick-up moves it."""
    client.zrem(KEYS.delayed, job_id)
    client.lpush(KEYS.active, job_id)
    return job_id


def take(
    client: Redis, taken: str, *, now_ms: int, next_run_ms: int | None = None, every_ms: int = 0
) -> Any:
    """What a worker that took ``taken`` at ``now_ms`` calls; the raw answer."""
    call = cmd.schedule_next_run(
        KEYS,
        SCHEDULER,
        taken_job_id=taken,
        next_run_ms=next_run_ms,
        run_opts_json=run_opts(every_ms=every_ms or MINUTE_MS),
        now_ms=now_ms,
    )
    return scripts.run(client, call)


def definition(client: Redis) -> dict[str, str]:
    return {codec.text(k) or "": codec.text(v) or "" for k, v in client.hgetall(DEFINITION).items()}


def everything(client: Redis) -> dict[bytes, object]:
    """Every key's contents. A hash by its fields: DUMP of a hash too big for
    a listpack walks its dict, whose order a rehash step (any read) moves."""
    return {
        key: client.hgetall(key) if client.type(key) == b"hash" else client.dump(key)
        for key in client.keys("*")
    }


def run_id(run_ms: int) -> str:
    return f"repeat:{SCHEDULER}:{run_ms}"


def test_a_run_now_job_taken_adds_no_second_pending_run(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    first = every_minute(schedulers)
    extra = schedulers.run_now(SCHEDULER)
    before = everything(redis_client)
    assert codec.text(take(redis_client, extra, now_ms=START_MS - 5_000)) == ""
    assert everything(redis_client) == before
    assert redis_client.zrange(KEYS.delayed, 0, -1) == [first.encode()]


def test_a_next_run_that_exists_already_is_announced_duplicated_and_not_added_again(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    # A backup of the repeat zset restored after the next run was added: the
    # scheduler waits for the first run again, whose next exists.
    first = picked(redis_client, every_minute(schedulers))
    second = run_id(START_MS + MINUTE_MS)
    assert codec.text(take(redis_client, first, now_ms=START_MS + 40)) == second
    redis_client.zadd(KEYS.repeat, {SCHEDULER: START_MS})
    ic, data = definition(redis_client)["ic"], redis_client.hget(KEYS.job(second), "data")

    assert codec.text(take(redis_client, first, now_ms=START_MS + 90)) == ""
    events = redis_client.xrevrange(KEYS.events, count=1)
    assert events[0][1] == {b"event": b"duplicated", b"jobId": second.encode()}
    assert definition(redis_client)["ic"] == ic
    assert redis_client.zscore(KEYS.repeat, SCHEDULER) == START_MS
    assert redis_client.zrange(KEYS.delayed, 0, -1) == [second.encode()]
    assert redis_client.hget(KEYS.job(second), "data") == data


def test_a_run_due_exactly_now_waits_ready_with_no_delay(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    first = picked(redis_client, every_minute(schedulers))
    due = START_MS + MINUTE_MS
    assert codec.text(take(redis_client, first, now_ms=due)) == run_id(due)
    assert redis_client.lrange(KEYS.wait, 0, -1) == [run_id(due).encode()]
    assert redis_client.zcard(KEYS.delayed) == 0
    assert redis_client.hget(KEYS.job(run_id(due)), "delay") == b"0"


def test_an_every_of_one_millisecond_is_an_every_schedule(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    first = every_minute(schedulers, every_ms=1)
    answer = take(redis_client, first, now_ms=START_MS, every_ms=1)
    assert codec.text(answer) == run_id(START_MS + 1)


def test_an_every_of_zero_left_in_the_hash_is_refused_and_changes_nothing(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    # A hand HSET (or another writer) left every at 0: no grid, no next run.
    first = every_minute(schedulers)
    redis_client.hset(DEFINITION, "every", "0")
    before = everything(redis_client)
    assert broken_reason(take(redis_client, first, now_ms=START_MS + 40)) == "field:every"
    assert everything(redis_client) == before


def test_a_worker_back_after_missed_runs_goes_on_from_the_grid_s_next_slot_and_offset(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    # The worker fleet was down for ten minutes and seven seconds: the next
    # run is the grid's next slot, still twelve seconds 345 past the minute.
    first = every_minute(schedulers)
    assert definition(redis_client)["offset"] == str(OFFSET_MS)
    answer = take(redis_client, first, now_ms=START_MS + 10 * MINUTE_MS + 7_000)
    assert codec.text(answer) == run_id(START_MS + 11 * MINUTE_MS)


def test_a_definition_an_older_writer_left_without_offset_gets_its_grid_s_offset(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    first = every_minute(schedulers)
    redis_client.hdel(DEFINITION, "offset")
    second = run_id(START_MS + MINUTE_MS)
    assert codec.text(take(redis_client, first, now_ms=START_MS + 40)) == second
    assert definition(redis_client)["offset"] == str(OFFSET_MS)
    opts = json.loads(redis_client.hget(KEYS.job(second), "opts") or b"{}")
    assert opts["repeat"] == {"every": MINUTE_MS, "count": 2, "offset": OFFSET_MS}


def test_the_next_run_carries_the_definition_s_data(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    first = every_minute(schedulers)
    second = codec.text(take(redis_client, first, now_ms=START_MS + 40)) or ""
    assert json.loads(redis_client.hget(KEYS.job(second), "data") or b"null") == DATA
    assert redis_client.hget(KEYS.job(second), "name") == b"export-usage"


def test_the_taken_run_names_the_next_and_a_taken_run_already_gone_is_not_recreated(
    redis_client: Redis, schedulers: JobSchedulers
) -> None:
    first = every_minute(schedulers)
    second = codec.text(take(redis_client, first, now_ms=START_MS + 40)) or ""
    assert redis_client.hget(KEYS.job(first), "nrjid") == second.encode()

    # The second run removed (its hash deleted) before its worker's call.
    redis_client.delete(KEYS.job(second))
    third = run_id(START_MS + 2 * MINUTE_MS)
    assert codec.text(take(redis_client, second, now_ms=START_MS + MINUTE_MS + 40)) == third
    assert redis_client.exists(KEYS.job(second)) == 0
