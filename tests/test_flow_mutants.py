"""addFlow-1.lua at the edges bench/mutate.py's thirteenth pass
(docs/mutation.md) found its tests silent on: a parent's own delay and
priority (stored, then used when its last child is done), and a root whose
parent is a job hash missing one of its name and timestamp. Real Redis;
children finished as a worker's moveToFinished finishes them."""

from __future__ import annotations

import pytest
from redis import Redis

from queues.flow import FlowJob, FlowProducer
from queues.keys import QueueKeys
from tests.transition_helpers import fetch, finish, lrange, zmembers

LEDGER, INVOICES = QueueKeys("ledger"), QueueKeys("invoices")
REMINDERS = QueueKeys("reminders")
INVOICE = {"invoice": "INV-2024-000871", "customer": "cus_Q3l8vN2bXk", "total_cents": 129900}
REMINDER = {"invoice": "INV-2024-000871", "to": "billing@northwind.example", "days_late": 14}


@pytest.fixture
def producer(redis_client: Redis) -> FlowProducer:
    return FlowProducer(redis_client)


def test_a_parent_keeps_its_own_delay_and_priority_for_when_its_children_are_done(
    redis_client: Redis, producer: FlowProducer
) -> None:
    # The month's close runs a minute after its invoice is rendered (the
    # ledger settles); the day's close is urgent, priority 4.
    month = producer.add(
        FlowJob(
            "close-month",
            "ledger",
            {"month": "2024-11"},
            {"jobId": "close-2024-11", "delay": 60_000},
            children=[FlowJob("render-invoice", "invoices", INVOICE, {"jobId": "INV-2024-000871"})],
        )
    )
    day = producer.add(
        FlowJob(
            "close-day",
            "ledger",
            {"day": "2024-11-30"},
            {"jobId": "close-2024-11-30", "priority": 4},
            children=[FlowJob("render-invoice", "invoices", INVOICE, {"jobId": "INV-2024-000872"})],
        )
    )
    assert redis_client.hmget(LEDGER.job(month.id), "delay", "priority") == [b"60000", b"0"]
    assert redis_client.hmget(LEDGER.job(day.id), "delay", "priority") == [b"0", b"4"]

    for _ in range(2):
        taken = fetch(redis_client, INVOICES)
        assert taken.job_id in ("INV-2024-000871", "INV-2024-000872")
        finish(redis_client, INVOICES, taken.job_id, value='{"pdf": "s3://invoices/a.pdf"}')

    assert zmembers(redis_client, LEDGER.delayed) == ["close-2024-11"]
    assert zmembers(redis_client, LEDGER.prioritized) == ["close-2024-11-30"]
    assert lrange(redis_client, LEDGER.wait) == []
    assert redis_client.zcard(LEDGER.waiting_children) == 0


def test_a_flow_s_leaves_wake_the_workers_of_their_queues(
    redis_client: Redis, producer: FlowProducer
) -> None:
    # Idle workers block on their queue's marker (BZPOPMIN): a ready leaf
    # must wake the invoices' workers now, a delayed one arm the reminders'
    # marker for its due time, or they sleep until their block times out.
    producer.add(
        FlowJob(
            "close-month",
            "ledger",
            {"month": "2024-11"},
            children=[
                FlowJob("render-invoice", "invoices", INVOICE),
                FlowJob("send-reminder", "reminders", REMINDER, {"delay": 3_600_000}),
            ],
        )
    )
    assert redis_client.zrange(INVOICES.marker, 0, -1, withscores=True) == [(b"0", 0.0)]
    [(_reminder, score)] = redis_client.zrange(REMINDERS.delayed, 0, -1, withscores=True)
    due = int(score) // 4096
    assert redis_client.zrange(REMINDERS.marker, 0, -1, withscores=True) == [(b"1", due)]


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "settle-batch", "data": '{"batch": "B-20241130-07"}', "opts": "{}"},
        {"timestamp": "1732924800000", "data": '{"batch": "B-20241130-07"}', "opts": "{}"},
    ],
    ids=["without-timestamp", "without-name"],
)
def test_a_root_s_parent_job_missing_one_of_its_name_and_timestamp_still_takes_the_flow(
    redis_client: Redis, producer: FlowProducer, fields: dict[str, str]
) -> None:
    # A settlement job an older writer stored without one of the two fields:
    # still a job (only a hash holding neither, such as a queue's meta, is
    # refused), as addJob takes it for a parent too.
    redis_client.hset(LEDGER.job("settle-B-20241130-07"), mapping=fields)
    root = producer.add(
        FlowJob(
            "render-invoice",
            "invoices",
            INVOICE,
            {"parent": {"id": "settle-B-20241130-07", "queue": "bull:ledger"}},
        )
    )
    assert redis_client.smembers(LEDGER.dependencies("settle-B-20241130-07")) == {
        INVOICES.job(root.id).encode()
    }
    assert lrange(redis_client, INVOICES.wait) == [root.id]
