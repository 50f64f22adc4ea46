"""Which states hold a job (includes/locateJob.lua, shared by the bulk and
one-job scripts), pinned where bench/mutate.py's ninth pass
(docs/mutation.md) found their tests silent."""

from __future__ import annotations

from redis import Redis

from queues.queue import Queue

REMINDERS = 2_500
# Ranks in the delayed set (1-based) at the edges of promote-all's slices of
# 1,000 ids a ZMSCORE: the first of all, the last of the first slice, the
# first of the second and of the third.
DOUBLED = ("1", "1000", "1001", "2001")


def test_promote_all_in_one_large_batch_leaves_every_job_another_set_holds_too(
    redis_client: Redis,
) -> None:
    # 2,500 appointment reminders delayed; a crashed writer left four of them
    # in failed as well. Promoted, those would run while failed still lists
    # them: each is left where it is and reported, wherever its slice starts.
    queue = Queue("reminders", redis_client)
    ids = queue.add_bulk(
        [
            ("sms-reminder", {"patient": f"p-{n:05}", "clinic": "north"}, {"delay": 3_600_000 + n})
            for n in range(REMINDERS)
        ]
    )
    assert ids[:2] == ["1", "2"]
    redis_client.zadd(queue.keys.failed, dict.fromkeys(DOUBLED, 1_764_900_000_000))

    result = queue.promote_all(batch=REMINDERS)
    assert sorted(result.skipped, key=int) == list(DOUBLED)
    assert {job.reason for job in result.skipped.values()} == {"states:delayed,failed"}
    assert result.count == REMINDERS - len(DOUBLED)
    assert sorted(i.decode() for i in redis_client.zrange(queue.keys.delayed, 0, -1)) == sorted(
        DOUBLED
    )


def test_removing_a_job_a_list_holds_twice_takes_every_copy_out(redis_client: Redis) -> None:
    # A producer retried its LPUSH after a timeout on a flaky link: the
    # welcome email's id is in wait twice. Removed, no copy may stay behind
    # for a worker to take an id whose hash is gone.
    queue = Queue("emails", redis_client)
    job_id = queue.add("welcome", {"to": "li.wei@example.com", "template": "welcome"})
    kept = queue.add("welcome", {"to": "sam.okafor@example.com", "template": "welcome"})
    redis_client.lpush(queue.keys.wait, job_id)
    queue.remove(job_id)
    assert [i.decode() for i in redis_client.lrange(queue.keys.wait, 0, -1)] == [kept]
    assert not redis_client.exists(queue.keys.job(job_id))


def test_draining_leaves_a_waiting_job_the_one_running_job_is_a_copy_of(
    redis_client: Redis,
) -> None:
    # A worker runs the one job active holds, and a stray copy of its id sits
    # in wait. Drained, its hash would go from under the running worker: it
    # is left and reported, however short the active list is.
    queue = Queue("exports", redis_client)
    running = queue.add("csv-export", {"account": "acme-gmbh", "rows": 48_210})
    queued = queue.add("csv-export", {"account": "globex", "rows": 1_204})
    redis_client.lrem(queue.keys.wait, 1, running)
    redis_client.lpush(queue.keys.active, running)
    redis_client.rpush(queue.keys.wait, running)
    skipped = queue.drain()
    assert [(job.job_id, job.reason) for job in skipped] == [(running, "states:wait,active")]
    assert [i.decode() for i in redis_client.lrange(queue.keys.wait, 0, -1)] == [running]
    assert redis_client.exists(queue.keys.job(running)) == 1
    assert redis_client.exists(queue.keys.job(queued)) == 0


def test_draining_leaves_a_waiting_job_any_running_job_is_a_copy_of(redis_client: Redis) -> None:
    # Three exports run; the stray copy in wait is of the one taken first,
    # at active's tail: every running job is looked at, not active's head.
    queue = Queue("exports", redis_client)
    running = [
        queue.add("csv-export", {"account": account, "rows": rows})
        for account, rows in (("acme-gmbh", 48_210), ("initech", 912), ("umbrella", 77_003))
    ]
    for job_id in running:
        redis_client.lrem(queue.keys.wait, 1, job_id)
        redis_client.lpush(queue.keys.active, job_id)
    redis_client.rpush(queue.keys.wait, running[0])
    skipped = queue.drain()
    assert [(job.job_id, job.reason) for job in skipped] == [(running[0], "states:wait,active")]
    assert redis_client.exists(queue.keys.job(running[0])) == 1
