"""moveToFinished checks every key it may write before its first write
(issue 26's mutation run): a stalled set, a finished set or a metrics key of
the wrong type is refused by name with nothing changed; the metrics keys
only when the worker keeps metrics, and a worker keeping a single point of
metrics records it."""

from __future__ import annotations

import pytest
from redis import Redis
from redis.exceptions import ResponseError

from queues.keys import QueueKeys
from queues.queue import Queue
from tests.keyspace import snapshot
from tests.transition_helpers import TOKEN, fetch, finish, finish_options, seed_job


def _active(client: Redis, keys: QueueKeys) -> None:
    seed_job(
        client,
        keys,
        "exp-3317",
        state="active",
        name="export-csv",
        data={"report": "monthly-revenue", "month": "2026-11"},
        lock_token=TOKEN,
    )


@pytest.mark.parametrize(
    ("broken", "metrics"),
    [
        ("stalled", 0),
        ("completed", 0),
        ("metrics_completed", 60),
        ("metrics_completed", 1),
        ("metrics_data", 60),
    ],
)
def test_a_key_of_the_wrong_type_is_refused_by_name_before_any_write(
    redis_client: Redis, keys: QueueKeys, broken: str, metrics: int
) -> None:
    _active(redis_client, keys)
    key = keys.metrics_completed + ":data" if broken == "metrics_data" else getattr(keys, broken)
    redis_client.set(key, "left by a migration script")
    before = snapshot(redis_client)
    with pytest.raises(ResponseError, match=key):
        finish(redis_client, keys, "exp-3317", options=finish_options(max_metrics_size=metrics))
    assert snapshot(redis_client) == before


def test_metrics_keys_are_not_checked_when_the_worker_keeps_no_metrics(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys)
    redis_client.set(keys.metrics_completed, "left by a migration script")
    assert finish(redis_client, keys, "exp-3317") == 0
    assert redis_client.zscore(keys.completed, "exp-3317") is not None


def test_a_worker_keeping_one_point_of_metrics_records_it(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys)
    finish(redis_client, keys, "exp-3317", options=finish_options(max_metrics_size=1))
    assert redis_client.hget(keys.metrics_completed, "count") == b"1"


def test_a_job_whose_hash_was_removed_while_it_ran_is_answered_missing(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """Someone removed the export's hash by hand while its worker ran it
    (its lock and its place in active stay): the finish answers -1, no such
    job, and writes nothing, with or without taking the next job (the
    straight-line path, taken only with the next job, hands it to the
    general one); finishing it anyway would leave a hash of a few fields
    with no name, data or timestamp, and an id in completed."""
    _active(redis_client, keys)
    redis_client.delete(keys.job("exp-3317"))
    before = snapshot(redis_client)
    for fetch_next in (True, False):
        assert finish(redis_client, keys, "exp-3317", fetch_next=fetch_next) == -1
        assert snapshot(redis_client) == before


def test_a_deduplicated_job_frees_its_id_when_it_finishes_taking_the_next_job(
    redis_client: Redis,
) -> None:
    """A job added with a deduplication id (no ttl) holds it while it waits
    and runs; its finish, taking the next job as a busy worker's does,
    frees it, so the next add with that id is a new job."""
    queue = Queue("invoices", redis_client)
    dedup = {"deduplication": {"id": "invoice-2024-0311"}}
    first = queue.add("send-invoice", {"invoice": "INV-2024-0311"}, dedup)
    assert queue.add("send-invoice", {"invoice": "INV-2024-0311"}, dedup) == first
    assert fetch(redis_client, queue.keys).job_id == first

    finish(redis_client, queue.keys, first, fetch_next=True)

    assert redis_client.exists(queue.keys.deduplication("invoice-2024-0311")) == 0
    assert queue.add("send-invoice", {"invoice": "INV-2024-0311"}, dedup) != first


@pytest.mark.parametrize("made", ["999999999999999", "9007199254740993"])
def test_an_attempts_count_past_2_to_the_53_is_counted_exactly(
    redis_client: Redis, keys: QueueKeys, made: str
) -> None:
    """A counter no worker reaches by running (a writer's garbage, or a
    count set by hand): 15 digits are exact as a Lua number, 16 may not be
    (2^53 + 1 reads as 2^53), so past 15 digits the finish leaves the
    counting to Redis (HINCRBY) on every path, taking the next job or not."""
    for fetch_next in (True, False):
        _active(redis_client, keys)
        redis_client.hset(keys.job("exp-3317"), "atm", made)
        finish(redis_client, keys, "exp-3317", fetch_next=fetch_next)
        assert redis_client.hget(keys.job("exp-3317"), "atm") == str(int(made) + 1).encode()
        redis_client.flushdb()


def test_an_attempts_count_that_is_no_integer_is_refused_on_every_path(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A job whose attempts counter another writer set to "2.5": its finish is
    refused naming the field, nothing written, whether or not it takes the
    next job (the straight-line path hands such a job to the general one)."""
    for fetch_next in (True, False):
        _active(redis_client, keys)
        redis_client.hset(keys.job("exp-3317"), "atm", "2.5")
        before = snapshot(redis_client)
        answer = finish(redis_client, keys, "exp-3317", fetch_next=fetch_next)
        assert answer == [b"broken", b"field:atm"]
        assert snapshot(redis_client) == before
        redis_client.flushdb()


def test_a_parent_with_pending_children_is_refused_also_when_taking_the_next_job(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The export's worker completes it while a child it waits for is still
    pending (a flow whose parent was started by hand): refused with -4 and
    nothing written, as without fetch-next; failing it is still allowed."""
    _active(redis_client, keys)
    redis_client.sadd(keys.dependencies("exp-3317"), keys.job("exp-3317-part-2"))
    before = snapshot(redis_client)
    assert finish(redis_client, keys, "exp-3317", fetch_next=True) == -4
    assert snapshot(redis_client) == before
    finish(
        redis_client, keys, "exp-3317", target="failed", value="part 2 never ran", fetch_next=True
    )
    assert redis_client.zscore(keys.failed, "exp-3317") is not None


@pytest.mark.parametrize("broken", ["completed", "stalled", "events"])
def test_a_key_of_the_wrong_type_is_refused_also_when_taking_the_next_job(
    redis_client: Redis, keys: QueueKeys, broken: str
) -> None:
    """The straight-line finish (taken only with fetch-next) reads the
    finished set, the stalled set and the events before its first write and
    hands a key of another type to the general path, which refuses it by
    name: nothing is half-written."""
    _active(redis_client, keys)
    key = getattr(keys, broken)
    redis_client.set(key, "left by a migration script")
    before = snapshot(redis_client)
    with pytest.raises(ResponseError, match=key):
        finish(redis_client, keys, "exp-3317", fetch_next=True)
    assert snapshot(redis_client) == before
