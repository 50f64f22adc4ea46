"""moveToActive-1 against a real Redis: every step, every way it answers."""

from __future__ import annotations

import time

import pytest
from redis import Redis

from queues import scripts
from queues.commands import transitions as tr
from queues.commands.transitions import Fetched, RateLimit
from queues.keys import QueueKeys
from queues.pickup import decode_answer
from tests.transition_helpers import (
    LOCK_MS,
    NOW,
    TOKEN,
    event_names,
    events,
    fetch,
    field,
    finish,
    finish_options,
    lrange,
    seed_job,
    zmembers,
)


def test_takes_the_oldest_waiting_job_locks_it_and_marks_it_started(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "1")
    seed_job(redis_client, keys, "2")
    redis_client.sadd(keys.stalled, "unrelated")

    got = fetch(redis_client, keys, worker_name="worker-a")

    assert got.job_id == "1"
    assert got.job is not None
    assert (got.rate_limit_ms, got.next_delayed_due_ms) == (0, None)
    assert lrange(redis_client, keys.wait) == ["2"]
    assert lrange(redis_client, keys.active) == ["1"]
    assert redis_client.get(keys.lock("1")) == TOKEN.encode()
    assert LOCK_MS - 1000 < redis_client.pttl(keys.lock("1")) <= LOCK_MS
    assert field(redis_client, keys, "1", "processedOn") == str(NOW)
    assert field(redis_client, keys, "1", "pb") == "worker-a"
    assert field(redis_client, keys, "1", "ats") == "1"
    # The returned fields are the hash as it is after the pick-up.
    assert got.job.processed_on == NOW
    assert got.job.attempts_started == 1
    assert got.job.data == {"n": "1"}
    [active] = events(redis_client, keys)
    assert (active.event, active.job_id, active.fields) == ("active", "1", {"prev": "waiting"})
    # Another job is still ready: the marker is left for the other workers.
    assert redis_client.zscore(keys.marker, "0") == 0
    assert redis_client.smembers(keys.stalled) == {b"unrelated"}


def test_a_second_pickup_counts_attempts_started(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1", fields={"ats": "2"})
    fetch(redis_client, keys)
    assert field(redis_client, keys, "1", "ats") == "3"
    assert field(redis_client, keys, "1", "pb") is None


def test_token_zero_takes_the_job_without_a_lock(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1")
    assert fetch(redis_client, keys, token="0").job_id == "1"
    assert redis_client.exists(keys.lock("1")) == 0
    assert lrange(redis_client, keys.active) == ["1"]


def test_empty_queue_answers_nothing_and_leaves_no_marker(
    redis_client: Redis, keys: QueueKeys
) -> None:
    got = fetch(redis_client, keys)
    assert got == Fetched(None, None, 0, None)
    assert redis_client.exists(keys.marker, keys.active, keys.events) == 0


def test_nothing_ready_answers_the_next_delayed_due_time(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "later", state="delayed", due_ms=NOW + 5000)
    seed_job(redis_client, keys, "latest", state="delayed", due_ms=NOW + 9000)
    got = fetch(redis_client, keys)
    assert got.job is None
    assert got.next_delayed_due_ms == NOW + 5000
    assert zmembers(redis_client, keys.delayed) == ["later", "latest"]


def test_nothing_ready_answers_exactly_the_documented_four_elements(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The raw answer, as any client of the script reads it (moveToActive's
    header): {0, 0, 0, due}, a falsy job and id, the next delayed job's due
    time; not a job id of 1 or fields of 1 that a client testing for a job
    the way BullMQ's worker does (``if (jobData)``) would take for one."""
    seed_job(redis_client, keys, "reminder-7", state="delayed", due_ms=NOW + 5000)
    pickup = tr.move_to_active(keys, token=TOKEN, lock_duration_ms=LOCK_MS, now_ms=NOW)
    assert scripts.run(redis_client, pickup) == [0, 0, 0, NOW + 5000]


def test_due_delayed_jobs_are_promoted_with_waiting_events_then_one_is_taken(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "old", state="delayed", due_ms=NOW - 10)
    seed_job(redis_client, keys, "now", state="delayed", due_ms=NOW)
    seed_job(redis_client, keys, "prio", state="delayed", due_ms=NOW - 5, priority=2)
    seed_job(redis_client, keys, "future", state="delayed", due_ms=NOW + 1)

    got = fetch(redis_client, keys)

    # Promoted in due order onto wait (LPUSH), so the oldest due runs first.
    assert got.job_id == "old"
    assert lrange(redis_client, keys.wait) == ["now"]
    assert zmembers(redis_client, keys.prioritized) == ["prio"]
    assert zmembers(redis_client, keys.delayed) == ["future"]
    for job_id in ("old", "now", "prio"):
        assert field(redis_client, keys, job_id, "delay") == "0"
    assert field(redis_client, keys, "future", "delay") == "1"
    evs = events(redis_client, keys)
    assert [(e.event, e.job_id, e.fields.get("prev")) for e in evs] == [
        ("waiting", "old", "delayed"),
        ("waiting", "prio", "delayed"),
        ("waiting", "now", "delayed"),
        ("active", "old", "waiting"),
    ]


def test_promotion_moves_at_most_1000_delayed_jobs_per_call(
    redis_client: Redis, keys: QueueKeys
) -> None:
    pipe = redis_client.pipeline(transaction=False)
    for i in range(1005):
        pipe.hset(keys.job(str(i)), mapping={"name": "n", "data": "{}", "opts": "{}"})
        pipe.zadd(keys.delayed, {str(i): (NOW - 2000 + i) * 4096})
    pipe.execute()
    assert fetch(redis_client, keys).job_id == "0"
    assert redis_client.zcard(keys.delayed) == 5
    assert redis_client.llen(keys.wait) == 999
    assert redis_client.xlen(keys.events) == 1001


def test_delayed_ids_without_a_hash_are_dropped_not_promoted(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.zadd(keys.delayed, {"ghost": (NOW - 1) * 4096})
    assert fetch(redis_client, keys).job is None
    assert redis_client.exists(keys.delayed, keys.wait, keys.events) == 0


def test_paused_queue_answers_nothing_and_promotes_into_paused(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.hset(keys.meta, "paused", "1")
    seed_job(redis_client, keys, "held", state="paused")
    seed_job(redis_client, keys, "due", state="delayed", due_ms=NOW - 1)
    got = fetch(redis_client, keys)
    assert (got.job, got.rate_limit_ms, got.next_delayed_due_ms) == (None, 0, None)
    assert lrange(redis_client, keys.paused) == ["due", "held"]
    assert redis_client.exists(keys.active, keys.marker) == 0
    assert event_names(redis_client, keys) == [("waiting", "due")]


def test_global_concurrency_reached_answers_nothing(redis_client: Redis, keys: QueueKeys) -> None:
    redis_client.hset(keys.meta, "concurrency", "1")
    seed_job(redis_client, keys, "running", state="active", lock_token="other")
    seed_job(redis_client, keys, "1")
    assert fetch(redis_client, keys).job is None
    assert lrange(redis_client, keys.wait) == ["1"]
    redis_client.lrem(keys.active, 1, "running")
    assert fetch(redis_client, keys).job_id == "1"


def test_worker_rate_limit_answers_the_limiter_pttl(redis_client: Redis, keys: QueueKeys) -> None:
    for i in range(3):
        seed_job(redis_client, keys, str(i))
    limit = RateLimit(max=2, duration_ms=10_000)
    assert fetch(redis_client, keys, limiter=limit).job_id == "0"
    assert fetch(redis_client, keys, limiter=limit).job_id == "1"
    assert redis_client.get(keys.limiter) == b"2"
    got = fetch(redis_client, keys, limiter=limit)
    assert got.job is None
    assert 9_000 < got.rate_limit_ms <= 10_000
    assert abs(got.rate_limit_ms - redis_client.pttl(keys.limiter)) < 100
    assert lrange(redis_client, keys.wait) == ["2"]
    # A new window: the counter expired.
    redis_client.delete(keys.limiter)
    assert fetch(redis_client, keys, limiter=limit).job_id == "2"


def test_queue_rate_limit_in_meta_wins_over_the_workers(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.hset(keys.meta, mapping={"max": "1", "duration": "5000"})
    seed_job(redis_client, keys, "a")
    seed_job(redis_client, keys, "b")
    generous = RateLimit(max=100, duration_ms=60_000)
    assert fetch(redis_client, keys, limiter=generous).job_id == "a"
    assert 4_000 < redis_client.pttl(keys.limiter) <= 5_000
    limited = fetch(redis_client, keys, limiter=generous)
    assert 0 < limited.rate_limit_ms <= 5_000


def test_a_limiter_counter_without_expiry_does_not_block_forever(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.set(keys.limiter, "50")
    seed_job(redis_client, keys, "1")
    assert fetch(redis_client, keys, limiter=RateLimit(2, 1000)).job_id == "1"
    assert redis_client.get(keys.limiter) == b"1"
    assert redis_client.pttl(keys.limiter) > 0


def test_wait_runs_before_prioritized_and_priorities_run_lowest_first(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "p5", state="prioritized", priority=5)
    seed_job(redis_client, keys, "p1a", state="prioritized", priority=1)
    seed_job(redis_client, keys, "p1b", state="prioritized", priority=1)
    seed_job(redis_client, keys, "plain")
    order = [fetch(redis_client, keys).job_id for _ in range(4)]
    assert order == ["plain", "p1a", "p1b", "p5"]
    assert lrange(redis_client, keys.active) == ["p5", "p1b", "p1a", "plain"]
    assert redis_client.exists(keys.pc) == 1
    # Finding prioritized empty resets the counter.
    assert fetch(redis_client, keys).job is None
    assert redis_client.exists(keys.pc) == 0


def test_lifo_jobs_pushed_to_the_tail_run_next(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "fifo1")
    seed_job(redis_client, keys, "fifo2")
    seed_job(redis_client, keys, "lifo")
    # Undo the LPUSH of the seed and place it like an add with lifo (RPUSH).
    redis_client.lrem(keys.wait, 1, "lifo")
    redis_client.rpush(keys.wait, "lifo")
    assert [fetch(redis_client, keys).job_id for _ in range(3)] == ["lifo", "fifo1", "fifo2"]


def test_legacy_zero_colon_markers_are_skipped_and_removed(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "1")
    redis_client.rpush(keys.wait, "0:123", "0:0")
    got = fetch(redis_client, keys)
    assert got.job_id == "1"
    assert lrange(redis_client, keys.wait) == []
    assert lrange(redis_client, keys.active) == ["1"]


def test_only_legacy_markers_fall_through_to_prioritized(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.rpush(keys.wait, "0:0")
    seed_job(redis_client, keys, "p", state="prioritized", priority=3)
    assert fetch(redis_client, keys).job_id == "p"
    assert lrange(redis_client, keys.active) == ["p"]


def test_orphan_ids_whose_hash_is_gone_are_dropped(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "real")
    redis_client.rpush(keys.wait, "ghost")
    assert fetch(redis_client, keys).job_id == "real"
    assert lrange(redis_client, keys.active) == ["real"]


def test_a_deferred_failure_fails_the_job_on_pickup_and_the_next_job_runs(
    redis_client: Redis, keys: QueueKeys
) -> None:
    reason = "job stalled more than allowable limit"
    seed_job(
        redis_client,
        keys,
        "doomed",
        fields={"defa": reason, "atm": "1", "deid": "d1"},
    )
    redis_client.set(keys.deduplication("d1"), "doomed")
    seed_job(redis_client, keys, "next")

    got = fetch(redis_client, keys)

    assert got.job_id == "next"
    assert lrange(redis_client, keys.active) == ["next"]
    assert redis_client.zscore(keys.failed, "doomed") == NOW
    assert field(redis_client, keys, "doomed", "failedReason") == reason
    assert field(redis_client, keys, "doomed", "finishedOn") == str(NOW)
    assert field(redis_client, keys, "doomed", "atm") == "2"
    assert field(redis_client, keys, "doomed", "defa") is None
    assert redis_client.exists(keys.lock("doomed"), keys.deduplication("d1")) == 0
    evs = events(redis_client, keys)
    assert [(e.event, e.job_id) for e in evs] == [("failed", "doomed"), ("active", "next")]
    assert evs[0].fields["failedReason"] == reason


def test_the_last_job_taken_leaves_no_wake_marker(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "only")
    assert fetch(redis_client, keys).job_id == "only"
    assert redis_client.exists(keys.marker) == 0


@pytest.mark.cluster
def test_a_job_lifecycle_runs_on_a_redis_cluster_with_a_hash_tag_prefix(cluster: Redis) -> None:
    keys = QueueKeys("clustered", prefix="{bull}")
    for job_id in ("1", "2", "3"):
        seed_job(cluster, keys, job_id)
    first = fetch(cluster, keys)
    assert first.job_id == "1"
    extend = tr.extend_lock(keys, "1", token=TOKEN, lock_duration_ms=LOCK_MS)
    assert scripts.run(cluster, extend) == 1
    delay = tr.move_to_delayed(keys, "1", token=TOKEN, now_ms=NOW, delay_ms=0)
    assert scripts.run(cluster, delay) == 0
    options = finish_options(max_metrics_size=5, keep=tr.KeepJobs(count=1))
    nxt = fetch(cluster, keys)
    assert nxt.job_id == "2"
    answer = finish(cluster, keys, "2", fetch_next=True, options=options)
    # The promoted job was LPUSHed: 3, already waiting, runs first.
    assert decode_answer(answer, "moveToActive").job_id == "3"
    cluster.delete(keys.lock("3"))
    stalled = tr.move_stalled_jobs_to_wait(
        keys, max_stalled_count=1, now_ms=NOW, stalled_interval_ms=1
    )
    assert tr.decode_stalled(scripts.run(cluster, stalled)).recovered == []
    time.sleep(0.01)
    assert tr.decode_stalled(scripts.run(cluster, stalled)).recovered == ["3"]
    assert cluster.lrange(keys.wait, 0, -1) == [b"1", b"3"]
    assert cluster.zrange(keys.completed, 0, -1) == [b"2"]
    assert cluster.hget(keys.metrics_completed, "count") == b"1"
