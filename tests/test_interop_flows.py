"""Flows shared with the bullmq 2.20.1 peer, both ways: a flow our producer
adds runs on its workers, one its FlowProducer adds runs on ours; three
levels finish in order, a child sits in another queue, and each
parent-failure option ends as bullmq's own API then reports."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import bullmq
import pytest
from redis import Redis

from queues.flow import FlowJob, FlowProducer
from queues.job import Job
from queues.queue import Queue
from queues.worker import Worker
from tests.worker_helpers import running, until

pytestmark = [
    pytest.mark.peer,
    # bullmq's worker leaves tasks and connections for the loop's finalizers
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

QUEUES = ("orders", "items", "parts")
# The failing child fails this late, so its sibling has completed by then and
# the parent's fate is its option's alone (a parent told to continue while a
# sibling is still pending could not complete yet).
FAIL_AFTER_S = 0.5
# The option on the failing child -> the parent's state afterwards.
OUTCOMES = {
    None: "waiting-children",
    "failParentOnFailure": "failed",
    "continueParentOnFailure": "completed",
    "ignoreDependencyOnFailure": "completed",
    "removeDependencyOnFailure": "completed",
}


@pytest.fixture
async def peer_queues(
    redis_url: str, redis_client: Redis
) -> AsyncIterator[dict[str, bullmq.Queue]]:
    queues = {name: bullmq.Queue(name, {"connection": redis_url}) for name in QUEUES}
    yield queues
    for queue in queues.values():
        await queue.close()


def _reason(text: str | None) -> str:
    # bullmq 2.20.1 stores a failed reason JSON-encoded ('"boom"'); we store the text.
    return (text or "").strip('"')


class Log:
    """The order jobs ran in, across queues and runtimes, and what parents read."""

    def __init__(self, failing: str | None = None) -> None:
        self.failing = failing
        self.ran: list[str] = []
        self.read: dict[str, dict[str, Any]] = {}


@asynccontextmanager
async def peer_workers(url: str, log: Log) -> AsyncIterator[None]:
    def processor(queue: str) -> Callable[[Any, str], Any]:
        async def process(job: Any, token: str) -> Any:
            log.ran.append(f"{queue}/{job.name}")
            if job.name == log.failing:
                await asyncio.sleep(FAIL_AFTER_S)
                raise RuntimeError("peer boom")
            log.read[job.id] = await job.getChildrenValues()
            return {"by": "peer", "name": job.name}

        return process

    async with AsyncExitStack() as stack:
        for queue in QUEUES:
            worker = bullmq.Worker(queue, processor(queue), {"connection": url, "drainDelay": 1})
            stack.push_async_callback(worker.close)
        yield


@asynccontextmanager
async def our_workers(url: str, log: Log) -> AsyncIterator[None]:
    workers: dict[str, Worker] = {}

    def processor(queue: str) -> Any:
        async def process(job: Job) -> Any:
            log.ran.append(f"{queue}/{job.name}")
            if job.name == log.failing:
                await asyncio.sleep(FAIL_AFTER_S)
                raise RuntimeError("our boom")
            log.read[job.id] = await workers[queue].children_values(job)
            return {"by": "us", "name": job.name}

        return process

    async with AsyncExitStack() as stack:
        for queue in QUEUES:
            workers[queue] = await stack.enter_async_context(
                running(queue, processor(queue), url=url)
            )
        yield


async def _state(peer_queues: dict[str, bullmq.Queue], queue: str, job_id: str) -> str:
    return str(await peer_queues[queue].getJobState(job_id))


async def _wait_for_state(
    peer_queues: dict[str, bullmq.Queue], queue: str, job_id: str, state: str
) -> None:
    seen: list[str] = []

    async def check() -> bool:
        seen.append(await _state(peer_queues, queue, job_id))
        return seen[-1] == state

    for _ in range(1000):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{queue}/{job_id} stayed {seen[-1]}, not {state}")


async def test_a_three_level_flow_we_add_runs_in_order_on_the_peers_workers(
    redis_url: str, redis_client: Redis, peer_queues: dict[str, bullmq.Queue]
) -> None:
    pick = FlowJob("pick", "parts", {"part": 1})
    flow = FlowJob(
        "ship",
        "orders",
        {"order": 1},
        children=[FlowJob("pack", "items", {"n": 1}, children=[pick]), FlowJob("pack2", "items")],
    )
    root = FlowProducer(redis_client).add(flow)
    pack = root.children[0]
    log = Log()
    async with peer_workers(redis_url, log):
        await _wait_for_state(peer_queues, "orders", root.id, "completed")
    assert log.ran.index("parts/pick") < log.ran.index("items/pack")
    assert log.ran[-1] == "orders/ship"
    assert log.read[pack.id] == {pack.children[0].key: {"by": "peer", "name": "pick"}}
    assert set(log.read[root.id]) == {child.key for child in root.children}
    peer_root = await bullmq.Job.fromId(peer_queues["orders"], root.id)
    assert peer_root.returnvalue == {"by": "peer", "name": "ship"}
    assert peer_root.data == {"order": 1}


async def test_a_three_level_flow_the_peer_adds_runs_in_order_on_our_workers(
    redis_url: str, redis_client: Redis, peer_queues: dict[str, bullmq.Queue]
) -> None:
    producer = bullmq.FlowProducer(redis_url)
    tree = await producer.add(
        {
            "name": "ship",
            "queueName": "orders",
            "data": {"order": 2},
            "children": [
                {
                    "name": "pack",
                    "queueName": "items",
                    "data": {"n": 1},
                    "children": [{"name": "pick", "queueName": "parts", "data": {"part": 1}}],
                },
                {"name": "pack2", "queueName": "items", "data": {"n": 2}},
            ],
        }
    )
    await producer.close()
    root_id = tree["job"].id
    pack_id = tree["children"][0]["job"].id
    pick_id = tree["children"][0]["children"][0]["job"].id
    log = Log()
    async with our_workers(redis_url, log):
        await until(lambda: Queue("orders", redis_client).get_state(root_id) == "completed")
    assert log.ran.index("parts/pick") < log.ran.index("items/pack")
    assert log.ran[-1] == "orders/ship"
    assert log.read[pack_id] == {f"bull:parts:{pick_id}": {"by": "us", "name": "pick"}}
    assert await _state(peer_queues, "orders", root_id) == "completed"
    peer_root = await bullmq.Job.fromId(peer_queues["orders"], root_id)
    assert peer_root.returnvalue == {"by": "us", "name": "ship"}
    assert await peer_root.getChildrenValues() == {
        f"bull:items:{tree['children'][0]['job'].id}": {"by": "us", "name": "pack"},
        f"bull:items:{tree['children'][1]['job'].id}": {"by": "us", "name": "pack2"},
    }


@pytest.mark.parametrize("option", list(OUTCOMES), ids=lambda o: o or "no-option")
async def test_each_parent_option_of_our_flow_holds_on_the_peers_workers(
    redis_url: str, redis_client: Redis, peer_queues: dict[str, bullmq.Queue], option: str | None
) -> None:
    opts = {option: True} if option else {}
    flow = FlowJob(
        "ship",
        "orders",
        children=[FlowJob("bad", "items", opts=opts), FlowJob("good", "parts")],
    )
    root = FlowProducer(redis_client).add(flow)
    log = Log(failing="bad")
    async with peer_workers(redis_url, log):
        await _wait_for_state(peer_queues, "items", root.children[0].id, "failed")
        await _wait_for_state(peer_queues, "orders", root.id, OUTCOMES[option])
    await _check_parent(peer_queues, root.id, root.children[0].key, option)


@pytest.mark.parametrize("option", list(OUTCOMES), ids=lambda o: o or "no-option")
async def test_each_parent_option_of_the_peers_flow_holds_on_our_workers(
    redis_url: str, redis_client: Redis, peer_queues: dict[str, bullmq.Queue], option: str | None
) -> None:
    producer = bullmq.FlowProducer(redis_url)
    tree = await producer.add(
        {
            "name": "ship",
            "queueName": "orders",
            "children": [
                {"name": "bad", "queueName": "items", "opts": {option: True} if option else {}},
                {"name": "good", "queueName": "parts"},
            ],
        }
    )
    await producer.close()
    root_id, bad_id = tree["job"].id, tree["children"][0]["job"].id
    log = Log(failing="bad")
    async with our_workers(redis_url, log):
        await _wait_for_state(peer_queues, "items", bad_id, "failed")
        await _wait_for_state(peer_queues, "orders", root_id, OUTCOMES[option])
    await _check_parent(peer_queues, root_id, f"bull:items:{bad_id}", option)


async def _check_parent(
    peer_queues: dict[str, bullmq.Queue], root_id: str, bad_key: str, option: str | None
) -> None:
    """What bullmq's API says of the parent once the child has failed (its
    state was checked by the caller): why it failed, or what it ran on."""
    parent = await bullmq.Job.fromId(peer_queues["orders"], root_id)
    values = await parent.getChildrenValues()
    if option == "failParentOnFailure":
        assert _reason(parent.failedReason) == f"child {bad_key} failed"
    elif option is None:
        assert not parent.finishedOn
    else:
        # It ran after the good child, on its value alone.
        assert parent.returnvalue["name"] == "ship"
        [good] = values
        assert good.startswith("bull:parts:")
    assert bad_key not in values
