"""moveToFinished at the edges its mutation run found unguarded (issue 26,
fourth pass): the straight-line path's answer and priority counter when
nothing is ready, and the general path (includes/finishGeneral.lua) with a
fractional timestamp, a failing parent, a child named by its parentKey
alone, the global concurrency, a kept count of one, the drained event and
the keys it only reads. Real Redis, the script itself."""

from __future__ import annotations

import pytest
from redis import Redis
from redis.exceptions import ResponseError

from queues.commands import transitions as t
from queues.flow import FlowJob, FlowProducer
from queues.keys import QueueKeys
from queues.pickup import decode_answer
from tests.keyspace import snapshot
from tests.transition_helpers import (
    NOW,
    TOKEN,
    event_names,
    fetch,
    field,
    finish,
    finish_options,
    lrange,
    seed_job,
    zmembers,
)


def _active(client: Redis, keys: QueueKeys, job_id: str, **fields: str) -> str:
    return seed_job(
        client,
        keys,
        job_id,
        state="active",
        name="send-invoice",
        data={"invoice": f"INV-{job_id}", "customer": "cus_NffrFeUfNV2Hib"},
        lock_token=TOKEN,
        fields=fields or None,
    )


def test_a_finish_taking_nothing_answers_exactly_the_documented_four_elements(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The raw answer of a busy worker's finish (the straight-line path)
    when nothing is ready, as any client reads it: {0, 0, 0, due}, not a job
    of 1, an id of 1 or a rate limit of 1 ms that a client testing the
    fields the way BullMQ's worker does would act on."""
    _active(redis_client, keys, "inv-5521")
    seed_job(redis_client, keys, "reminder-7", state="delayed", due_ms=NOW + 5000)
    raw = finish(redis_client, keys, "inv-5521", value='{"sent":true}', fetch_next=True)
    assert raw == [0, 0, 0, NOW + 5000]


def test_a_finish_that_leaves_nothing_ready_restarts_the_priority_counter(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The last of 37 prioritized jobs finishes, taking the next job: there
    is none, so the counter that orders prioritized jobs of one priority
    starts again, as a pick-up that finds nothing leaves it."""
    redis_client.set(keys.pc, "36")
    seed_job(redis_client, keys, "vip-37", state="prioritized", priority=1)
    assert fetch(redis_client, keys).job_id == "vip-37"
    assert redis_client.get(keys.pc) == b"37"
    finish(redis_client, keys, "vip-37", fetch_next=True)
    assert redis_client.exists(keys.pc) == 0
    assert event_names(redis_client, keys)[-2:] == [("completed", "vip-37"), ("drained", None)]


def test_the_general_finish_taking_nothing_sends_drained(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A worker recording metrics finishes through the general path; taking
    the next job finds none, so the queue is drained and says so."""
    _active(redis_client, keys, "inv-5521")
    raw = finish(
        redis_client,
        keys,
        "inv-5521",
        fetch_next=True,
        options=finish_options(max_metrics_size=60),
    )
    assert raw == [0, 0, 0, 0, []]  # the general pick-up adds its (empty) list of broken jobs
    assert event_names(redis_client, keys) == [("completed", "inv-5521"), ("drained", None)]


def test_no_drained_while_a_job_waits_and_nothing_is_prioritized(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A worker that takes no next job finishes while the next invoice
    waits: the queue is not drained, however empty prioritized is."""
    _active(redis_client, keys, "inv-5521")
    seed_job(redis_client, keys, "inv-5522", name="send-invoice")
    finish(redis_client, keys, "inv-5521")
    assert event_names(redis_client, keys) == [("completed", "inv-5521")]


def test_a_job_stamped_with_a_fractional_timestamp_finishes(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A client that stamps jobs with ``time.time() * 1000`` writes a
    timestamp with decimals; a finish does no arithmetic on it, so the job
    finishes like any other rather than being reported broken."""
    _active(redis_client, keys, "inv-5521", timestamp="1764929106123.872")
    assert finish(redis_client, keys, "inv-5521", value='{"sent":true}') == 0
    assert zmembers(redis_client, keys.completed) == ["inv-5521"]
    assert field(redis_client, keys, "inv-5521", "returnvalue") == '{"sent":true}'


def test_failing_a_parent_whose_children_are_pending_fails_it(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A parent's processor throws before its children ran (BullMQ's
    processor adds children, then waits for them): only completing waits
    for the children, a failure is recorded at once."""
    _active(redis_client, keys, "exp-3317")
    redis_client.sadd(keys.dependencies("exp-3317"), keys.job("exp-3317-part-2"))
    reason = "TypeError: Cannot read properties of undefined (reading 'rows')"
    assert finish(redis_client, keys, "exp-3317", target="failed", value=reason) == 0
    assert zmembers(redis_client, keys.failed) == ["exp-3317"]
    assert field(redis_client, keys, "exp-3317", "failedReason") == reason


ORDERS, ITEMS = QueueKeys("orders"), QueueKeys("items")


def _order_with_one_item(client: Redis, order_id: str, item_id: str) -> None:
    """A flow: order ``order_id`` waits for item ``item_id``, which a worker
    has taken (active, locked)."""
    FlowProducer(client).add(
        FlowJob(
            "ship",
            "orders",
            {"order": order_id},
            {"jobId": order_id},
            children=[FlowJob("pack", "items", {"item": item_id}, {"jobId": item_id})],
        )
    )


def test_a_child_named_by_its_parent_key_alone_releases_its_parent(redis_client: Redis) -> None:
    """A child whose hash names its parent by `parentKey` alone (no
    `parent` JSON): its finish, by a worker that takes no next job, still
    tells the parent, which leaves waiting-children for wait."""
    _order_with_one_item(redis_client, "order-8", "pack-81")
    redis_client.hdel(ITEMS.job("pack-81"), "parent")
    assert fetch(redis_client, ITEMS).job_id == "pack-81"

    assert finish(redis_client, ITEMS, "pack-81") == 0

    assert zmembers(redis_client, ORDERS.waiting_children) == []
    assert lrange(redis_client, ORDERS.wait) == ["order-8"]


def test_a_failed_child_removed_on_fail_no_longer_holds_its_parent(redis_client: Redis) -> None:
    """Without a failure policy a failed child keeps its parent waiting,
    but one whose removeOnFail deletes it can never be waited for: the
    parent's last pending child gone, the parent runs (as BullMQ does)."""
    _order_with_one_item(redis_client, "order-9", "pack-91")
    assert fetch(redis_client, ITEMS).job_id == "pack-91"
    reason = "Error: connect ECONNREFUSED 10.0.3.17:5432"
    options = finish_options(keep=t.KeepJobs.remove())

    finish(redis_client, ITEMS, "pack-91", target="failed", value=reason, options=options)

    assert redis_client.exists(ITEMS.job("pack-91")) == 0
    assert redis_client.exists(ORDERS.dependencies("order-9")) == 0
    assert zmembers(redis_client, ORDERS.waiting_children) == []
    assert lrange(redis_client, ORDERS.wait) == ["order-9"]


def test_a_finish_at_the_global_concurrency_takes_the_next_job_in_its_place(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """Two jobs run under a global concurrency of 2: the one finishing
    leaves a place, which the next job takes in the same call."""
    redis_client.hset(keys.meta, "concurrency", "2")
    _active(redis_client, keys, "inv-5521")
    _active(redis_client, keys, "inv-5520")
    seed_job(redis_client, keys, "inv-5522", name="send-invoice")
    got = decode_answer(finish(redis_client, keys, "inv-5521", fetch_next=True), "moveToFinished")
    assert got.job_id == "inv-5522"
    assert lrange(redis_client, keys.active) == ["inv-5522", "inv-5520"]


def test_a_finish_over_a_lowered_global_concurrency_takes_no_next_job(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """Three jobs run when the global concurrency is lowered to 2: one
    finishing leaves two running, the limit, so the next job stays waiting."""
    redis_client.hset(keys.meta, "concurrency", "2")
    for job_id in ("inv-5519", "inv-5520", "inv-5521"):
        _active(redis_client, keys, job_id)
    seed_job(redis_client, keys, "inv-5522", name="send-invoice")
    got = decode_answer(finish(redis_client, keys, "inv-5521", fetch_next=True), "moveToFinished")
    assert got.job_id is None
    assert lrange(redis_client, keys.wait) == ["inv-5522"]
    assert lrange(redis_client, keys.active) == ["inv-5520", "inv-5519"]


@pytest.mark.parametrize("fetch_next", [False, True], ids=["alone", "taking-next"])
def test_keeping_one_job_refuses_a_finished_set_of_the_wrong_type(
    redis_client: Redis, keys: QueueKeys, fetch_next: bool
) -> None:
    """removeOnComplete: 1 writes the finished set as any other count does,
    so a string there (a migration script's leftover) is refused by name
    before any write."""
    _active(redis_client, keys, "inv-5521")
    redis_client.set(keys.completed, "left by a migration script")
    before = snapshot(redis_client)
    options = finish_options(keep=t.KeepJobs(count=1))
    with pytest.raises(ResponseError, match=keys.completed):
        finish(redis_client, keys, "inv-5521", fetch_next=fetch_next, options=options)
    assert snapshot(redis_client) == before


@pytest.mark.parametrize("broken", ["wait", "prioritized"])
def test_a_finish_taking_no_next_job_refuses_a_ready_state_of_the_wrong_type(
    redis_client: Redis, keys: QueueKeys, broken: str
) -> None:
    """A finish that takes no next job still reads wait and prioritized
    (whether the queue is drained): one of another type is refused by name
    before any write, not found out after the job left active."""
    _active(redis_client, keys, "inv-5521")
    key = getattr(keys, broken)
    redis_client.set(key, "left by a migration script")
    before = snapshot(redis_client)
    with pytest.raises(ResponseError, match=key):
        finish(redis_client, keys, "inv-5521")
    assert snapshot(redis_client) == before
