"""The flow producer (queues.flow) against a real Redis: the layout it writes,
what it refuses (writing nothing), and our workers running its flows, each
parent-failure option included."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Collection
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
from redis import Redis

from queues.errors import CorruptKey, ParentJobNotExist
from queues.flow import FlowJob, FlowJobIdTaken, FlowProducer, InvalidFlow
from queues.job import Job
from queues.job_options import InvalidJobOptions
from queues.keys import QueueKeys
from queues.queue import Queue
from queues.worker import Worker
from tests.keyspace import snapshot
from tests.transition_helpers import event_names, fetch, finish, lrange, zmembers
from tests.worker_helpers import running, until

ORDERS, ITEMS, PARTS = QueueKeys("orders"), QueueKeys("items"), QueueKeys("parts")


@pytest.fixture
def producer(redis_client: Redis) -> FlowProducer:
    return FlowProducer(redis_client)


def three_levels(**child_opts: Any) -> FlowJob:
    """orders/ship <- items/pack, items/pack-2 <- parts/pick (under pack)."""
    pick = FlowJob("pick", "parts", {"part": 1}, dict(child_opts))
    return FlowJob(
        "ship",
        "orders",
        {"order": 7},
        children=[
            FlowJob("pack", "items", {"item": 1}, children=[pick]),
            FlowJob("pack-2", "items", {"item": 2}),
        ],
    )


def test_a_flow_is_written_in_bullmqs_layout(redis_client: Redis, producer: FlowProducer) -> None:
    flow = FlowJob(
        "ship",
        "orders",
        {"order": 7},
        {"jobId": "order-7"},
        children=[
            FlowJob("pack", "items", {"item": 1}, {"failParentOnFailure": True, "attempts": 2}),
            FlowJob("pack", "items", {"item": 2}, {"jobId": "pack-2", "delay": 60_000}),
        ],
    )
    root = producer.add(flow)
    assert root.id == "order-7"
    first, second = root.children
    assert second.id == "pack-2"
    # The parent waits for its children, scored by its timestamp.
    [(member, score)] = redis_client.zrange(ORDERS.waiting_children, 0, -1, withscores=True)
    assert member == b"order-7"
    assert score == int(redis_client.hget(ORDERS.job("order-7"), "timestamp") or 0)
    assert redis_client.smembers(ORDERS.dependencies("order-7")) == {
        ITEMS.job(first.id).encode(),
        ITEMS.job("pack-2").encode(),
    }
    # Each child names its parent as BullMQ does: parentKey, parent JSON with
    # the failure option, and the parent in its opts.
    child = redis_client.hgetall(ITEMS.job(first.id))
    assert child[b"parentKey"] == ORDERS.job("order-7").encode()
    assert json.loads(child[b"parent"]) == {
        "id": "order-7",
        "queueKey": "bull:orders",
        "fpof": True,
    }
    opts = json.loads(child[b"opts"])
    assert opts["parent"] == {"id": "order-7", "queue": "bull:orders"}
    assert opts["fpof"] is True
    assert opts["attempts"] == 2
    assert json.loads(redis_client.hget(ORDERS.job("order-7"), "data") or b"") == {"order": 7}
    # The leaves are added as addJob adds jobs: ready, or delayed.
    assert lrange(redis_client, ITEMS.wait) == [first.id]
    assert zmembers(redis_client, ITEMS.delayed) == ["pack-2"]
    assert event_names(redis_client, ORDERS) == [
        ("added", "order-7"),
        ("waiting-children", "order-7"),
    ]
    assert event_names(redis_client, ITEMS) == [
        ("added", first.id),
        ("waiting", first.id),
        ("added", "pack-2"),
        ("delayed", "pack-2"),
    ]
    # Every add moves the queue's id counter, as BullMQ's do.
    assert redis_client.get(ORDERS.id) == b"1"
    assert redis_client.get(ITEMS.id) == b"2"


def test_a_three_level_flow_keeps_its_shape(redis_client: Redis, producer: FlowProducer) -> None:
    root = producer.add(three_levels())
    first_pack, second_pack = root.children
    [pick] = first_pack.children
    assert zmembers(redis_client, ITEMS.waiting_children) == [first_pack.id]
    assert redis_client.smembers(ITEMS.dependencies(first_pack.id)) == {pick.key.encode()}
    assert redis_client.hget(pick.key, "parentKey") == first_pack.key.encode()
    assert redis_client.hget(first_pack.key, "parentKey") == root.key.encode()
    assert lrange(redis_client, ITEMS.wait) == [second_pack.id]
    assert lrange(redis_client, PARTS.wait) == [pick.id]


def test_a_child_named_by_its_parent_json_alone_releases_its_parent(
    redis_client: Redis, producer: FlowProducer
) -> None:
    """A child whose hash names its parent by the `parent` JSON alone (its
    queueKey and id; an older writer's layout, no `parentKey`): its finish,
    taking the next job as a busy worker's does, still tells the parent,
    which leaves waiting-children for wait."""
    producer.add(
        FlowJob(
            "ship",
            "orders",
            {"order": 8},
            {"jobId": "order-8"},
            children=[FlowJob("pack", "items", {"item": 1}, {"jobId": "pack-81"})],
        )
    )
    redis_client.hdel(ITEMS.job("pack-81"), "parentKey")
    assert fetch(redis_client, ITEMS).job_id == "pack-81"

    finish(redis_client, ITEMS, "pack-81", fetch_next=True)

    assert zmembers(redis_client, ORDERS.waiting_children) == []
    assert lrange(redis_client, ORDERS.wait) == ["order-8"]


def test_a_flow_under_a_missing_parent_writes_nothing(
    redis_client: Redis, producer: FlowProducer
) -> None:
    redis_client.set("bull:orders:not-a-job", "text")
    redis_client.hset(ORDERS.meta, "paused", "1")  # a hash, but a queue's, not a job's
    before = snapshot(redis_client)
    for parent_id in ("gone", "not-a-job", "meta"):
        flow = FlowJob("ship", "orders", opts={"parent": {"id": parent_id, "queue": "bull:orders"}})
        with pytest.raises(ParentJobNotExist):
            producer.add(flow)
    assert snapshot(redis_client) == before


def test_a_parent_whose_dependencies_are_not_a_set_cannot_take_the_flow(
    redis_client: Redis, producer: FlowProducer
) -> None:
    redis_client.hset(ORDERS.job("big"), mapping={"name": "big", "timestamp": 1})
    redis_client.set(ORDERS.dependencies("big"), "garbage")
    before = snapshot(redis_client)
    with pytest.raises(ParentJobNotExist):
        producer.add(
            FlowJob("sub", "items", opts={"parent": {"id": "big", "queue": "bull:orders"}})
        )
    assert snapshot(redis_client) == before


def test_a_taken_id_anywhere_in_the_flow_writes_nothing(
    redis_client: Redis, producer: FlowProducer
) -> None:
    Queue("items", redis_client).add("old", {}, {"jobId": "pack-2"})
    # Keys another job left behind under a parent's id would be inherited.
    redis_client.sadd(ORDERS.dependencies("left"), "bull:items:ghost")
    before = snapshot(redis_client)
    flow = FlowJob("ship", "orders", children=[FlowJob("pack", "items", opts={"jobId": "pack-2"})])
    with pytest.raises(FlowJobIdTaken, match="pack-2 of bull:items already exists"):
        producer.add(flow)
    twice = FlowJob(
        "ship",
        "orders",
        children=[
            FlowJob("a", "items", opts={"jobId": "x"}),
            FlowJob("b", "items", opts={"jobId": "x"}),
        ],
    )
    with pytest.raises(FlowJobIdTaken):
        producer.add(twice)
    with pytest.raises(FlowJobIdTaken):
        producer.add(
            FlowJob("ship", "orders", opts={"jobId": "left"}, children=[FlowJob("a", "items")])
        )
    assert snapshot(redis_client) == before


def test_a_queue_key_of_the_wrong_type_refuses_the_flow(
    redis_client: Redis, producer: FlowProducer
) -> None:
    redis_client.set(PARTS.waiting_children, "oops")
    before = snapshot(redis_client)
    with pytest.raises(CorruptKey, match="parts:waiting-children"):
        producer.add(three_levels())
    assert snapshot(redis_client) == before


def test_flows_no_runtime_could_run_are_refused_before_redis(
    redis_client: Redis, producer: FlowProducer
) -> None:
    leaf = FlowJob("leaf", "items")
    with pytest.raises(InvalidFlow, match="twice"):
        producer.add(FlowJob("p", "orders", children=[leaf, leaf]))
    both = {"failParentOnFailure": True, "ignoreDependencyOnFailure": True}
    with pytest.raises(InvalidFlow, match="cannot be used together"):
        producer.add(FlowJob("p", "orders", children=[FlowJob("c", "items", opts=both)]))
    with pytest.raises(InvalidFlow, match="deduplication"):
        producer.add(
            FlowJob(
                "p", "orders", children=[FlowJob("c", "items", opts={"deduplication": {"id": "d"}})]
            )
        )
    with pytest.raises(InvalidFlow, match="parent is the flow's"):
        producer.add(
            FlowJob(
                "p",
                "orders",
                children=[FlowJob("c", "items", opts={"parent": {"id": "1", "queue": "bull:x"}})],
            )
        )
    with pytest.raises(InvalidJobOptions):
        producer.add(FlowJob("p", "orders", opts={"jobId": "12"}))
    assert redis_client.dbsize() == 0


# -- our workers run flows -----------------------------------------------------


class Recorder:
    """A processor for every queue of a flow: records the order jobs ran in
    and what each parent read of its children; fails the jobs named in
    ``failing``."""

    def __init__(self, failing: Collection[str] = (), fail_after_s: float = 0.0) -> None:
        self.failing = failing
        # A failing job may fail late, so that its siblings are done by then.
        self.fail_after_s = fail_after_s
        self.ran: list[str] = []
        self.read: dict[str, dict[str, Any]] = {}
        self.workers: dict[str, Worker] = {}

    def for_queue(self, queue: str) -> Any:
        async def process(job: Job) -> Any:
            self.ran.append(f"{queue}/{job.name}")
            if job.name in self.failing:
                await asyncio.sleep(self.fail_after_s)
                raise RuntimeError(f"{job.name} broke")
            self.read[f"{queue}/{job.id}"] = await self.workers[queue].children_values(job)
            return {"done": job.name, "data": job.data}

        return process


@asynccontextmanager
async def workers(url: str, recorder: Recorder) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for queue in ("orders", "items", "parts"):
            worker = await stack.enter_async_context(
                running(queue, recorder.for_queue(queue), url=url)
            )
            recorder.workers[queue] = worker
        yield


async def test_our_workers_run_a_three_level_flow_children_first(
    redis_url: str, redis_client: Redis, producer: FlowProducer
) -> None:
    root = producer.add(three_levels())
    first_pack = root.children[0]
    [pick] = first_pack.children
    orders = Queue("orders", redis_client)
    recorder = Recorder()
    async with workers(redis_url, recorder):
        await until(lambda: orders.get_state(root.id) == "completed")
    assert recorder.ran.index("parts/pick") < recorder.ran.index("items/pack")
    assert recorder.ran[-1] == "orders/ship"
    assert recorder.read[f"items/{first_pack.id}"] == {
        pick.key: {"done": "pick", "data": {"part": 1}}
    }
    assert recorder.read[f"orders/{root.id}"] == {
        child.key: {"done": child.name, "data": {"item": n}}
        for n, child in enumerate(root.children, 1)
    }
    assert redis_client.exists(ORDERS.dependencies(root.id)) == 0


async def test_without_an_option_a_failed_child_leaves_its_parent_waiting(
    redis_url: str, redis_client: Redis, producer: FlowProducer
) -> None:
    root = producer.add(three_levels())
    items = Queue("items", redis_client)
    async with workers(redis_url, Recorder(failing={"pick"})):
        await until(lambda: Queue("parts", redis_client).get_counts("failed")["failed"] == 1)
        await asyncio.sleep(0.3)
    assert items.get_state(root.children[0].id) == "waiting-children"
    assert Queue("orders", redis_client).get_state(root.id) == "waiting-children"


async def test_fail_parent_on_failure_climbs_as_far_as_the_parents_say(
    redis_url: str, redis_client: Redis, producer: FlowProducer
) -> None:
    pick = FlowJob("pick", "parts", opts={"failParentOnFailure": True})
    pack = FlowJob("pack", "items", opts={"failParentOnFailure": True}, children=[pick])
    root = producer.add(FlowJob("ship", "orders", children=[pack, FlowJob("other", "items")]))
    pack_node = root.children[0]
    recorder = Recorder(failing={"pick"})
    orders, items = Queue("orders", redis_client), Queue("items", redis_client)
    async with workers(redis_url, recorder):
        await until(lambda: orders.get_state(root.id) == "failed")
    assert "items/pack" not in recorder.ran  # failed without running
    assert "orders/ship" not in recorder.ran
    pick_key = pack_node.children[0].key
    assert items.get_job(pack_node.id).failed_reason == f"child {pick_key} failed"  # type: ignore[union-attr]
    assert orders.get_job(root.id).failed_reason == f"child {pack_node.key} failed"  # type: ignore[union-attr]
    assert redis_client.zrange(ORDERS.job(root.id) + ":unsuccessful", 0, -1) == [
        pack_node.key.encode()
    ]


async def test_continue_parent_on_failure_runs_the_parent_at_once(
    redis_url: str, redis_client: Redis, producer: FlowProducer
) -> None:
    """The parent runs as soon as the child fails, its other children still
    pending (it may cancel them; until they are gone it cannot complete, -4)."""
    slow = FlowJob("slow", "items", opts={"delay": 60_000})
    broken = FlowJob("broken", "items", opts={"continueParentOnFailure": True})
    root = producer.add(FlowJob("ship", "orders", children=[broken, slow]))
    recorder = Recorder(failing={"broken"})
    async with workers(redis_url, recorder):
        await until(lambda: "orders/ship" in recorder.ran)
    assert redis_client.hgetall(ORDERS.job(root.id) + ":failed") == {
        root.children[0].key.encode(): b"broken broke"
    }
    assert redis_client.smembers(ORDERS.dependencies(root.id)) == {root.children[1].key.encode()}


async def test_continue_parent_on_failure_completes_once_the_rest_is_done(
    redis_url: str, redis_client: Redis, producer: FlowProducer
) -> None:
    broken = FlowJob("broken", "items", opts={"continueParentOnFailure": True})
    root = producer.add(FlowJob("ship", "orders", children=[broken, FlowJob("fine", "parts")]))
    recorder = Recorder(failing={"broken"}, fail_after_s=0.3)
    async with workers(redis_url, recorder):
        await until(lambda: Queue("orders", redis_client).get_state(root.id) == "completed")
    assert list(recorder.read[f"orders/{root.id}"]) == [root.children[1].key]
    assert redis_client.hkeys(ORDERS.job(root.id) + ":failed") == [root.children[0].key.encode()]


@pytest.mark.parametrize(
    ("option", "recorded"),
    [("ignoreDependencyOnFailure", True), ("removeDependencyOnFailure", False)],
)
async def test_ignored_or_removed_dependencies_let_the_parent_run_after_the_rest(
    redis_url: str, redis_client: Redis, producer: FlowProducer, option: str, recorded: bool
) -> None:
    broken = FlowJob("broken", "items", opts={option: True})
    root = producer.add(FlowJob("ship", "orders", children=[broken, FlowJob("fine", "items")]))
    recorder = Recorder(failing={"broken"}, fail_after_s=0.3)
    async with workers(redis_url, recorder):
        await until(lambda: Queue("orders", redis_client).get_state(root.id) == "completed")
    failed = redis_client.hgetall(ORDERS.job(root.id) + ":failed")
    assert failed == ({root.children[0].key.encode(): b"broken broke"} if recorded else {})
    assert list(recorder.read[f"orders/{root.id}"]) == [root.children[1].key]
