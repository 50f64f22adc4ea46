"""moveToActive-1 against a real Redis: every step, every way it answers."""

from __future__ import annotations

import time
from typing import Any

import pytest
from redis import Redis
from redis.exceptions import ResponseError

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
    pickup_answer,
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


def test_a_delayed_job_due_at_the_very_millisecond_of_the_pickup_is_taken(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A reminder delayed until exactly the moment a worker asks (its score
    the first of that millisecond): it is due, so the pick-up promotes and
    takes it, not answers nothing and a due time of now."""
    seed_job(redis_client, keys, "reminder-7", state="delayed", due_ms=NOW, name="send-reminder")
    got = fetch(redis_client, keys)
    assert (got.job_id, got.next_delayed_due_ms) == ("reminder-7", None)
    assert event_names(redis_client, keys) == [
        ("waiting", "reminder-7"),
        ("active", "reminder-7"),
    ]


def test_a_job_taken_answers_exactly_the_documented_four_elements(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The raw answer when a job is taken (moveToActive's header): its fields,
    its id, then 0 and 0: no rate-limit wait and no delayed due time. A
    client reads those two with the job too (BullMQ's worker sets its
    rate-limit and block times from them), so a 1 there is obeyed."""
    seed_job(redis_client, keys, "exp-3317", name="export-csv")
    pickup = tr.move_to_active(keys, token=TOKEN, lock_duration_ms=LOCK_MS, now_ms=NOW)
    answer = scripts.run(redis_client, pickup)
    assert answer[1:] == [b"exp-3317", 0, 0]


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


def test_a_rate_limited_pickup_starts_a_job_as_the_common_one_does(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """On a rate-limited queue the pick-up plans the job itself (the
    straight-line path declines a limit) and starts it the same way: locked
    with the worker's token for its lock duration, stamped processedOn and,
    from a named worker only, pb, counted started once (a job on its second
    attempt again once), and the wake-up marker left while another job
    stays ready."""
    seed_job(redis_client, keys, "sms-4410", name="send-sms")
    seed_job(redis_client, keys, "sms-4411", name="send-sms", fields={"ats": "1", "atm": "1"})
    limit = RateLimit(max=30, duration_ms=1_000)
    started = {}
    for worker_name in ("sms-worker:7", ""):
        job = fetch(redis_client, keys, limiter=limit, worker_name=worker_name).job
        assert job is not None
        stored = redis_client.hgetall(keys.job(job.id))
        started[job.id] = (stored[b"ats"], stored[b"processedOn"], stored.get(b"pb"))
        assert redis_client.get(keys.lock(job.id)) == TOKEN.encode()
        assert LOCK_MS - 1_000 < redis_client.pttl(keys.lock(job.id)) <= LOCK_MS
    now = str(NOW).encode()
    assert started == {
        "sms-4410": (b"1", now, b"sms-worker:7"),
        "sms-4411": (b"2", now, None),
    }
    # The first left the wake-up marker: another job stayed ready.
    assert redis_client.zscore(keys.marker, "0") == 0


@pytest.mark.parametrize("ats", ["9007199254740993", "-9007199254740993"])
def test_a_rate_limited_pickup_counts_a_start_past_2_to_the_53_exactly(
    redis_client: Redis, keys: QueueKeys, ats: str
) -> None:
    """A count no worker reaches by running, either way past 2^53 (set by
    hand, or a writer's garbage): the planned pick-up leaves the sum to
    Redis (HINCRBY), which counts it exactly, as the straight-line one does."""
    seed_job(redis_client, keys, "sms-4412", name="send-sms", fields={"ats": ats})
    limit = RateLimit(max=30, duration_ms=1_000)
    assert fetch(redis_client, keys, limiter=limit).job_id == "sms-4412"
    assert field(redis_client, keys, "sms-4412", "ats") == str(int(ats) + 1)


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


@pytest.mark.parametrize(
    "meta",
    [
        {"max": "0", "duration": "1000"},
        {"max": "10"},
        {"max": "10", "duration": "0"},
        {"max": "10", "duration": str(2**53 + 2)},
        {"max": "10", "duration": "100000000000000000000"},
    ],
)
def test_a_queue_rate_limit_that_is_no_usable_limit_limits_nothing(
    redis_client: Redis, keys: QueueKeys, meta: dict[str, str]
) -> None:
    """A limit in the queue's meta that allows nothing or has no window (a
    max of 0, a max without a duration, a window of 0 ms, or one past the
    2^53 ms the script bounds PEXPIRE's whole number to, up to 1e20 ms,
    which PEXPIRE cannot take at all: a host's own writer) is no limit:
    every job is taken, and no limiter is counted."""
    redis_client.hset(keys.meta, mapping=meta)
    for job_id in ("sms-4420", "sms-4421", "sms-4422"):
        seed_job(redis_client, keys, job_id, name="send-sms")
    taken = [fetch(redis_client, keys).job_id for _ in range(3)]
    assert taken == ["sms-4420", "sms-4421", "sms-4422"]
    assert redis_client.exists(keys.limiter) == 0


def test_a_rate_limit_window_of_one_millisecond_still_limits(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The shortest window there is: a counter already at its max (left by
    the wider window the queue had before its limit was changed, 40 s
    still to run) limits the pick-up for the time it has left."""
    redis_client.hset(keys.meta, mapping={"max": "5", "duration": "1"})
    redis_client.set(keys.limiter, "5", px=40_000)
    seed_job(redis_client, keys, "sms-4423", name="send-sms")
    got = fetch(redis_client, keys)
    assert got.job is None
    assert 30_000 < got.rate_limit_ms <= 40_000


def test_a_rate_limit_window_of_2_to_the_53_milliseconds_still_limits(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The widest window the limit takes (2^53 ms, the last exact whole
    number; "once, ever" for a host that means it): the first job is taken,
    the second limited."""
    redis_client.hset(keys.meta, mapping={"max": "1", "duration": str(2**53)})
    for job_id in ("sms-4424", "sms-4425"):
        seed_job(redis_client, keys, job_id, name="send-sms")
    assert fetch(redis_client, keys).job_id == "sms-4424"
    limited = fetch(redis_client, keys)
    assert (limited.job, limited.rate_limit_ms > 2**52) == (None, True)


def test_a_rate_limited_pickup_takes_a_job_due_in_the_last_slot_of_this_millisecond(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A delayed job's score is its due time times 4096 plus a counter: the
    last of 4,096 jobs delayed to the same millisecond, due now, is due; the
    planned pick-up of a rate-limited queue promotes and takes it."""
    seed_job(redis_client, keys, "sms-4426", state="delayed", due_ms=NOW, name="send-sms")
    redis_client.zadd(keys.delayed, {"sms-4426": NOW * 4096 + 4095})
    got = fetch(redis_client, keys, limiter=RateLimit(max=30, duration_ms=1_000))
    assert (got.job_id, got.next_delayed_due_ms) == ("sms-4426", None)


def test_a_rate_limited_pickup_reads_prioritized_only_when_wait_runs_short(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """With two jobs or more in wait the pick-up takes the next of them
    without reading prioritized: a prioritized key another writer broke
    stops the queue only once wait runs short, where it is refused by name."""
    for job_id in ("sms-4427", "sms-4428"):
        seed_job(redis_client, keys, job_id, name="send-sms")
    redis_client.set(keys.prioritized, "left by a migration script")
    limit = RateLimit(max=30, duration_ms=1_000)
    assert fetch(redis_client, keys, limiter=limit).job_id == "sms-4427"
    with pytest.raises(ResponseError, match=keys.prioritized):
        fetch(redis_client, keys, limiter=limit)


def test_a_rate_limited_pickup_with_nothing_ready_answers_the_next_due_time(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A rate-limited queue whose only job is delayed by five seconds: the
    planned pick-up answers nothing and when that job is due."""
    seed_job(redis_client, keys, "sms-4429", state="delayed", due_ms=NOW + 5_000)
    got = fetch(redis_client, keys, limiter=RateLimit(max=30, duration_ms=1_000))
    assert (got.job, got.next_delayed_due_ms) == (None, NOW + 5_000)


@pytest.mark.parametrize("broken", ["ats", "atm"])
def test_a_rate_limited_pickup_passes_over_an_attempts_count_that_is_no_integer(
    redis_client: Redis, keys: QueueKeys, broken: str
) -> None:
    """Another writer set an attempts counter of the SMS to "2.5": the planned
    pick-up of a rate-limited queue passes it over naming the field and
    leaves it waiting, as the straight-line one does."""
    seed_job(redis_client, keys, "sms-4430", name="send-sms", fields={broken: "2.5"})
    got = fetch(redis_client, keys, limiter=RateLimit(max=30, duration_ms=1_000))
    assert (got.job_id, [(s.job_id, s.reason) for s in got.broken]) == (
        None,
        [("sms-4430", f"field:{broken}")],
    )
    assert lrange(redis_client, keys.wait) == ["sms-4430"]


def test_a_pickup_on_the_general_path_leaves_the_wake_marker_while_jobs_stay_ready(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A job whose stalled-limit failure was deferred sits at the tail of
    wait: the pick-up (the general path) fails it, takes the next job and
    leaves the wake-up marker for the other workers, since a third is ready."""
    reason = "job stalled more than allowable limit"
    seed_job(redis_client, keys, "doomed", fields={"defa": reason, "atm": "1"})
    seed_job(redis_client, keys, "next")
    seed_job(redis_client, keys, "after")
    assert fetch(redis_client, keys).job_id == "next"
    assert redis_client.zscore(keys.marker, "0") == 0


def test_a_planned_pickup_that_takes_nothing_answers_exactly_its_documented_reply(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """The raw answers of the planned pick-up (takeNextJob.lua's header) when
    it takes nothing: {0, 0, ttl, 0, {}} rate limited, {0, 0, 0, 0, {}}
    paused, {0, 0, 0, due, {}} nothing ready (due 0: nothing delayed, and
    the priority counter restarts), {fields, id, 0, 0, {}} a job taken;
    never a job id, fields, a limit or a due time of 1 that a client would
    obey."""
    limit = RateLimit(max=1, duration_ms=60_000)

    def pickup() -> Any:
        return pickup_answer(redis_client, keys, limit)

    assert pickup() == [0, 0, 0, 0, []]
    seed_job(redis_client, keys, "sms-4431", state="delayed", due_ms=NOW + 5_000)
    assert pickup() == [0, 0, 0, NOW + 5_000, []]
    redis_client.set(keys.limiter, "1", px=60_000)
    limited = pickup()
    assert (limited[:2], limited[3:]) == ([0, 0], [0, []])
    redis_client.delete(keys.limiter)
    redis_client.hset(keys.meta, "paused", "1")
    assert pickup() == [0, 0, 0, 0, []]
    redis_client.hdel(keys.meta, "paused")
    seed_job(redis_client, keys, "sms-4433", name="send-sms")
    assert pickup()[1:] == [b"sms-4433", 0, 0, []]
    # Nothing ready but the delayed job: the priority counter restarts.
    redis_client.set(keys.pc, "41")
    redis_client.delete(keys.limiter)
    assert pickup() == [0, 0, 0, NOW + 5_000, []]
    assert redis_client.exists(keys.pc) == 0


def test_a_rate_limited_pickup_of_the_last_job_leaves_no_wake_marker(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "sms-4432", name="send-sms")
    assert fetch(redis_client, keys, limiter=RateLimit(30, 1_000)).job_id == "sms-4432"
    assert redis_client.exists(keys.marker) == 0


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


def test_a_retried_job_is_answered_with_its_fields_as_its_hash_now_holds_them(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A job on its second attempt already holds processedOn, pb and ats
    from the first: the pick-up's raw answer carries each field once, with
    the values the start wrote, in the hash's own order (the fields read
    are patched, not read again)."""
    seed_job(
        redis_client,
        keys,
        "exp-3317",
        name="export-csv",
        fields={
            "processedOn": str(NOW - 60_000),
            "pb": "worker-a:3",
            "ats": "1",
            "atm": "1",
            "stacktrace": '["Error: connect ECONNREFUSED 10.0.4.21:5432"]',
        },
    )
    pickup = tr.move_to_active(
        keys, token=TOKEN, lock_duration_ms=LOCK_MS, now_ms=NOW, worker_name="worker-b:7"
    )
    answer = scripts.run(redis_client, pickup)
    stored = redis_client.hgetall(keys.job("exp-3317"))
    assert answer[0] == [item for pair in stored.items() for item in pair]
    assert (stored[b"processedOn"], stored[b"pb"], stored[b"ats"]) == (
        str(NOW).encode(),
        b"worker-b:7",
        b"2",
    )


@pytest.mark.parametrize("name", ["ats", "pb", "processedOn"])
def test_a_job_named_like_a_field_is_answered_whole(
    redis_client: Redis, keys: QueueKeys, name: str
) -> None:
    """Job names are the producer's own words: a job named ``ats`` (an
    applicant-tracking sync), ``pb`` or ``processedOn`` is answered with its
    fields intact; a name is a value, never where a field is looked for."""
    seed_job(redis_client, keys, "sync-501", name=name, data={"tenant": "acme", "since": 1699})
    pickup = tr.move_to_active(
        keys, token=TOKEN, lock_duration_ms=LOCK_MS, now_ms=NOW, worker_name="worker-b:7"
    )
    answer = scripts.run(redis_client, pickup)
    stored = redis_client.hgetall(keys.job("sync-501"))
    assert answer[0] == [item for pair in stored.items() for item in pair]
    assert stored[b"name"] == name.encode()


@pytest.mark.parametrize("limiter", [None, RateLimit(max=30, duration_ms=1_000)])
@pytest.mark.parametrize("waiting", [["invoice-88"], []])
def test_a_pickup_leaving_a_prioritized_job_ready_leaves_the_wake_marker(
    redis_client: Redis, keys: QueueKeys, waiting: list[str], limiter: RateLimit | None
) -> None:
    """The worker woken by the marker takes the one job in wait (or the
    first prioritized one) while prioritized jobs stay ready: it leaves the
    marker for the other workers blocked on it, or they sleep while jobs
    wait; on a rate-limited queue too (the planned pick-up)."""
    for job_id in waiting:
        seed_job(redis_client, keys, job_id, name="send-invoice")
    for job_id in ("refund-12", "refund-13"):
        seed_job(redis_client, keys, job_id, state="prioritized", priority=5, name="refund")
    taken = (waiting or ["refund-12"])[0]
    assert fetch(redis_client, keys, limiter=limiter).job_id == taken
    assert redis_client.zscore(keys.marker, "0") == 0
    assert (lrange(redis_client, keys.wait), lrange(redis_client, keys.active)) == ([], [taken])
    assert (
        zmembers(redis_client, keys.prioritized) == ["refund-12", "refund-13"][1 - len(waiting) :]
    )


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


def test_an_attempts_started_count_past_2_to_the_53_is_counted_exactly_on_pickup(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A count no worker reaches by running (set by hand, or a writer's
    garbage): 16 digits may not be exact as a Lua number (2^53 + 1 reads as
    2^53), so the pick-up leaves that count to Redis (HINCRBY)."""
    seed_job(redis_client, keys, "exp-3317", fields={"ats": "9007199254740993", "atm": "1"})
    assert fetch(redis_client, keys).job_id == "exp-3317"
    assert field(redis_client, keys, "exp-3317", "ats") == "9007199254740994"


def test_an_attempts_started_count_that_is_no_integer_is_passed_over_naming_it(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """Another writer set the export's attempts started to "2.5": the pick-up
    passes it over, reporting the field, and leaves it waiting as it was
    (started, it would be counted as 3 and run)."""
    seed_job(redis_client, keys, "exp-3317", fields={"ats": "2.5", "atm": "1"})
    got = fetch(redis_client, keys)
    assert (got.job_id, [(s.job_id, s.reason) for s in got.broken]) == (
        None,
        [("exp-3317", "field:ats")],
    )
    assert lrange(redis_client, keys.wait) == ["exp-3317"]
    assert field(redis_client, keys, "exp-3317", "ats") == "2.5"
