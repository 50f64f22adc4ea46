"""Draining a queue that holds flows (drain-11.lua): a parent of the drained
queue whose last pending child the drain deletes goes with it, whatever the
batch size; a parent in another queue is released there, as when a child is
removed; a broken parent stays where it is. Real Redis, flows added by our
FlowProducer the way a billing service adds its month-end close."""

from __future__ import annotations

import bullmq
import pytest
from redis import Redis

from queues.flow import FlowJob, FlowNode, FlowProducer
from queues.keys import QueueKeys
from queues.queue import Queue
from tests.queue_helpers import stream_events
from tests.transition_helpers import fetch, lrange, zmembers

BILLING = QueueKeys("billing")
LEDGER = QueueKeys("ledger")
STATES = ("wait", "paused", "prioritized", "delayed", "active", "waiting-children")


def _invoice(number: int) -> FlowJob:
    return FlowJob(
        "render-invoice",
        "billing",
        {"invoice": f"INV-2024-{number:06d}", "customer": "cus_Q4mZ8sLx2p", "currency": "EUR"},
        {"jobId": f"INV-2024-{number:06d}"},
    )


def _month_close(producer: FlowProducer, parent_queue: str = "billing") -> FlowNode:
    """close-month waits for close-day, which waits for three invoices: the
    days' invoices are rendered first, then the day, then the month."""
    day = FlowJob(
        "close-day",
        parent_queue,
        {"day": "2024-11-30"},
        {"jobId": "close-2024-11-30"},
        children=[_invoice(n) for n in (871, 872, 873)],
    )
    return producer.add(
        FlowJob(
            "close-month", parent_queue, {"month": "2024-11"}, {"jobId": "close-2024-11"}, [day]
        )
    )


def _counts(queue: Queue) -> dict[str, int]:
    return {state: count for state, count in queue.get_counts(*STATES).items() if count}


@pytest.mark.parametrize("batch", [1000, 3, 2, 1])
def test_a_drain_deletes_the_parents_its_deleted_children_leave_waiting_for_nothing(
    redis_client: Redis, batch: int
) -> None:
    # Before, the parents were released into wait after wait had been
    # drained: "drained" sent with close-day waiting to run without its
    # invoices, or not, depending on where a batch of the drain ended.
    _month_close(FlowProducer(redis_client))
    billing = Queue("billing", redis_client)
    assert _counts(billing) == {"wait": 3, "waiting-children": 2}

    assert billing.drain(batch=batch) == []

    assert _counts(billing) == {}
    assert redis_client.keys("bull:billing:INV-*") == []
    assert redis_client.keys("bull:billing:close-*") == []
    events = stream_events(redis_client, billing)
    assert events[-1] == {"event": "drained"}
    assert not [e for e in events if e.get("prev") == "waiting-children"]


def test_a_parent_in_another_queue_is_released_there_as_when_a_child_is_removed(
    redis_client: Redis,
) -> None:
    _month_close(FlowProducer(redis_client), parent_queue="ledger")
    billing, ledger = Queue("billing", redis_client), Queue("ledger", redis_client)

    assert billing.drain() == []

    assert _counts(billing) == {}
    assert lrange(redis_client, LEDGER.wait) == ["close-2024-11-30"]
    assert zmembers(redis_client, LEDGER.waiting_children) == ["close-2024-11"]
    assert stream_events(redis_client, ledger)[-1] == {
        "event": "waiting",
        "jobId": "close-2024-11-30",
        "prev": "waiting-children",
    }


def test_a_parent_with_a_child_still_running_keeps_waiting_for_it(redis_client: Redis) -> None:
    _month_close(FlowProducer(redis_client))
    running = fetch(redis_client, BILLING).job_id
    billing = Queue("billing", redis_client)

    assert billing.drain() == []

    assert _counts(billing) == {"active": 1, "waiting-children": 2}
    assert redis_client.smembers(BILLING.job("close-2024-11-30") + ":dependencies") == {
        BILLING.job(running).encode()
    }


def test_a_freed_parent_another_state_also_holds_is_left_where_it_is(
    redis_client: Redis,
) -> None:
    # A writer that died between failing close-day and taking it out of
    # waiting-children left it in both: deleting it would leave failed an id
    # without a job, so the drain leaves it (and close-month) alone.
    _month_close(FlowProducer(redis_client))
    redis_client.zadd(BILLING.failed, {"close-2024-11-30": 1_732_924_800_000})
    billing = Queue("billing", redis_client)

    assert billing.drain() == []

    assert _counts(billing) == {"waiting-children": 2}
    assert zmembers(redis_client, BILLING.failed) == ["close-2024-11-30"]
    assert redis_client.hget(BILLING.job("close-2024-11-30"), "name") == b"close-day"
    assert redis_client.scard(BILLING.job("close-2024-11-30") + ":dependencies") == 0


@pytest.mark.peer
@pytest.mark.filterwarnings("ignore::ResourceWarning")  # bullmq leaves connections to finalizers
async def test_a_flow_the_bullmq_peer_added_is_drained_whole(
    redis_url: str, redis_client: Redis
) -> None:
    """The peer names a child's parent its own way (the `parent` JSON beside
    `parentKey`): its month-end close in one queue goes whole, as ours does."""
    producer = bullmq.FlowProducer(redis_url)
    tree = await producer.add(
        {
            "name": "close-day",
            "queueName": "billing",
            "data": {"day": "2024-11-30"},
            "children": [
                {"name": "render-invoice", "queueName": "billing", "data": {"invoice": n}}
                for n in ("INV-2024-000871", "INV-2024-000872")
            ],
        }
    )
    await producer.close()
    ids = [tree["job"].id] + [child["job"].id for child in tree["children"]]
    billing = Queue("billing", redis_client)
    assert _counts(billing) == {"wait": 2, "waiting-children": 1}

    assert billing.drain() == []

    assert _counts(billing) == {}
    assert [job_id for job_id in ids if redis_client.exists(BILLING.job(job_id))] == []
