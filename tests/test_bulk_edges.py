"""The bulk scripts of the queue page's buttons at edges the admin tests did
not reach, found by mutation testing (issue 26, docs/mutation.md). Real
Redis; jobs added as producers add them."""

from __future__ import annotations

import pytest
from redis import Redis

from queues import scripts
from queues.commands import admin
from queues.commands import transitions as t
from queues.errors import CorruptKey
from queues.queue import BulkStopped, Queue, now_ms
from tests.queue_helpers import stream_events
from tests.test_queue_admin import finish

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


def _listed(
    client: Redis, queue: Queue, start: tuple[int, int], budget: int
) -> tuple[int, int, list[tuple[str, str]]]:
    """One listedJobs call: (next list, next index, [(id, list name), ...])."""
    call = admin.listed_jobs(queue.keys, "failed", start=start, budget=budget)
    next_list, next_index, flat = scripts.run(client, call)
    found = [
        (job_id.decode(), name.decode()) for job_id, name in zip(flat[::2], flat[1::2], strict=True)
    ]
    return int(next_list), int(next_index), found


def _failed_and_pushed_back(client: Redis, queue: Queue, job_ids: list[str]) -> None:
    """Jobs that failed an hour ago and that someone also pushed back to wait
    by hand afterwards (issue 22's probe): the failed set holds them too."""
    hour_ago = now_ms() - 3_600_000
    client.zadd(queue.keys.failed, dict.fromkeys(job_ids, hour_ago))


def test_the_search_for_listed_jobs_looks_at_exactly_its_budget_a_call(
    redis_client: Redis,
) -> None:
    """Each call looks at at most its budget of list entries, carries what is
    left of it over to the next list, and says where the next call starts:
    wait's 2 entries, empty paused and 1 of active with a budget of 3, then
    active's others one at a time. A call that read one entry more, stopped
    with 1 left, or stayed in a finished list would skip an entry or never
    end."""
    queue = Queue("emails", redis_client)
    running = queue.add_bulk([("send-welcome", WELCOME, None)] * 3)
    for _ in running:  # three workers took them
        pickup = t.move_to_active(queue.keys, token="tok", lock_duration_ms=30_000, now_ms=now_ms())
        scripts.run(redis_client, pickup)
    waiting = queue.add_bulk([("send-welcome", WELCOME, None)] * 2)
    wait_order = [j.decode() for j in redis_client.lrange(queue.keys.wait, 0, -1)]
    active_order = [j.decode() for j in redis_client.lrange(queue.keys.active, 0, -1)]
    assert sorted(wait_order) == sorted(waiting)
    assert sorted(active_order) == sorted(running)
    _failed_and_pushed_back(redis_client, queue, [wait_order[1], *active_order])

    assert _listed(redis_client, queue, (1, 0), 3) == (
        3,
        1,
        [(wait_order[1], "wait"), (active_order[0], "active")],
    )
    assert _listed(redis_client, queue, (3, 1), 1) == (3, 2, [(active_order[1], "active")])
    assert _listed(redis_client, queue, (3, 2), 1) == (3, 3, [(active_order[2], "active")])
    # Active is done with the budget used up exactly: the next call finds it
    # empty from there, which ends the search.
    assert _listed(redis_client, queue, (3, 3), 5) == (0, 0, [])


def test_the_search_for_listed_jobs_reads_a_long_wait_list_whole_across_its_slices(
    redis_client: Redis,
) -> None:
    """ZMSCORE is asked 1,000 ids at a time: a backlog of 2,500 emails whose
    1,000th, 1,001st and 2,500th entries (and the first) failed earlier and
    were pushed back is found once each, none twice, none skipped at a
    slice's edge."""
    queue = Queue("emails", redis_client)
    queue.add_bulk([("send-welcome", {**WELCOME, "n": n}, None) for n in range(2500)])
    wait_order = [j.decode() for j in redis_client.lrange(queue.keys.wait, 0, -1)]
    pushed_back = [wait_order[i] for i in (0, 998, 999, 1000, 1001, 1999, 2000, 2499)]
    _failed_and_pushed_back(redis_client, queue, pushed_back)

    assert _listed(redis_client, queue, (1, 0), 5000) == (
        0,
        0,
        [(job_id, "wait") for job_id in pushed_back],
    )


def test_a_one_job_retry_answers_0_done_then_minus_3_once_the_job_moved(
    redis_client: Redis,
) -> None:
    """requeueJob's answers are its contract with every client that calls it
    (the dashboard's set actions, Queue.retry, a host's own code): 0 done, -3
    when the job is no longer in the source set. A bounce that failed with a
    real SMTP reply is retried once; the second retry finds it in wait."""
    queue = Queue("emails", redis_client)
    (job_id,) = queue.add_bulk([("send-welcome", WELCOME, None)])
    redis_client.lrem(queue.keys.wait, 1, job_id)
    redis_client.zadd(queue.keys.failed, {job_id: now_ms() - 60_000})
    redis_client.hset(
        queue.keys.job(job_id), "failedReason", "550 5.1.1 <mira.okafor@example.org>: unknown"
    )
    retry = admin.requeue_job(queue.keys, job_id, "failed")

    assert scripts.run(redis_client, retry) == 0
    assert scripts.run(redis_client, retry) == -3
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [job_id.encode()]


# -- cleanJobsInSet at its edges ------------------------------------------------------


def _failed_bounces(client: Redis, queue: Queue, count: int, *, at: int) -> list[str]:
    """``count`` welcome emails that bounced (one after another, from ``at``)."""
    ids = queue.add_bulk([("send-welcome", {**WELCOME, "n": n}, None) for n in range(count)])
    finish(client, queue, ids, "failed", at=at)
    for job_id in ids:
        client.hset(queue.keys.job(job_id), "failedReason", "550 5.1.1 mailbox unavailable")
    return ids


def test_a_clean_in_small_batches_passes_over_the_broken_job_it_reported(
    redis_client: Redis,
) -> None:
    """The oldest failed job's key was overwritten by hand (a string): each
    batch of a clean with a limit reads from the front of the set, so the
    next batch must pass over the job the first one reported, or it reads
    only that one again and never reaches the rest."""
    queue = Queue("emails", redis_client)
    ids = _failed_bounces(redis_client, queue, 6, at=now_ms() - 3_600_000)
    redis_client.delete(queue.keys.job(ids[0]))
    redis_client.set(queue.keys.job(ids[0]), "550 5.1.1 mailbox unavailable")

    result = queue.clean("failed", grace_ms=60_000, limit=3)

    assert result.ids == ids[1:4]
    assert [(s.job_id, s.reason) for s in result.skipped.values()] == [(ids[0], "type:string")]
    remaining = [j.decode() for j in redis_client.zrange(queue.keys.failed, 0, -1)]
    assert remaining == [ids[0], *ids[4:]]


def test_a_clean_of_waiting_or_delayed_jobs_deletes_no_more_than_its_limit(
    redis_client: Redis,
) -> None:
    """Five reminders added an hour ago, due tomorrow, and five sign-up
    emails stuck in wait: a clean with a limit of 2 deletes two of each
    (the oldest), not a third."""
    queue = Queue("emails", redis_client)
    hour_ago = now_ms() - 3_600_000
    later = {"delay": 86_400_000, "timestamp": hour_ago}
    delayed = queue.add_bulk([("send-reminder", WELCOME, later)] * 5)
    waiting = queue.add_bulk([("send-welcome", WELCOME, {"timestamp": hour_ago})] * 5)

    assert queue.clean("delayed", grace_ms=60_000, limit=2).ids == delayed[:2]
    assert queue.clean("wait", grace_ms=60_000, limit=2).ids == waiting[:2]
    assert queue.get_counts("delayed", "wait") == {"delayed": 3, "wait": 3}


def test_a_job_created_exactly_at_the_cutoff_is_cleaned(redis_client: Redis) -> None:
    """The cutoff is "created at or before": a sign-up email whose timestamp
    is the cutoff itself goes, one a millisecond younger stays."""
    queue = Queue("emails", redis_client)
    cutoff = now_ms() - 3_600_000
    at_cutoff, younger = queue.add_bulk(
        [
            ("send-welcome", WELCOME, {"timestamp": cutoff}),
            ("send-welcome", WELCOME, {"timestamp": cutoff + 1}),
        ]
    )
    call = admin.clean_jobs(queue.keys, "wait", cutoff_ms=cutoff, limit=10, now_ms=now_ms())

    deleted, skipped, _ = scripts.run(redis_client, call)

    assert (deleted, skipped) == ([at_cutoff.encode()], [])
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [younger.encode()]


def test_a_clean_of_wait_leaves_an_old_bullmq_marker_and_the_young_jobs_in_order(
    redis_client: Redis,
) -> None:
    """A queue that older BullMQ workers served still holds their "0:<delay>"
    marker in wait; it is no job, so a clean neither deletes nor reports it.
    Exactly one old job deleted (one position overwritten, then swept) leaves
    wait as it was around it; the clean says so in one cleaned event."""
    queue = Queue("emails", redis_client)
    hour_ago = now_ms() - 3_600_000
    (old,) = queue.add_bulk([("send-welcome", WELCOME, {"timestamp": hour_ago})])
    redis_client.lpush(queue.keys.wait, "0:1500")
    young = queue.add_bulk([("send-welcome", WELCOME, None)] * 2)
    redis_client.delete(queue.keys.events)

    result = queue.clean("wait", grace_ms=60_000)

    assert (result.ids, result.skipped) == ([old], {})
    assert redis_client.lrange(queue.keys.wait, 0, -1) == [
        young[1].encode(),
        young[0].encode(),
        b"0:1500",
    ]
    assert stream_events(redis_client, queue) == [{"event": "cleaned", "count": "1"}]
    # A clean that finds nothing to delete says nothing.
    assert queue.clean("wait", grace_ms=60_000).ids == []
    assert len(stream_events(redis_client, queue)) == 1


def test_a_clean_refuses_a_broken_sorted_set_it_only_reads(redis_client: Redis) -> None:
    """Cleaning completed jobs reads the failed set (a job in both must not
    lose its hash): a failed key someone overwrote with a string refuses the
    clean naming that key, before anything is deleted."""
    queue = Queue("emails", redis_client)
    ids = queue.add_bulk([("send-welcome", WELCOME, None)] * 3)
    finish(redis_client, queue, ids, "completed", at=now_ms() - 3_600_000)
    redis_client.delete(queue.keys.failed)
    redis_client.set(queue.keys.failed, "oops")

    with pytest.raises(BulkStopped) as stopped:
        queue.clean("completed", grace_ms=60_000)

    assert isinstance(stopped.value.refusal, CorruptKey)
    assert stopped.value.refusal.key == queue.keys.failed
    assert redis_client.zcard(queue.keys.completed) == 3


def test_a_clean_keeps_every_failed_job_a_list_also_holds(redis_client: Redis) -> None:
    """Issue 22's probe, twice over: two bounced emails were pushed back to
    wait by hand and a third is running again. Cleaning failed jobs leaves
    all three (deleting a hash would leave the list an id without a job)
    and reports each; the other bounces go."""
    queue = Queue("emails", redis_client)
    ids = _failed_bounces(redis_client, queue, 6, at=now_ms() - 3_600_000)
    redis_client.lpush(queue.keys.wait, ids[1], ids[4])
    redis_client.lpush(queue.keys.active, ids[2])

    result = queue.clean("failed", grace_ms=60_000)

    assert sorted(result.ids) == sorted([ids[0], ids[3], ids[5]])
    assert {s.job_id: s.reason for s in result.skipped.values()} == {
        ids[1]: "states:failed,wait",
        ids[4]: "states:failed,wait",
        ids[2]: "states:failed,active",
    }
    assert all(redis_client.exists(queue.keys.job(i)) for i in (ids[1], ids[2], ids[4]))


def test_one_clean_call_reads_a_long_list_chunk_after_chunk_without_a_gap(
    redis_client: Redis,
) -> None:
    """One call of the script with a limit above the list's length reads
    wait from its tail in chunks of 1,000: a backlog of 2,500 sign-up emails
    all added an hour ago goes whole, the entries at the chunks' edges
    too. (Queue.clean's calls of 1,000 each rescan from the tail, which
    would hide a gap left at an edge by a call that reached its limit.)"""
    queue = Queue("emails", redis_client)
    hour_ago = now_ms() - 3_600_000
    specs = [
        ("send-welcome", {**WELCOME, "n": n}, {"timestamp": hour_ago + n}) for n in range(2500)
    ]
    ids = queue.add_bulk(specs)
    call = admin.clean_jobs(
        queue.keys, "wait", cutoff_ms=now_ms() - 60_000, limit=5000, now_ms=now_ms()
    )

    deleted, skipped, _ = scripts.run(redis_client, call)

    assert (len(deleted), skipped) == (2500, [])
    assert sorted(job_id.decode() for job_id in deleted) == sorted(ids)
    assert redis_client.llen(queue.keys.wait) == 0
