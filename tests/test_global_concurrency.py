"""Setting and clearing a queue's global concurrency (setGlobalConcurrency-5,
Queue.set_global_concurrency) and reading the limits back (queues.read.limits);
bullmq 2.20.1's worker follows what we set."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from bullmq import Queue as BullQueue
from bullmq import Worker as BullWorker
from redis import Redis
from redis.exceptions import ResponseError

from queues.commands.admin import MAX_GLOBAL_CONCURRENCY, set_global_concurrency
from queues.errors import CorruptKey
from queues.queue import Queue
from queues.read.limits import read_limits
from queues.read.refs import QueueRef
from queues.scripts import run
from tests.worker_helpers import until

REF = QueueRef("bull", "limited")


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue(REF.name, redis_client)


def test_set_then_clear_answers_the_value_before_and_writes_bullmqs_field(
    queue: Queue, redis_client: Redis
) -> None:
    assert queue.set_global_concurrency(3) is None
    assert redis_client.hget(queue.keys.meta, "concurrency") == b"3"
    assert queue.set_global_concurrency(5) == "3"
    assert queue.set_global_concurrency(None) == "5"
    assert not redis_client.hexists(queue.keys.meta, "concurrency")
    assert read_limits(redis_client, REF).concurrency is None


def test_setting_over_garbage_replaces_it_and_says_what_was_there(
    queue: Queue, redis_client: Redis
) -> None:
    redis_client.hset(queue.keys.meta, "concurrency", "lots")
    assert queue.set_global_concurrency(2) == "lots"
    assert read_limits(redis_client, REF).concurrency == 2


@pytest.mark.parametrize("bad", [0, -1, MAX_GLOBAL_CONCURRENCY + 1, True])
def test_the_builder_refuses_a_limit_that_is_no_limit(bad: Any) -> None:
    with pytest.raises(ValueError, match="global concurrency"):
        set_global_concurrency(REF.keys, bad)


@pytest.mark.parametrize("argument", ["0", "-2", "1.5", "abc", " 3", "1234567890"])
def test_the_script_itself_refuses_a_bad_argument_and_changes_nothing(
    redis_client: Redis, queue: Queue, argument: str
) -> None:
    queue.set_global_concurrency(4)
    call = set_global_concurrency(REF.keys, 1)
    bad_call = type(call)(call.script, call.keys, (argument,))
    with pytest.raises(ResponseError, match="whole number"):
        run(redis_client, bad_call)
    assert redis_client.hget(queue.keys.meta, "concurrency") == b"4"


def test_a_meta_key_of_the_wrong_type_is_refused_and_left_alone(
    redis_client: Redis, queue: Queue
) -> None:
    redis_client.set(queue.keys.meta, "not a hash")
    with pytest.raises(CorruptKey):
        queue.set_global_concurrency(2)
    assert redis_client.get(queue.keys.meta) == b"not a hash"


def test_raising_the_limit_wakes_blocked_workers_when_jobs_are_ready(
    redis_client: Redis, queue: Queue
) -> None:
    queue.set_global_concurrency(1)
    redis_client.rpush(queue.keys.active, "running")
    queue.add("waiting", {})
    redis_client.delete(queue.keys.marker)  # the workers sleep: the queue is maxed
    queue.set_global_concurrency(1)
    assert redis_client.zcard(queue.keys.marker) == 0  # still maxed: nobody to wake
    queue.set_global_concurrency(2)
    assert redis_client.zscore(queue.keys.marker, "0") == 0


def test_a_paused_queue_wakes_nobody(redis_client: Redis, queue: Queue) -> None:
    queue.add("waiting", {})
    queue.pause()
    queue.set_global_concurrency(None)
    assert redis_client.zcard(queue.keys.marker) == 0


async def test_bullmq_workers_run_no_more_jobs_at_once_than_the_limit_we_set(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    """bullmq 2.20.1 has no getGlobalConcurrency: its worker's moveToActive
    honouring the field is the check (at concurrency 4, one job at a time)."""
    now = peak = 0
    done: list[str] = []

    async def process(job: Any, token: str) -> None:
        nonlocal now, peak
        now += 1
        peak = max(peak, now)
        await asyncio.sleep(0.1)
        now -= 1
        done.append(job.id)

    queue.set_global_concurrency(1)
    queue.add_bulk([("g", {"n": n}, None) for n in range(5)])
    worker = BullWorker(
        REF.name, process, {"connection": redis_url, "concurrency": 4, "drainDelay": 1}
    )
    try:
        await until(lambda: len(done) == 5, timeout=20)
        assert peak == 1
        queue.set_global_concurrency(None)
        queue.add_bulk([("g", {"n": n}, None) for n in range(8)])
        await until(lambda: len(done) == 13, timeout=20)
    finally:
        await worker.close()
    assert peak > 1  # cleared: the worker's own concurrency again


def test_limits_read_the_rate_limit_and_the_window_as_workers_apply_them(
    redis_client: Redis, queue: Queue
) -> None:
    keys = queue.keys
    redis_client.hset(keys.meta, mapping={"max": "2", "duration": "60000"})
    redis_client.set(keys.limiter, 1, px=5_000)
    open_window = read_limits(redis_client, REF)
    assert (open_window.rate_max, open_window.rate_duration_ms) == (2, 60000)
    assert open_window.window_count == 1
    assert 0 < open_window.window_left_ms <= 5_000
    assert open_window.rate_limited_ms == 0
    assert open_window.rate_limited_until_ms is None
    redis_client.set(keys.limiter, 2, px=5_000)
    limited = read_limits(redis_client, REF)
    assert 0 < limited.rate_limited_ms <= 5_000
    assert limited.rate_limited_until_ms == limited.read_at_ms + limited.rate_limited_ms


@pytest.mark.parametrize(
    ("fields", "concurrency", "rate"),
    [
        ({"concurrency": "lots"}, None, None),
        ({"concurrency": "inf"}, None, None),
        ({"concurrency": " 3 "}, 3, None),
        ({"concurrency": "1e400"}, None, None),
        ({"concurrency": "2.5"}, 2.5, None),
        ({"concurrency": "0"}, 0, None),
        ({"max": "ten", "duration": "1000"}, None, None),
        ({"max": "10", "duration": "0"}, None, None),
        ({"max": "10"}, None, None),
        ({"max": "10", "duration": "1000.7"}, None, (10, 1000)),
        ({"concurrency": "\xff\xfe".encode("latin-1")}, None, None),
    ],
)
def test_garbage_in_meta_reads_as_what_workers_make_of_it(
    redis_client: Redis, queue: Queue, fields: dict[str, Any], concurrency: Any, rate: Any
) -> None:
    redis_client.hset(queue.keys.meta, mapping=fields)
    limits = read_limits(redis_client, REF)
    assert limits.concurrency == concurrency
    assert (None if limits.rate_max is None else (limits.rate_max, limits.rate_duration_ms)) == rate
    if "concurrency" in fields:
        assert limits.concurrency_raw is not None
    limits.as_json()  # always serialisable


def test_keys_of_the_wrong_type_read_as_no_limit_and_say_so(
    redis_client: Redis, queue: Queue
) -> None:
    redis_client.set(queue.keys.meta, "x")
    redis_client.sadd(queue.keys.limiter, "y")
    redis_client.set(queue.keys.active, "z")
    limits = read_limits(redis_client, REF)
    assert limits.concurrency is None
    assert limits.window_count is None
    assert limits.problem is not None
    assert queue.keys.meta in limits.problem
    assert queue.keys.limiter in limits.problem


async def test_the_window_we_read_is_the_one_bullmq_reports(
    redis_url: str, redis_client: Redis, queue: Queue
) -> None:
    redis_client.hset(queue.keys.meta, mapping={"max": "1", "duration": "60000"})
    redis_client.set(queue.keys.limiter, 1, px=30_000)
    peer = BullQueue(REF.name, {"connection": redis_url})
    try:
        theirs = await peer.getRateLimitTtl()
    finally:
        await peer.close()
    ours = read_limits(redis_client, REF)
    assert ours.rate_limited_ms > 0
    assert abs(ours.rate_limited_ms - theirs) < 1_000
