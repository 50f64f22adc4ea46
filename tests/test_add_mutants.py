"""Which free id an add lands on when the id counter is behind its jobs
(includes/addJobSteps.lua): the mutation run of the twelfth pass found the
counter's steps unpinned, any stride passing the existing tests as long as
the id it reached was free."""

from __future__ import annotations

import time
from itertools import pairwise

import pytest
from redis import Redis

from queues.queue import Queue
from tests.queue_helpers import stream_events as events

# The stride the passed-over ids grow to, at most (addJobSteps.lua).
STRIDE_CAP = 2**30


@pytest.fixture
def queue(redis_client: Redis) -> Queue:
    return Queue("invoices", redis_client)


def visited_ids(steps: int) -> list[int]:
    """The ids an add looks at, in order, when every one it looks at is
    taken: one at a time for the first eight, then strides doubling up to
    STRIDE_CAP."""
    ids, stride, taken = [1], 1, 0
    while len(ids) < steps:
        taken += 1
        if taken > 8 and stride < STRIDE_CAP:
            stride *= 2
        ids.append(ids[-1] + stride)
    return ids


def keep_old_jobs(redis_client: Redis, queue: Queue, ids: list[int]) -> None:
    for job_id in ids:
        redis_client.hset(
            queue.keys.job(str(job_id)),
            mapping={"name": "invoice.render", "data": '{"invoice":"INV-2024-000871"}'},
        )
    redis_client.delete(queue.keys.id)


def test_a_counter_twenty_jobs_behind_steps_one_by_one_eight_times_then_doubles(
    redis_client: Redis, queue: Queue
) -> None:
    """The id counter lost (a backup restored under jobs 1..20): the add
    looks at 1..9 one by one, then 11, 15 and 23 (strides 2, 4, 8)."""
    keep_old_jobs(redis_client, queue, list(range(1, 21)))

    assert visited_ids(12)[-1] == 23
    assert queue.add("invoice.render", {"invoice": "INV-2024-000872"}) == "23"
    assert redis_client.get(queue.keys.id) == b"23"
    assert redis_client.hget(queue.keys.job("20"), "name") == b"invoice.render"
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"23"]


def test_the_stride_stops_doubling_at_its_cap(redis_client: Redis, queue: Queue) -> None:
    """Every id the add looks at taken up to the third step at the cap: the
    fourth is the free id, 2^30 past the last taken one, not 2^31 (a stride
    that went on doubling would pass ids by and outgrow what a Lua number
    counts exactly)."""
    first_at_cap = next(
        n for n, (a, b) in enumerate(pairwise(visited_ids(60))) if b - a == STRIDE_CAP
    )
    ids = visited_ids(first_at_cap + 5)
    keep_old_jobs(redis_client, queue, ids[:-1])

    job_id = queue.add("invoice.render", {"invoice": "INV-2024-000873"})

    assert int(job_id) == ids[-1] == ids[-2] + STRIDE_CAP
    assert redis_client.hget(queue.keys.job(job_id), "data") == b'{"invoice":"INV-2024-000873"}'


def test_a_deduplication_key_of_another_type_is_ignored(redis_client: Redis, queue: Queue) -> None:
    """Something else's hash where the deduplication key would be (another
    tool sharing the prefix): the add neither refuses nor touches it, and
    the job is added as if no deduplication were asked."""
    foreign = queue.keys.deduplication("customer-4411")
    redis_client.hset(foreign, mapping={"owner": "billing-sync", "seen": "2024-11-02T08:14:09Z"})
    opts = {"deduplication": {"id": "customer-4411", "ttl": 60_000}}

    job_id = queue.add("invoice.render", {"invoice": "INV-2024-000874"}, opts)

    assert job_id == "1"
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"1"]
    assert redis_client.hgetall(foreign) == {
        b"owner": b"billing-sync",
        b"seen": b"2024-11-02T08:14:09Z",
    }


def test_a_deduplication_of_one_millisecond_lapses(redis_client: Redis, queue: Queue) -> None:
    """The shortest ttl is a ttl too: a second add once that millisecond has
    passed is a new job, not deduplicated for ever."""
    opts = {"deduplication": {"id": "webhook-evt_1QfT2v", "ttl": 1}}
    first = queue.add("webhook.deliver", {"event": "evt_1QfT2v"}, opts)
    time.sleep(0.05)

    second = queue.add("webhook.deliver", {"event": "evt_1QfT2v"}, opts)

    assert (first, second) == ("1", "2")
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [b"2", b"1"]


def test_a_delay_of_one_millisecond_is_a_delay(redis_client: Redis, queue: Queue) -> None:
    """The shortest delay still goes through delayed (and its event), not
    straight to wait: a worker promotes it when it is due."""
    job_id = queue.add("webhook.retry", {"event": "evt_1QfT2v"}, {"delay": 1})

    assert redis_client.zscore(queue.keys.delayed, job_id) is not None
    assert redis_client.llen(queue.keys.wait) == 0
    assert [event["event"] for event in events(redis_client, queue)] == ["added", "delayed"]
