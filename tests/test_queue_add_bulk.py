"""add_bulk (the addJobs script) leaves exactly what the same adds one by one
(addJob) leave: ids, job hashes, lists, sets, marker and events, in order."""

from __future__ import annotations

from typing import Any

import pytest
from redis import Redis

from queues.errors import ParentJobNotExist
from queues.job_options import prepare_job
from queues.queue import AddSpec, Queue

# One of every path through an add, several of them twice in a row.
MIXED: list[AddSpec] = [
    ("plain", {"n": 1}, None),
    ("lifo", None, {"lifo": True}),
    ("custom", "x", {"jobId": "own"}),
    ("custom-again", "y", {"jobId": "own"}),
    ("prio", 3, {"priority": 5}),
    ("prio", 4, {"priority": 5}),
    ("later", None, {"delay": 60_000, "timestamp": 1_000}),
    ("later", None, {"delay": 60_000, "timestamp": 1_000}),
    ("sooner", None, {"delay": 5_000, "timestamp": 1_000}),
    ("dedup", None, {"deduplication": {"id": "d1", "ttl": 60_000}}),
    ("dedup", None, {"deduplication": {"id": "d1"}}),
    ("child", None, {"parent": {"id": "p", "queue": "bull:flows"}}),
    ("plain", [1, "é"], {"attempts": 2, "timestamp": 7}),
]


def snapshot(client: Redis, queue: Queue) -> dict[str, Any]:
    """Every key of the queue with its content; volatile parts left out."""
    state: dict[str, Any] = {}
    for key in sorted(client.keys(queue.keys.base + "*")):
        name = key.decode().removeprefix(queue.keys.base)
        kind = client.type(key)
        if kind == b"hash":
            raw = client.hgetall(key)
            if b"timestamp" in raw and raw[b"timestamp"] not in (b"1000", b"7"):
                raw[b"timestamp"] = b"now"  # read from the clock by add()
            state[name] = raw
        elif kind == b"list":
            state[name] = client.lrange(key, 0, -1)
        elif kind == b"zset":
            state[name] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"stream":
            state[name] = [fields for _, fields in client.xrange(key)]
        else:
            state[name] = (client.get(key), client.pttl(key) > 0)
    return state


def add_each(queue: Queue, specs: list[AddSpec]) -> list[str]:
    return [queue.add(name, data, opts) for name, data, opts in specs]


@pytest.mark.parametrize("paused", [False, True], ids=["running", "paused"])
@pytest.mark.parametrize("batch", [1000, 3])
def test_bulk_equals_one_by_one(redis_client: Redis, paused: bool, batch: int) -> None:
    redis_client.hset("bull:flows:p", "name", "parent")
    one, bulk = Queue("one", redis_client), Queue("bulk", redis_client)
    if paused:
        one.pause()
        bulk.pause()

    expected_ids = add_each(one, MIXED)
    assert bulk.add_bulk(MIXED, batch=batch) == expected_ids
    assert expected_ids[3] == "own"  # the duplicate answers with the existing id
    assert expected_ids[10] == expected_ids[9]  # the held deduplication id
    assert snapshot(redis_client, bulk) == snapshot(redis_client, one)
    assert len(redis_client.smembers("bull:flows:p:dependencies")) == 2


def test_bulk_marker_for_delayed_only_and_under_global_concurrency(redis_client: Redis) -> None:
    queue = Queue("q", redis_client)
    queue.add_bulk([("d", None, {"delay": 9_000, "timestamp": 1_000})] * 2)
    assert redis_client.zrange(queue.keys.marker, 0, -1, withscores=True) == [(b"1", 10_000.0)]

    redis_client.hset(queue.keys.meta, "concurrency", 1)
    redis_client.lpush(queue.keys.active, "busy")
    redis_client.delete(queue.keys.marker)
    queue.add_bulk([("r", None, None)] * 3)
    assert redis_client.llen(queue.keys.wait) == 3
    assert redis_client.zscore(queue.keys.marker, "0") is None  # at the limit: nobody woken


def test_bulk_with_a_missing_parent_adds_the_rest_of_its_batch_then_raises(
    redis_client: Redis,
) -> None:
    queue = Queue("q", redis_client)
    orphan: AddSpec = ("child", None, {"parent": {"id": "gone", "queue": "bull:flows"}})
    with pytest.raises(ParentJobNotExist):
        queue.add_bulk([("a", None, None), orphan, ("b", None, None), ("c", None, None)], batch=3)
    # The failing batch went in except the orphan (which took no id); the next
    # batch was never sent.
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"2", b"1"]


def test_calls_are_bounded_by_job_count_and_size(
    redis_client: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = Queue("q", redis_client)
    small = [prepare_job("s", None, None, now_ms=1)] * 250
    assert [len(call.args) // 12 for call in queue._add_calls(small)] == [100, 100, 50]

    monkeypatch.setattr("queues.queue._BYTES_PER_CALL", 100)
    big = [prepare_job("b", "x" * 40, None, now_ms=1)] * 5  # 42 + 2 characters each
    assert [len(call.args) // 12 for call in queue._add_calls(big)] == [3, 2]
    assert queue.add_bulk([("b", "x" * 40, None)] * 5) == ["1", "2", "3", "4", "5"]
