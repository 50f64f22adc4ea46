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


def _young(n: int) -> bool:
    """Every third job was added just now; the oldest and the newest are old,
    so the list's two ends and the 1,001st entry are ones to delete."""
    return n % 3 == 2


def test_cleaning_a_long_wait_list_by_age_takes_exactly_the_old_jobs_across_chunks(
    redis_client: Redis,
) -> None:
    """A backlog of 2,500 sign-up emails, most added an hour ago (a producer
    replaying its outbox), every third just now: the clean reads the list in
    chunks of 1,000 from its tail and must delete exactly the old ones,
    wherever a chunk's edge falls, and keep the young in their order."""
    queue = Queue("emails", redis_client)
    hour_ago = now_ms() - 3_600_000
    specs = [
        ("send-welcome", {**WELCOME, "n": n}, None if _young(n) else {"timestamp": hour_ago + n})
        for n in range(2500)
    ]
    ids = queue.add_bulk(specs)
    young = [job_id for n, job_id in enumerate(ids) if _young(n)]
    old = [job_id for n, job_id in enumerate(ids) if not _young(n)]

    removed = queue.clean("wait", grace_ms=60_000).ids

    assert sorted(removed, key=int) == old
    assert [j.decode() for j in redis_client.lrange(queue.keys.wait, 0, -1)] == young[::-1]
    assert not any(redis_client.exists(queue.keys.job(job_id)) for job_id in old)


def test_cleaning_a_large_delayed_set_by_age_takes_exactly_the_old_jobs(
    redis_client: Redis,
) -> None:
    """The same for 2,500 reminders due tomorrow a second apart, read in
    chunks of 1,000 by when they are due: the young ones were added an hour
    later with an hour less of delay, so old and young alternate in the set."""
    queue = Queue("emails", redis_client)
    hour_ago = now_ms() - 3_600_000
    due = 86_400_000
    specs = [
        (
            "send-reminder",
            {**WELCOME, "n": n},
            {"delay": due + 1000 * n - 3_600_000}
            if _young(n)
            else {"delay": due + 1000 * n, "timestamp": hour_ago},
        )
        for n in range(2500)
    ]
    ids = queue.add_bulk(specs)
    young = [job_id for n, job_id in enumerate(ids) if _young(n)]
    old = [job_id for n, job_id in enumerate(ids) if not _young(n)]
    assert [j.decode() for j in redis_client.zrange(queue.keys.delayed, 0, -1)] == ids

    removed = queue.clean("delayed", grace_ms=60_000).ids

    assert sorted(removed, key=int) == old
    assert [j.decode() for j in redis_client.zrange(queue.keys.delayed, 0, -1)] == young
