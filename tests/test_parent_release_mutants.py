"""includes/parentRelease.lua at the edges bench/mutate.py's seventeenth pass
(docs/mutation.md) found its tests silent on: the ways writers other than
BullMQ's Node client name a child's parent, a parent whose own fields are
garbage, a parent released into delayed (its event and its workers' marker),
and a parent already failed. Real Redis; the flows are written as each writer
leaves them, the children finished by a worker's moveToFinished."""

from __future__ import annotations

import json
from typing import Any

import pytest
from redis import Redis

from queues.keys import QueueKeys
from tests.transition_helpers import NOW, TOKEN, events, finish, lrange, seed_job, zmembers

ORDERS, ITEMS = QueueKeys("orders"), QueueKeys("items")
PARENT = "ord_8f3k2Lq9"
CHILD = "pick_3Jx9"
BULLMQ_PARENT = {"id": PARENT, "queueKey": "bull:orders"}


def _flow(client: Redis, child: dict[str, str], parent_id: str = PARENT, **parent: str) -> None:
    """An order waiting for one pick job: the parent in waiting-children with
    the child pending, the child running under TOKEN, ``child`` its fields."""
    client.hset(
        ORDERS.job(parent_id),
        mapping={
            "name": "ship-order",
            "data": json.dumps({"order": parent_id, "carrier": "dhl-express"}),
            "opts": "{}",
            "timestamp": str(NOW - 60_000),
            "delay": "0",
            "priority": "0",
            **parent,
        },
    )
    client.zadd(ORDERS.waiting_children, {parent_id: NOW - 60_000})
    client.sadd(ORDERS.dependencies(parent_id), ITEMS.job(CHILD))
    data = {"sku": "SKU-48213", "bin": "A-12-03", "qty": 2}
    seed_job(client, ITEMS, CHILD, state="active", lock_token=TOKEN, data=data, fields=child)


def _released(client: Redis, parent_id: str = PARENT) -> bool:
    """Whether the child's completion reached the parent (it left
    waiting-children for wait, its pending child recorded as processed)."""
    if lrange(client, ORDERS.wait) == [parent_id]:
        assert client.hkeys(ORDERS.processed(parent_id)) == [ITEMS.job(CHILD).encode()]
        return True
    assert zmembers(client, ORDERS.waiting_children) == [parent_id]
    assert client.smembers(ORDERS.dependencies(parent_id)) == {ITEMS.job(CHILD).encode()}
    return False


@pytest.mark.parametrize(
    ("child", "found"),
    [
        ({"parentKey": "bull:orders:" + PARENT, "parent": json.dumps(BULLMQ_PARENT)}, True),
        ({"parent": json.dumps(BULLMQ_PARENT)}, True),
        ({"parentKey": "", "parent": json.dumps(BULLMQ_PARENT)}, True),
        ({"parentKey": "bull:orders:" + PARENT, "parent": "null"}, True),
        ({"parentKey": "bull:orders:" + PARENT, "parent": json.dumps({"id": PARENT})}, True),
        ({"parent": json.dumps({"queueKey": "bull:orders"})}, False),
    ],
    ids=["bullmq", "json-only", "empty-parent-key", "json-null", "json-without-queue", "no-id"],
)
def test_a_child_finds_its_parent_however_its_writer_named_it(
    redis_client: Redis, child: dict[str, str], found: bool
) -> None:
    """BullMQ writes parentKey and the parent JSON; a port may leave parentKey
    empty or out, write the JSON as null, or leave the queue out of it. The
    child's parent is its parentKey when there is one, else the JSON's queue
    and id; with neither it has none, and its own completion goes on."""
    _flow(redis_client, child)
    assert finish(redis_client, ITEMS, CHILD) == 0
    assert zmembers(redis_client, ITEMS.completed) == [CHILD]
    assert _released(redis_client) is found


def test_a_parent_named_by_a_numeric_id_is_found(redis_client: Redis) -> None:
    """A port that keeps ids as numbers writes the JSON's id as one."""
    _flow(redis_client, {"parent": json.dumps({"id": 4711, "queueKey": "bull:orders"})}, "4711")
    assert finish(redis_client, ITEMS, CHILD) == 0
    assert _released(redis_client, "4711")


def test_keys_named_like_redis_types_do_not_make_a_parent_look_broken(
    redis_client: Redis,
) -> None:
    """A database shared with another program that keeps keys named by plain
    words (a tutorial's `list`, `set` and `hash`): the parent's own keys are
    what is judged, so its child still releases it."""
    redis_client.rpush("list", "a", "b")
    redis_client.sadd("set", "x")
    redis_client.hset("hash", "field", "value")
    _flow(redis_client, {"parentKey": "bull:orders:" + PARENT})
    assert finish(redis_client, ITEMS, CHILD) == 0
    assert _released(redis_client)


@pytest.mark.parametrize("garbage", [{"priority": "high"}, {"delay": "1m"}])
def test_a_parent_whose_priority_or_delay_is_no_number_is_left_alone(
    redis_client: Redis, garbage: dict[str, str]
) -> None:
    """Either field alone is enough: the child finishes as if it had no
    parent, rather than releasing one whose move could not be computed."""
    _flow(redis_client, {"parentKey": "bull:orders:" + PARENT}, **garbage)
    assert finish(redis_client, ITEMS, CHILD) == 0
    assert zmembers(redis_client, ITEMS.completed) == [CHILD]
    assert not _released(redis_client)
    assert redis_client.hexists(ORDERS.processed(PARENT), ITEMS.job(CHILD)) is False


def test_a_parent_with_a_delay_of_one_ms_goes_through_delayed_and_wakes_its_workers(
    redis_client: Redis,
) -> None:
    """The shortest delay is a delay: the parent is due 1 ms after its last
    child, says so on its queue's stream, and arms its workers' marker for
    that moment (an idle worker blocks on the marker until it is due)."""
    _flow(redis_client, {"parentKey": "bull:orders:" + PARENT}, delay="1")
    assert finish(redis_client, ITEMS, CHILD) == 0
    assert lrange(redis_client, ORDERS.wait) == []
    [(member, score)] = redis_client.zrange(ORDERS.delayed, 0, -1, withscores=True)
    assert (member.decode(), int(score) // 4096) == (PARENT, NOW + 1)
    said: Any = events(redis_client, ORDERS)[-1]
    assert (said.event, said.job_id, said.fields.get("delay")) == ("delayed", PARENT, str(NOW + 1))
    assert redis_client.zrange(ORDERS.marker, 0, -1, withscores=True) == [(b"1", NOW + 1)]


def test_a_parent_already_failed_is_not_written_by_its_other_children(
    redis_client: Redis,
) -> None:
    """Two picks with failParentOnFailure: the first failure failed the order
    (its reason names that pick); the second pick failing later records its
    failure beside the first and leaves the failed order's hash as it is."""
    first = ITEMS.job("pick_1Qa7")
    _flow(redis_client, {"parentKey": "bull:orders:" + PARENT, "parent": json.dumps(
        {**BULLMQ_PARENT, "fpof": True})})  # fmt: skip
    redis_client.zrem(ORDERS.waiting_children, PARENT)
    redis_client.zadd(ORDERS.failed, {PARENT: NOW - 1000})
    redis_client.hset(
        ORDERS.job(PARENT),
        mapping={"failedReason": f"child {first} failed", "defa": f"child {first} failed"},
    )
    unsuccessful = ORDERS.job(PARENT) + ":unsuccessful"
    redis_client.zadd(unsuccessful, {first: NOW - 2000})
    before = redis_client.hgetall(ORDERS.job(PARENT))

    finish(redis_client, ITEMS, CHILD, target="failed", value="bin A-12-03 is empty")

    assert redis_client.hgetall(ORDERS.job(PARENT)) == before
    assert zmembers(redis_client, ORDERS.failed) == [PARENT]
    assert zmembers(redis_client, unsuccessful) == [first, ITEMS.job(CHILD)]
