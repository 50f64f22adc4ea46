"""The bulk scripts of the queue page's buttons at edges the admin tests did
not reach, found by mutation testing (issue 26, docs/mutation.md). Real
Redis; jobs added as producers add them."""

from __future__ import annotations

from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.queue import Queue, now_ms
from tests.queue_helpers import stream_events

WELCOME = {"to": "mira.okafor@example.org", "template": "welcome-v3", "locale": "de-DE"}


def test_draining_a_paused_queue_deletes_the_jobs_its_pause_held_back(redis_client: Redis) -> None:
    """An incident: the queue was paused with a backlog, then drained. The
    backlog sits in the paused list, not wait: drain must empty it."""
    queue = Queue("emails", redis_client)
    queue.pause()
    ids = queue.add_bulk([("send-welcome", WELCOME, None)] * 12)
    assert redis_client.llen(queue.keys.paused) == 12
    assert queue.drain() == []
    assert redis_client.llen(queue.keys.paused) == 0
    assert not any(redis_client.exists(queue.keys.job(job_id)) for job_id in ids)


def test_a_drain_whose_batch_was_not_used_up_is_the_last_call(redis_client: Redis) -> None:
    """The script says "more" only when its batch was used up: 9 jobs and a
    batch of 10 are one call, which ends the drain (the drained event, the
    priority counter gone) instead of asking the caller for another."""
    queue = Queue("emails", redis_client)
    queue.add_bulk([("send-welcome", WELCOME, None)] * 6)
    queue.add_bulk([("send-welcome", WELCOME, {"priority": 2})] * 3)
    assert redis_client.exists(queue.keys.pc) == 1
    more, skipped = scripts.run(
        redis_client, admin.drain(queue.keys, delayed=False, batch=10, now_ms=now_ms())
    )
    assert (more, skipped) == (0, [])
    assert stream_events(redis_client, queue)[-1] == {"event": "drained"}
    # The priority counter goes with the prioritized jobs: nothing of them is left.
    assert redis_client.exists(queue.keys.pc) == 0


def test_retry_all_of_one_failed_job_that_wait_also_holds_leaves_it(redis_client: Redis) -> None:
    """The smallest case of issue 22's probe: the queue's one failed job was
    also pushed back to wait by hand. Retried, it would be in wait twice and
    be sent twice; it stays where it is, reported."""
    queue = Queue("emails", redis_client)
    (job_id,) = queue.add_bulk([("send-welcome", WELCOME, None)])
    redis_client.lrem(queue.keys.wait, 1, job_id)
    redis_client.zadd(queue.keys.failed, {job_id: now_ms() - 60_000})
    redis_client.hset(queue.keys.job(job_id), "failedReason", "550 5.1.1 mailbox unavailable")
    redis_client.lpush(queue.keys.wait, job_id)

    result = queue.retry_all()

    assert result.count == 0
    assert [(s.job_id, s.reason) for s in result.skipped.values()] == [
        (job_id, "states:failed,wait")
    ]
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [job_id.encode()]
    assert redis_client.zscore(queue.keys.failed, job_id) is not None
