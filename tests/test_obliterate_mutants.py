"""obliterate-21.lua at the edges bench/mutate.py's thirteenth pass
(docs/mutation.md) found its tests silent on: the refusals' answer, exactly
one active job, the states main's tests never filled before an obliterate
(prioritized, waiting-children), a batch of one job a call, and a flow whose
parent and children share the obliterated queue. Real Redis; jobs added as
producers add them."""

from __future__ import annotations

import pytest
from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.errors import JobNotInState
from queues.flow import FlowJob, FlowProducer
from queues.queue import Queue, now_ms
from tests.transition_helpers import fetch, finish

INVOICE = {"invoice": "INV-2024-000871", "customer": "cus_Q3l8vN2bXk", "total_cents": 129900}
REMINDER = {"invoice": "INV-2024-000871", "to": "billing@northwind.example", "days_late": 14}


def obliterate_once(client: Redis, queue: Queue, *, batch: int, force: bool = False) -> object:
    """One call of the script, as Queue.obliterate makes it (no pause first)."""
    call = admin.obliterate(queue.keys, force=force, batch=batch, now_ms=now_ms())
    return scripts.run(client, call)


def queue_keys(client: Redis, queue: Queue) -> list[bytes]:
    return sorted(client.keys(f"{queue.keys.base}*"))


def test_an_obliterate_call_on_a_queue_no_one_paused_answers_minus_3_and_deletes_nothing(
    redis_client: Redis,
) -> None:
    # Queue.obliterate pauses first; another admin resuming the queue between
    # its pause and a call is what this answer is for.
    invoices = Queue("invoices", redis_client)
    ids = invoices.add_bulk([("render-invoice", INVOICE, None)] * 3)
    before = queue_keys(redis_client, invoices)
    assert obliterate_once(redis_client, invoices, batch=100) == -3
    assert queue_keys(redis_client, invoices) == before
    assert invoices.get_counts("wait") == {"wait": 3}
    assert all(redis_client.exists(invoices.keys.job(i)) for i in ids)


def test_one_active_job_refuses_an_obliterate_without_force(redis_client: Redis) -> None:
    invoices = Queue("invoices", redis_client)
    running, queued = invoices.add_bulk([("render-invoice", INVOICE, None)] * 2)
    redis_client.lrem(invoices.keys.wait, 1, running)
    redis_client.lpush(invoices.keys.active, running)
    invoices.pause()

    assert obliterate_once(redis_client, invoices, batch=100) == -3
    with pytest.raises(JobNotInState):
        invoices.obliterate()
    assert redis_client.lrange(invoices.keys.active, 0, -1) == [running.encode()]
    assert redis_client.exists(invoices.keys.job(running), invoices.keys.job(queued)) == 2

    invoices.obliterate(force=True)
    assert queue_keys(redis_client, invoices) == []


def test_obliterate_deletes_prioritized_jobs_and_parents_waiting_for_children(
    redis_client: Redis,
) -> None:
    # A priority reminder, and an invoice run waiting for a render that a
    # worker of another queue holds: neither state was filled by main's tests.
    invoices, renders = Queue("invoices", redis_client), Queue("renders", redis_client)
    urgent = invoices.add("send-reminder", REMINDER, {"priority": 3})
    root = FlowProducer(redis_client).add(
        FlowJob(
            "close-month",
            "invoices",
            {"month": "2024-11"},
            {"jobId": "close-2024-11"},
            children=[FlowJob("render-invoice", "renders", INVOICE)],
        )
    )
    assert redis_client.zrange(invoices.keys.prioritized, 0, -1) == [urgent.encode()]
    assert redis_client.zrange(invoices.keys.waiting_children, 0, -1) == [b"close-2024-11"]

    assert invoices.obliterate() == []
    assert queue_keys(redis_client, invoices) == []
    # The child in the other queue stays, naming a parent that is gone.
    assert renders.get_counts("wait") == {"wait": 1}
    assert redis_client.exists(renders.keys.job(root.children[0].id)) == 1


def test_obliterate_one_job_a_call_answers_more_until_the_last_call(redis_client: Redis) -> None:
    invoices = Queue("invoices", redis_client)
    invoices.add_bulk([("render-invoice", INVOICE, None)] * 2)
    invoices.pause()
    assert obliterate_once(redis_client, invoices, batch=1) == [1, []]
    assert obliterate_once(redis_client, invoices, batch=1) == [1, []]
    assert obliterate_once(redis_client, invoices, batch=1) == [0, []]
    assert queue_keys(redis_client, invoices) == []


def test_obliterate_with_the_smallest_batch_deletes_the_whole_queue(redis_client: Redis) -> None:
    invoices = Queue("invoices", redis_client)
    invoices.add_bulk([("render-invoice", INVOICE, None)] * 3)
    invoices.add("send-reminder", REMINDER, {"delay": 86_400_000})
    assert invoices.obliterate(batch=1) == []
    assert queue_keys(redis_client, invoices) == []


def test_obliterate_deletes_a_flow_whose_parent_and_children_share_the_queue(
    redis_client: Redis,
) -> None:
    # The month's close waits for its two invoices in the same queue. Deleting
    # the invoices releases the parent into the paused list: it must not be
    # left behind there, with its hash, once the queue's meta is gone.
    invoices = Queue("invoices", redis_client)
    FlowProducer(redis_client).add(
        FlowJob(
            "close-month",
            "invoices",
            {"month": "2024-11"},
            {"jobId": "close-2024-11"},
            children=[
                FlowJob("render-invoice", "invoices", INVOICE, {"jobId": "INV-2024-000871"}),
                FlowJob("render-invoice", "invoices", INVOICE, {"jobId": "INV-2024-000872"}),
            ],
        )
    )
    assert invoices.obliterate() == []
    assert queue_keys(redis_client, invoices) == []


def test_obliterate_deletes_completed_jobs_and_a_queue_paused_the_6x_way(
    redis_client: Redis,
) -> None:
    # BullMQ 6.x pauses by meta.paused alone: its ready jobs stay in wait
    # (docs: PROTOCOL.md "Paused"), so wait is not empty on a paused queue.
    # Beside them, a render a worker completed.
    invoices = Queue("invoices", redis_client)
    done = invoices.add("render-invoice", INVOICE)
    taken = fetch(redis_client, invoices.keys)
    assert taken.job_id == done
    finish(redis_client, invoices.keys, done, value='{"pdf": "s3://invoices/INV-2024-000871.pdf"}')
    waiting = invoices.add_bulk([("send-reminder", REMINDER, None)] * 2)
    redis_client.hset(invoices.keys.meta, "paused", "1")
    assert invoices.get_counts("wait", "completed") == {"wait": 2, "completed": 1}

    assert invoices.obliterate() == []
    assert queue_keys(redis_client, invoices) == []
    assert not any(redis_client.exists(invoices.keys.job(i)) for i in [done, *waiting])
