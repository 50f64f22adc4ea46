"""moveToFinished-1 against a real Redis: each step, each code, the events."""

from __future__ import annotations

import json

import pytest
from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.keys import QueueKeys
from queues.pickup import decode_answer
from queues.queue import Queue
from tests.keyspace import snapshot
from tests.transition_helpers import (
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


def _active(
    client: Redis, keys: QueueKeys, job_id: str, fields: dict[str, str] | None = None
) -> str:
    return seed_job(client, keys, job_id, state="active", lock_token=TOKEN, fields=fields)


def test_completing_releases_the_job_and_records_the_result(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    _active(redis_client, keys, "2")
    redis_client.sadd(keys.stalled, "1", "2")

    assert finish(redis_client, keys, "1", value='{"sum":3}') == 0

    assert lrange(redis_client, keys.active) == ["2"]
    assert redis_client.exists(keys.lock("1")) == 0
    assert redis_client.smembers(keys.stalled) == {b"2"}
    assert field(redis_client, keys, "1", "atm") == "1"
    assert field(redis_client, keys, "1", "returnvalue") == '{"sum":3}'
    assert field(redis_client, keys, "1", "finishedOn") == str(NOW)
    assert redis_client.zscore(keys.completed, "1") == NOW
    [done] = events(redis_client, keys)
    assert (done.event, done.job_id) == ("completed", "1")
    assert done.fields == {"returnvalue": '{"sum":3}', "prev": "active"}


def test_missing_job_is_minus_1(redis_client: Redis, keys: QueueKeys) -> None:
    redis_client.lpush(keys.active, "gone")
    assert finish(redis_client, keys, "gone") == -1
    assert lrange(redis_client, keys.active) == ["gone"]


def test_lock_gone_is_minus_2_and_an_admin_failed_job_is_left_alone(
    redis_client: Redis, keys: QueueKeys
) -> None:
    # What an admin "fail" leaves: the job moved to failed, its lock deleted.
    seed_job(
        redis_client,
        keys,
        "1",
        state="active",
        fields={"failedReason": "stopped by admin", "finishedOn": "5"},
    )
    redis_client.lrem(keys.active, 1, "1")
    redis_client.zadd(keys.failed, {"1": 5})
    before = snapshot(redis_client)
    assert finish(redis_client, keys, "1", value='"late result"') == -2
    assert snapshot(redis_client) == before


def test_lock_held_by_another_token_is_minus_6_and_changes_nothing(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "1", state="active", lock_token="someone-else")
    before = snapshot(redis_client)
    assert finish(redis_client, keys, "1") == -6
    assert snapshot(redis_client) == before


def test_locked_job_not_in_active_is_minus_3_and_changes_nothing(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    redis_client.lrem(keys.active, 1, "1")
    redis_client.lpush(keys.wait, "1")
    before = snapshot(redis_client)
    assert finish(redis_client, keys, "1") == -3
    assert snapshot(redis_client) == before


def test_completing_a_parent_with_pending_or_failed_children_is_refused(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "parent")
    redis_client.sadd(keys.dependencies("parent"), keys.job("child"))
    assert finish(redis_client, keys, "parent") == -4
    redis_client.delete(keys.dependencies("parent"))
    redis_client.zadd(keys.job("parent") + ":unsuccessful", {keys.job("child"): 1})
    assert finish(redis_client, keys, "parent") == -9
    # Failing it is still allowed.
    assert finish(redis_client, keys, "parent", target="failed", value="children failed") == 0


def test_token_zero_finishes_without_a_lock_check(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1", state="active")
    assert finish(redis_client, keys, "1", token="0") == 0
    assert redis_client.zscore(keys.completed, "1") == NOW


def test_failing_records_reason_and_fields_and_exhausts_retries_on_the_last_attempt(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1", fields={"atm": "2", "defa": "stale"})
    result = finish(
        redis_client,
        keys,
        "1",
        target="failed",
        value="boom",
        options=finish_options(attempts=3),
        extra_fields={"stacktrace": json.dumps(["Traceback: boom"])},
    )
    assert result == 0
    assert field(redis_client, keys, "1", "failedReason") == "boom"
    assert field(redis_client, keys, "1", "atm") == "3"
    assert field(redis_client, keys, "1", "stacktrace") == '["Traceback: boom"]'
    assert field(redis_client, keys, "1", "defa") is None
    assert field(redis_client, keys, "1", "returnvalue") is None
    assert zmembers(redis_client, keys.failed) == ["1"]
    evs = events(redis_client, keys)
    assert [(e.event, e.job_id) for e in evs] == [
        ("failed", "1"),
        ("retries-exhausted", "1"),
        ("drained", None),
    ]
    assert evs[0].fields == {"failedReason": "boom", "prev": "active"}
    assert evs[1].fields == {"attemptsMade": "3"}


def test_a_failure_with_attempts_left_does_not_exhaust(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    finish(redis_client, keys, "1", target="failed", value="x", options=finish_options(attempts=2))
    assert event_names(redis_client, keys) == [("failed", "1"), ("drained", None)]


def test_drained_only_when_wait_active_and_prioritized_are_empty(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    _active(redis_client, keys, "2")
    seed_job(redis_client, keys, "p", state="prioritized", priority=1)
    finish(redis_client, keys, "1")
    redis_client.delete(keys.prioritized)
    finish(redis_client, keys, "2")
    assert event_names(redis_client, keys) == [
        ("completed", "1"),
        ("completed", "2"),
        ("drained", None),
    ]


def test_remove_on_complete_true_deletes_the_job_and_its_keys(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    redis_client.rpush(keys.logs("1"), "line")
    finish(redis_client, keys, "1", options=finish_options(keep=t.KeepJobs.from_option(True)))
    assert redis_client.exists(keys.job("1"), keys.logs("1"), keys.lock("1")) == 0
    assert redis_client.zcard(keys.completed) == 0
    assert event_names(redis_client, keys)[0] == ("completed", "1")


def test_keep_count_keeps_the_newest_n(redis_client: Redis, keys: QueueKeys) -> None:
    for i in range(4):
        seed_job(redis_client, keys, f"old{i}", state="wait")
        redis_client.lrem(keys.wait, 1, f"old{i}")
        redis_client.zadd(keys.completed, {f"old{i}": NOW - 1000 + i})
    _active(redis_client, keys, "new")
    finish(redis_client, keys, "new", options=finish_options(keep=t.KeepJobs.from_option(2)))
    assert zmembers(redis_client, keys.completed) == ["old3", "new"]
    for gone in ("old0", "old1", "old2"):
        assert redis_client.exists(keys.job(gone)) == 0
    assert redis_client.exists(keys.job("old3"), keys.job("new")) == 2


def test_keep_age_removes_older_jobs_up_to_the_limit(redis_client: Redis, keys: QueueKeys) -> None:
    ages = {"a": NOW - 100_000, "b": NOW - 90_000, "c": NOW - 80_000, "edge": NOW - 60_000}
    for job_id, finished in ages.items():
        redis_client.hset(keys.job(job_id), "name", "x")
        redis_client.zadd(keys.failed, {job_id: finished})
    _active(redis_client, keys, "1")
    keep = t.KeepJobs.from_option({"age": 60, "limit": 2})
    finish(redis_client, keys, "1", target="failed", value="e", options=finish_options(keep=keep))
    # Oldest first, at most `limit` per call.
    assert zmembers(redis_client, keys.failed) == ["c", "edge", "1"]
    assert redis_client.exists(keys.job("a"), keys.job("b")) == 0
    assert redis_client.exists(keys.job("c")) == 1
    # Exactly `age` old is not older than age: kept.
    keep = t.KeepJobs.from_option({"age": 60})
    _active(redis_client, keys, "2")
    finish(redis_client, keys, "2", target="failed", value="e", options=finish_options(keep=keep))
    assert zmembers(redis_client, keys.failed) == ["edge", "1", "2"]


def test_metrics_count_per_minute_newest_first_and_trimmed(
    redis_client: Redis, keys: QueueKeys
) -> None:
    minute = 60_000
    start = (NOW // minute) * minute + 1000
    times = [start, start + 1000, start + minute, start + 4 * minute]
    for i, now in enumerate(times):
        _active(redis_client, keys, str(i))
        options = finish_options(max_metrics_size=3)
        assert finish(redis_client, keys, str(i), now_ms=now, options=options) == 0
        if i == 0:
            assert redis_client.hgetall(keys.metrics_completed) == {
                b"count": b"1",
                b"prevTS": str(start).encode(),
                b"prevCount": b"0",
            }
            assert redis_client.exists(keys.metrics_data("completed")) == 0
        if i == 2:
            # The two finishes of the first minute become one point.
            assert lrange(redis_client, keys.metrics_data("completed")) == ["2"]
    # Three minutes later: the one finish of minute 2, then two empty minutes
    # (newest first), trimmed to three points.
    assert lrange(redis_client, keys.metrics_data("completed")) == ["0", "0", "1"]
    assert redis_client.hgetall(keys.metrics_completed) == {
        b"count": b"4",
        b"prevTS": str(times[3]).encode(),
        b"prevCount": b"3",
    }
    assert redis_client.exists(keys.metrics_failed) == 0


def test_no_metrics_without_max_metrics_size(redis_client: Redis, keys: QueueKeys) -> None:
    _active(redis_client, keys, "1")
    finish(redis_client, keys, "1")
    assert redis_client.exists(keys.metrics_completed) == 0


def test_deduplication_key_is_released_only_when_it_still_names_the_job(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1", fields={"deid": "mine"})
    _active(redis_client, keys, "2", fields={"deid": "taken"})
    _active(redis_client, keys, "3", fields={"deid": "throttle"})
    redis_client.set(keys.deduplication("mine"), "1")
    redis_client.set(keys.deduplication("taken"), "99")
    redis_client.set(keys.deduplication("throttle"), "3", px=60_000)
    for job_id in ("1", "2", "3"):
        finish(redis_client, keys, job_id)
    assert redis_client.exists(keys.deduplication("mine")) == 0
    assert redis_client.get(keys.deduplication("taken")) == b"99"
    # A ttl'd key (throttle mode) lives out its ttl, as in BullMQ.
    assert redis_client.get(keys.deduplication("throttle")) == b"3"


def test_fetch_next_returns_the_next_job_like_move_to_active(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    seed_job(redis_client, keys, "2")
    raw = finish(redis_client, keys, "1", fetch_next=True, options=finish_options(worker_name="w"))
    got = decode_answer(raw, "moveToFinished")
    assert got.job_id == "2"
    assert got.job is not None
    assert got.job.processed_by == "w"
    assert redis_client.get(keys.lock("2")) == TOKEN.encode()
    assert lrange(redis_client, keys.active) == ["2"]
    assert event_names(redis_client, keys) == [("completed", "1"), ("active", "2")]


def test_fetch_next_with_nothing_ready_reports_drained_and_the_next_due(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    seed_job(redis_client, keys, "d", state="delayed", due_ms=NOW + 700)
    got = decode_answer(finish(redis_client, keys, "1", fetch_next=True), "moveToFinished")
    assert (got.job, got.next_delayed_due_ms) == (None, NOW + 700)
    assert event_names(redis_client, keys) == [("completed", "1"), ("drained", None)]


def test_fetch_next_while_rate_limited_answers_the_ttl(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _active(redis_client, keys, "1")
    seed_job(redis_client, keys, "2")
    redis_client.set(keys.limiter, "1", px=4000)
    options = finish_options(limiter=t.RateLimit(max=1, duration_ms=4000))
    got = decode_answer(
        finish(redis_client, keys, "1", fetch_next=True, options=options), "moveToFinished"
    )
    assert got.job is None
    assert 3000 < got.rate_limit_ms <= 4000
    assert lrange(redis_client, keys.wait) == ["2"]


def _child_of(client: Redis, keys: QueueKeys, parent_keys: QueueKeys, **parent_flags: bool) -> None:
    parent_info = {"id": "p", "queueKey": parent_keys.base.rstrip(":"), **parent_flags}
    _active(
        client,
        keys,
        "c1",
        fields={"parentKey": parent_keys.job("p"), "parent": json.dumps(parent_info)},
    )


def test_last_child_completing_moves_the_parent_to_wait(
    redis_client: Redis, keys: QueueKeys
) -> None:
    parents = QueueKeys("parents")
    seed_job(redis_client, parents, "p")
    redis_client.lrem(parents.wait, 1, "p")
    redis_client.zadd(parents.waiting_children, {"p": NOW - 5})
    redis_client.sadd(parents.dependencies("p"), keys.job("c1"), keys.job("c2"))
    _child_of(redis_client, keys, parents)
    _active(redis_client, keys, "c2", fields={"parentKey": parents.job("p")})

    finish(redis_client, keys, "c1", value='"one"')
    assert zmembers(redis_client, parents.waiting_children) == ["p"]
    finish(redis_client, keys, "c2", value='"two"')

    assert redis_client.hgetall(parents.processed("p")) == {
        keys.job("c1").encode(): b'"one"',
        keys.job("c2").encode(): b'"two"',
    }
    assert redis_client.exists(parents.dependencies("p"), parents.waiting_children) == 0
    assert lrange(redis_client, parents.wait) == ["p"]
    assert redis_client.zscore(parents.marker, "0") == 0
    [moved] = events(redis_client, parents)
    assert (moved.event, moved.job_id, moved.fields) == (
        "waiting",
        "p",
        {"prev": "waiting-children"},
    )


def test_a_failed_child_leaves_the_parent_waiting_without_a_policy(
    redis_client: Redis, keys: QueueKeys
) -> None:
    parents = QueueKeys("parents")
    redis_client.hset(parents.job("p"), "name", "parent")
    redis_client.zadd(parents.waiting_children, {"p": 1})
    redis_client.sadd(parents.dependencies("p"), keys.job("c1"))
    _child_of(redis_client, keys, parents)
    finish(redis_client, keys, "c1", target="failed", value="bad")
    assert redis_client.smembers(parents.dependencies("p")) == {keys.job("c1").encode()}
    assert zmembers(redis_client, parents.waiting_children) == ["p"]


def test_fail_parent_on_failure_defers_the_parents_failure_to_its_pickup(
    redis_client: Redis, keys: QueueKeys
) -> None:
    parents = QueueKeys("parents")
    redis_client.hset(parents.job("p"), mapping={"name": "parent", "opts": "{}"})
    redis_client.zadd(parents.waiting_children, {"p": 1})
    redis_client.sadd(parents.dependencies("p"), keys.job("c1"), keys.job("c2"))
    _child_of(redis_client, keys, parents, fpof=True)

    finish(redis_client, keys, "c1", target="failed", value="bad")

    assert redis_client.zscore(parents.job("p") + ":unsuccessful", keys.job("c1")) == NOW
    assert lrange(redis_client, parents.wait) == ["p"]
    reason = f"child {keys.job('c1')} failed"
    assert field(redis_client, parents, "p", "defa") == reason
    # The parent's pick-up carries the failure out instead of running it.
    call = t.move_to_active(parents, token="w", lock_duration_ms=1000, now_ms=NOW)
    assert decode_answer(scripts.run(redis_client, call), "moveToFinished").job is None
    assert redis_client.zscore(parents.failed, "p") == NOW
    assert field(redis_client, parents, "p", "failedReason") == reason


def test_remove_on_fail_drops_the_child_from_a_waiting_parent(
    redis_client: Redis, keys: QueueKeys
) -> None:
    parents = QueueKeys("parents")
    redis_client.hset(parents.job("p"), mapping={"name": "parent", "priority": "4"})
    redis_client.zadd(parents.waiting_children, {"p": 1})
    redis_client.sadd(parents.dependencies("p"), keys.job("c1"))
    _child_of(redis_client, keys, parents, rdof=True)
    finish(redis_client, keys, "c1", target="failed", value="bad")
    # The parent had a priority: it goes to prioritized.
    assert zmembers(redis_client, parents.prioritized) == ["p"]
    assert redis_client.exists(parents.job("p") + ":failed") == 0


def test_admin_fail_of_an_active_job_makes_the_workers_finish_a_no_op(
    redis_client: Redis, keys: QueueKeys
) -> None:
    queue = Queue("q", redis_client)
    job_id = queue.add("long", {"n": 1})
    assert fetch(redis_client, keys).job_id == job_id
    queue.fail(job_id, "stopped by alice")
    before = snapshot(redis_client)
    assert finish(redis_client, keys, job_id, value='"too late"', fetch_next=True) == -2
    assert snapshot(redis_client) == before
    job = queue.get_job(job_id)
    assert job is not None
    assert (job.failed_reason, job.returnvalue) == ("stopped by alice", None)
    assert queue.get_state(job_id) == "failed"


@pytest.mark.parametrize("rate_limited", [False, True])
def test_a_finish_never_takes_its_own_job_again_from_wait(
    redis_client: Redis, keys: QueueKeys, rate_limited: bool
) -> None:
    """An export removed on completion whose id also sits at the tail of
    wait (a hand LPUSH: an id in two states) finishes taking the next job,
    on the straight-line path or (a queue with a rate limit) the general
    one. Its hash is gone once the finish removes it, so the pick-up passes
    its id over as missing and takes the next export; starting it again
    would leave an id in active with a stub hash of processedOn and ats."""
    if rate_limited:
        redis_client.hset(keys.meta, mapping={"max": "100", "duration": "1000"})
    _active(redis_client, keys, "exp-3317")
    redis_client.rpush(keys.wait, "exp-3317")
    seed_job(redis_client, keys, "exp-3318", state="wait", name="export-csv")
    options = finish_options(keep=t.KeepJobs.remove())
    answer = finish(redis_client, keys, "exp-3317", fetch_next=True, options=options)
    assert answer[1] == b"exp-3318"
    assert (lrange(redis_client, keys.wait), lrange(redis_client, keys.active)) == (
        [],
        ["exp-3318"],
    )
    assert redis_client.exists(keys.job("exp-3317")) == 0


def test_a_rate_limited_finish_with_nothing_ready_answers_the_next_due_time(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A queue with a rate limit finishes on the general path; with only a
    delayed job left, the finish takes nothing and answers when it is due."""
    redis_client.hset(keys.meta, mapping={"max": "100", "duration": "1000"})
    _active(redis_client, keys, "exp-3317")
    seed_job(redis_client, keys, "exp-3319", state="delayed", due_ms=NOW + 5_000)
    answer = finish(redis_client, keys, "exp-3317", fetch_next=True)
    assert answer[:4] == [0, 0, 0, NOW + 5_000]
    assert zmembers(redis_client, keys.completed) == ["exp-3317"]
