"""Queue.add / add_bulk and the read side (get_job, get_state, get_counts,
get_jobs) against a real Redis: the exact keyspace BullMQ 5.x expects."""

from __future__ import annotations

import json

import pytest
from redis import Redis

from queues.errors import ParentJobNotExist
from queues.job_options import InvalidJobOptions
from queues.queue import Queue
from queues.read.lists import list_windows
from tests.queue_helpers import stream_events as events

PRIORITY_SHIFT = 2**32


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue("mail", redis_client)


def test_standard_add_writes_hash_wait_marker_and_events(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("send", {"to": "a@b.c"}, {"attempts": 3, "custom": [1, 2]})

    assert job_id == "1"
    raw = redis_client.hgetall(queue.keys.job("1"))
    assert raw[b"name"] == b"send"
    assert json.loads(raw[b"data"]) == {"to": "a@b.c"}
    assert json.loads(raw[b"opts"]) == {"attempts": 3, "custom": [1, 2]}
    assert raw[b"delay"] == b"0"
    assert raw[b"priority"] == b"0"
    assert abs(int(raw[b"timestamp"]) - redis_client.time()[0] * 1000) < 5000
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"1"]
    assert redis_client.zrange(queue.keys.marker, 0, -1, withscores=True) == [(b"0", 0.0)]
    assert events(redis_client, queue) == [
        {"event": "added", "jobId": "1", "name": "send"},
        {"event": "waiting", "jobId": "1"},
    ]


def test_fifo_by_default_and_lifo_goes_to_the_tail_workers_pop(
    redis_client: Redis, queue: Queue
) -> None:
    queue.add("a")
    queue.add("b")
    queue.add("c", opts={"lifo": True})
    # Workers RPOPLPUSH from the tail: c first, then a, then b.
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"2", b"1", b"3"]


def test_custom_id_counts_and_duplicate_leaves_existing_job_alone(
    redis_client: Redis, queue: Queue
) -> None:
    assert queue.add("first", {"v": 1}, {"jobId": "order-7"}) == "order-7"
    assert queue.add("second", {"v": 2}, {"jobId": "order-7", "delay": 500}) == "order-7"

    assert redis_client.get(queue.keys.id) == b"2"
    job = queue.get_job("order-7")
    assert job is not None
    assert (job.name, job.data) == ("first", {"v": 1})
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"order-7"]
    assert redis_client.zcard(queue.keys.delayed) == 0
    assert events(redis_client, queue)[-1] == {"event": "duplicated", "jobId": "order-7"}
    assert queue.add("third") == "3"


def test_a_counter_behind_its_jobs_steps_past_them_and_overwrites_none(
    redis_client: Redis, queue: Queue
) -> None:
    """The id counter lost (a hand DEL, a restored backup, another writer)
    while jobs 1, 2 and 4 exist: add and add_bulk take the free ids 3, 5, 6
    and leave every existing job as it was."""
    for job_id in ("1", "2", "4"):
        redis_client.hset(queue.keys.job(job_id), mapping={"name": "old", "timestamp": 1})
        redis_client.zadd(queue.keys.failed, {job_id: 1})
    redis_client.delete(queue.keys.id)

    assert queue.add("new") == "3"
    assert queue.add_bulk([("new", None, None), ("new", None, None)]) == ["5", "6"]

    for job_id in ("1", "2", "4"):
        assert redis_client.hgetall(queue.keys.job(job_id)) == {b"name": b"old", b"timestamp": b"1"}
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"6", b"5", b"3"]
    assert redis_client.get(queue.keys.id) == b"6"


def test_a_counter_lost_under_many_jobs_is_past_them_in_a_few_dozen_steps(
    redis_client: Redis, queue: Queue
) -> None:
    redis_client.eval(
        "for n = 1, 200000 do redis.call('HSET', ARGV[1] .. n, 'name', 'old') end",
        0,
        queue.keys.base,
    )
    redis_client.delete(queue.keys.id)
    redis_client.config_resetstat()

    job_id = queue.add("new")

    assert int(job_id) > 200_000
    assert redis_client.hgetall(queue.keys.job(job_id))[b"name"] == b"new"
    assert redis_client.info("commandstats")["cmdstat_exists"]["calls"] < 40


@pytest.mark.parametrize("bad", ["12", "a:b", "tab\tid"])
def test_integer_or_colon_custom_ids_are_refused(queue: Queue, bad: str) -> None:
    with pytest.raises(InvalidJobOptions):
        queue.add("x", opts={"jobId": bad})


def test_empty_custom_id_means_generate(queue: Queue) -> None:
    assert queue.add("x", opts={"jobId": ""}) == "1"


def test_delayed_job_scores_due_time_and_arms_marker(redis_client: Redis, queue: Queue) -> None:
    ts = 1_700_000_000_000
    first = queue.add("later", opts={"delay": 5000, "timestamp": ts})
    second = queue.add("later", opts={"delay": 5000, "timestamp": ts})

    due = ts + 5000
    assert redis_client.zrange(queue.keys.delayed, 0, -1, withscores=True) == [
        (first.encode(), float(due * 4096)),
        (second.encode(), float(due * 4096 + 1)),
    ]
    assert redis_client.hget(queue.keys.job(first), "delay") == b"5000"
    assert redis_client.zscore(queue.keys.marker, "1") == due
    assert redis_client.llen(queue.keys.wait) == 0
    assert events(redis_client, queue)[:2] == [
        {"event": "added", "jobId": first, "name": "later"},
        {"event": "delayed", "jobId": first, "delay": str(due)},
    ]


def test_prioritized_job_score_and_counter(redis_client: Redis, queue: Queue) -> None:
    low = queue.add("p", opts={"priority": 10})
    high = queue.add("p", opts={"priority": 1})
    assert redis_client.zrange(queue.keys.prioritized, 0, -1, withscores=True) == [
        (high.encode(), float(1 * PRIORITY_SHIFT + 2)),
        (low.encode(), float(10 * PRIORITY_SHIFT + 1)),
    ]
    assert redis_client.hget(queue.keys.job(low), "priority") == b"10"
    assert redis_client.zscore(queue.keys.marker, "0") == 0
    with pytest.raises(InvalidJobOptions):
        queue.add("p", opts={"priority": 2**21 + 1})


def test_paused_queue_receives_jobs_in_paused_without_waking_workers(
    redis_client: Redis, queue: Queue
) -> None:
    redis_client.hset(queue.keys.meta, "paused", "1")
    queue.add("x")
    assert redis_client.lrange(queue.keys.paused, 0, -1) == [b"1"]
    assert redis_client.llen(queue.keys.wait) == 0
    assert redis_client.exists(queue.keys.marker) == 0
    assert queue.is_paused()


def test_deduplication_keeps_first_job_until_key_is_gone(redis_client: Redis, queue: Queue) -> None:
    opts = {"deduplication": {"id": "user-5", "ttl": 60_000}}
    kept = queue.add("sync", {"n": 1}, opts)
    assert queue.add("sync", {"n": 2}, opts) == kept

    dedup_key = queue.keys.deduplication("user-5")
    assert redis_client.get(dedup_key) == kept.encode()
    assert 0 < redis_client.pttl(dedup_key) <= 60_000
    assert redis_client.hget(queue.keys.job(kept), "deid") == b"user-5"
    assert json.loads(redis_client.hget(queue.keys.job(kept), "opts") or b"") == {
        "de": {"id": "user-5", "ttl": 60_000}
    }
    assert redis_client.llen(queue.keys.wait) == 1
    assert events(redis_client, queue)[-1] == {
        "event": "deduplicated",
        "jobId": kept,
        "deduplicationId": "user-5",
        "deduplicatedJobId": "2",
    }
    redis_client.delete(dedup_key)
    assert queue.add("sync", {"n": 3}, opts) == "3"


def test_opts_use_bullmq_short_names_and_normal_backoff(redis_client: Redis, queue: Queue) -> None:
    job_id = queue.add("x", opts={"backoff": 1000, "keepLogs": 5, "removeOnFail": {"age": 60}})
    assert json.loads(redis_client.hget(queue.keys.job(job_id), "opts") or b"") == {
        "backoff": {"type": "fixed", "delay": 1000},
        "kl": 5,
        "removeOnFail": {"age": 60},
    }


@pytest.mark.parametrize(
    "opts",
    [{"delay": -1}, {"delay": 1.5}, {"priority": "high"}, {"deduplication": {"ttl": 5}}],
)
def test_invalid_options_store_nothing(redis_client: Redis, queue: Queue, opts: dict) -> None:
    with pytest.raises(InvalidJobOptions):
        queue.add("x", opts=opts)
    assert redis_client.dbsize() == 0


def test_child_job_records_parent_and_is_a_pending_dependency(
    redis_client: Redis, queue: Queue
) -> None:
    with pytest.raises(ParentJobNotExist):
        queue.add("child", opts={"parent": {"id": "p1", "queue": "bull:flows"}})
    redis_client.hset("bull:flows:p1", "name", "parent")

    child = queue.add(
        "child", opts={"parent": {"id": "p1", "queue": "bull:flows"}, "failParentOnFailure": True}
    )
    raw = redis_client.hgetall(queue.keys.job(child))
    assert raw[b"parentKey"] == b"bull:flows:p1"
    assert json.loads(raw[b"parent"]) == {"id": "p1", "queueKey": "bull:flows", "fpof": True}
    assert redis_client.smembers("bull:flows:p1:dependencies") == {queue.keys.job(child).encode()}


def test_add_bulk_one_pipeline_survives_script_flush(redis_client: Redis, queue: Queue) -> None:
    redis_client.script_flush()
    ids = queue.add_bulk(
        [("a", {"i": i}, None) for i in range(5)] + [("b", None, {"delay": 60_000})], batch=4
    )
    assert ids == ["1", "2", "3", "4", "5", "6"]
    assert queue.get_counts("wait", "delayed") == {"wait": 5, "delayed": 1}
    assert queue.add_bulk([]) == []


def test_get_counts_one_entry_per_state_and_wait_includes_paused(
    redis_client: Redis, queue: Queue
) -> None:
    queue.add("a")
    queue.add("b", opts={"priority": 3})
    queue.add("c", opts={"delay": 60_000})
    redis_client.rpush(queue.keys.paused, "9")
    redis_client.zadd(queue.keys.failed, {"8": 1})
    counts = queue.get_counts()
    assert counts == {
        "wait": 2,
        "paused": 1,
        "active": 0,
        "prioritized": 1,
        "delayed": 1,
        "completed": 0,
        "failed": 1,
        "waiting-children": 0,
    }
    assert queue.get_counts("failed") == {"failed": 1}


def test_get_jobs_newest_first_with_windows(redis_client: Redis, queue: Queue) -> None:
    ids = [queue.add("n", {"i": i}) for i in range(5)]
    assert [j.id for j in queue.get_jobs("wait")] == ids[::-1]
    assert [j.id for j in queue.get_jobs("wait", 1, 2)] == [ids[3], ids[2]]
    for i, job_id in enumerate(ids):
        redis_client.zadd(queue.keys.failed, {job_id: 1000 + i})
    assert [j.id for j in queue.get_jobs("failed", 0, 1)] == [ids[4], ids[3]]
    job = queue.get_jobs("wait", 0, 0)[0]
    assert (job.name, job.data) == ("n", {"i": 4})


def test_get_jobs_wait_spans_wait_then_paused_and_skips_gone_or_marker_ids(
    redis_client: Redis, queue: Queue
) -> None:
    ids = [queue.add("n") for _ in range(4)]
    # Two ready jobs moved to paused, plus a legacy marker and a vanished id.
    redis_client.delete(queue.keys.wait)
    redis_client.rpush(queue.keys.wait, ids[3], "0:legacy")
    redis_client.rpush(queue.keys.paused, ids[2], "ghost", ids[1])
    assert [j.id for j in queue.get_jobs("wait")] == [ids[3], ids[2], ids[1]]
    assert [j.id for j in queue.get_jobs("wait", 2, 4)] == [ids[2], ids[1]]


def test_get_state_and_get_job(redis_client: Redis, queue: Queue) -> None:
    ready = queue.add("a")
    later = queue.add("b", opts={"delay": 10_000})
    assert queue.get_state(ready) == "wait"
    assert queue.get_state(later) == "delayed"
    assert queue.get_state("nope") is None
    assert queue.get_job("nope") is None
    redis_client.hset(queue.keys.job("orphan"), "name", "x")
    assert queue.get_state("orphan") == "unknown"


@pytest.mark.parametrize(
    ("lengths", "start", "stop", "expected"),
    [
        ((3, 2), 0, -1, [(0, 2), (0, 1)]),
        ((3, 2), 2, 3, [(2, 2), (0, 0)]),
        ((3, 2), 3, 10, [None, (0, 1)]),
        ((0, 2), -1, -1, [None, (1, 1)]),
        ((3, 0), 5, 9, [None, None]),
    ],
)
def test_list_windows(
    lengths: tuple[int, int], start: int, stop: int, expected: list[tuple[int, int] | None]
) -> None:
    assert list_windows(lengths, start, stop) == expected
