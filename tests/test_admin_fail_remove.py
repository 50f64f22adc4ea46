"""The job page's fail and remove actions (failJob-11.lua, removeJob-12.lua)
at edges the admin tests did not reach, found by mutation testing (issue 26,
docs/mutation.md, sixth pass). Real Redis; jobs added as producers add them."""

from __future__ import annotations

import json

from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.queue import Queue, now_ms

CHARGE = {"invoice": "inv-2024-1187", "amount_cents": 4900, "currency": "EUR"}
DECLINED = "Error: card_declined: Your card has insufficient funds."


def test_failing_a_job_whose_stacktrace_is_a_json_string_starts_the_trace_afresh(
    redis_client: Redis,
) -> None:
    """A writer that stored the stack as one JSON string, not a list: it
    decodes, but is no list to append to, so the admin's fail replaces it
    rather than failing on it."""
    queue = Queue("payments", redis_client)
    job_id = queue.add("charge", CHARGE)
    stack = "Error: ETIMEDOUT\n    at TLSSocket.onTimeout (node:_tls_wrap:123:10)"
    redis_client.hset(queue.keys.job(job_id), "stacktrace", json.dumps(stack))

    queue.fail(job_id, DECLINED)

    assert queue.get_state(job_id) == "failed"
    assert json.loads(redis_client.hget(queue.keys.job(job_id), "stacktrace") or b"") == [DECLINED]


def test_failing_a_job_with_a_stack_trace_limit_of_0_keeps_no_trace(redis_client: Redis) -> None:
    """stackTraceLimit 0 keeps no lines (BullMQ 5 empties the trace for
    it), also when the admin fails the job: only failedReason says why."""
    queue = Queue("payments", redis_client)
    job_id = queue.add("charge", CHARGE, opts={"stackTraceLimit": 0})

    queue.fail(job_id, DECLINED)

    job = redis_client.hgetall(queue.keys.job(job_id))
    assert (job[b"failedReason"].decode(), job[b"stacktrace"]) == (DECLINED, b"[]")


def test_a_job_failed_by_hand_no_longer_deduplicates_new_adds(redis_client: Redis) -> None:
    """The charge was stuck, the on-call failed it, the shop sends it again
    with the same deduplication id: a new job, not the failed one's id."""
    queue = Queue("payments", redis_client)
    opts = {"deduplication": {"id": "inv-2024-1187"}}
    first = queue.add("charge", CHARGE, opts=opts)
    assert queue.add("charge", CHARGE, opts=opts) == first

    queue.fail(first, "cancelled by oncall: duplicate charge suspected")

    assert redis_client.exists(queue.keys.deduplication("inv-2024-1187")) == 0
    again = queue.add("charge", CHARGE, opts=opts)
    assert again != first
    assert queue.get_state(again) == "wait"


def test_fail_answers_exactly_0_when_done(redis_client: Redis) -> None:
    """The header's "0 done": another client of the script (a BullMQ peer's
    tool) reads the number itself, not through Queue's error mapping."""
    queue = Queue("payments", redis_client)
    job_id = queue.add("charge", CHARGE)
    call = admin.fail_job(queue.keys, job_id, reason=DECLINED, now_ms=now_ms())
    assert scripts.run(redis_client, call) == 0


def test_remove_answers_exactly_0_when_done(redis_client: Redis) -> None:
    """The header's "0 done", read by the script's other clients as fail's is."""
    queue = Queue("payments", redis_client)
    job_id = queue.add("charge", CHARGE)
    assert scripts.run(redis_client, admin.remove_job(queue.keys, job_id, now_ms=now_ms())) == 0
    assert redis_client.exists(queue.keys.job(job_id)) == 0
