"""moveStalledJobsToWait-8 against a real Redis."""

from __future__ import annotations

import json

from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.keys import QueueKeys
from tests.transition_helpers import (
    NOW,
    STALLED_INTERVAL_MS,
    STALLED_REASON,
    TOKEN,
    events,
    fetch,
    field,
    lrange,
    seed_job,
    stalled_check,
    zmembers,
)


def test_first_check_only_marks_every_active_job_as_suspect(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "1", state="active")
    seed_job(redis_client, keys, "2", state="active", lock_token=TOKEN)
    assert stalled_check(redis_client, keys) == []
    assert redis_client.smembers(keys.stalled) == {b"1", b"2"}
    assert redis_client.get(keys.stalled_check) == str(NOW).encode()
    assert STALLED_INTERVAL_MS - 1000 < redis_client.pttl(keys.stalled_check) <= STALLED_INTERVAL_MS
    assert redis_client.xlen(keys.events) == 0


def test_a_check_within_the_interval_does_nothing(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1", state="active")
    redis_client.sadd(keys.stalled, "1")
    redis_client.set(keys.stalled_check, "1", px=STALLED_INTERVAL_MS)
    call = t.move_stalled_jobs_to_wait(
        keys, max_stalled_count=1, now_ms=NOW, stalled_interval_ms=STALLED_INTERVAL_MS
    )
    assert scripts.run(redis_client, call) == [[], []]
    assert lrange(redis_client, keys.active) == ["1"]
    assert redis_client.get(keys.stalled_check) == b"1"


def test_a_suspect_without_lock_is_recovered_to_run_next(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "waiting")
    seed_job(redis_client, keys, "dead", state="active")
    seed_job(redis_client, keys, "alive", state="active", lock_token=TOKEN)
    assert stalled_check(redis_client, keys) == []

    assert stalled_check(redis_client, keys) == ["dead"]

    assert lrange(redis_client, keys.active) == ["alive"]
    # RPUSH: the tail of wait, taken before the job that was already waiting.
    assert lrange(redis_client, keys.wait) == ["waiting", "dead"]
    assert field(redis_client, keys, "dead", "stc") == "1"
    assert field(redis_client, keys, "dead", "defa") is None
    assert redis_client.zscore(keys.marker, "0") == 0
    assert redis_client.smembers(keys.stalled) == {b"alive"}
    evs = events(redis_client, keys)
    assert [(e.event, e.job_id, e.fields) for e in evs] == [
        ("waiting", "dead", {"prev": "active"}),
        ("stalled", "dead", {}),
    ]
    assert fetch(redis_client, keys).job_id == "dead"


def test_renewing_the_lock_or_finishing_clears_the_suspicion(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "renewed", state="active", lock_token=TOKEN)
    assert stalled_check(redis_client, keys) == []
    extend = t.extend_lock(keys, "renewed", token=TOKEN, lock_duration_ms=5000)
    assert scripts.run(redis_client, extend) == 1
    # Even if the lock then vanished, the job was not a suspect at this check.
    redis_client.delete(keys.lock("renewed"))
    assert stalled_check(redis_client, keys) == []
    assert stalled_check(redis_client, keys) == ["renewed"]


def test_a_job_stalled_too_often_gets_a_deferred_failure_carried_out_at_pickup(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "flaky", state="active", fields={"stc": "1"})
    seed_job(redis_client, keys, "fine")
    redis_client.sadd(keys.stalled, "flaky")

    assert stalled_check(redis_client, keys, max_stalled=1) == ["flaky"]
    assert field(redis_client, keys, "flaky", "stc") == "2"
    assert field(redis_client, keys, "flaky", "defa") == STALLED_REASON

    got = fetch(redis_client, keys)
    assert got.job_id == "fine"
    assert zmembers(redis_client, keys.failed) == ["flaky"]
    assert field(redis_client, keys, "flaky", "failedReason") == STALLED_REASON
    names = [(e.event, e.job_id) for e in events(redis_client, keys)]
    assert names == [
        ("waiting", "flaky"),
        ("stalled", "flaky"),
        ("failed", "flaky"),
        ("active", "fine"),
    ]


def test_repeat_jobs_are_never_failed_for_stalling(redis_client: Redis, keys: QueueKeys) -> None:
    opts = {"attempts": 1, "repeat": {"every": 1000}}
    seed_job(redis_client, keys, "rep", state="active", opts=opts, fields={"stc": "5"})
    redis_client.sadd(keys.stalled, "rep")
    assert stalled_check(redis_client, keys) == ["rep"]
    assert field(redis_client, keys, "rep", "defa") is None
    assert json.loads(field(redis_client, keys, "rep", "opts") or "{}")["repeat"]


def test_paused_queue_recovers_into_paused_without_waking_workers(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.hset(keys.meta, "paused", "1")
    seed_job(redis_client, keys, "dead", state="active")
    redis_client.sadd(keys.stalled, "dead")
    assert stalled_check(redis_client, keys) == ["dead"]
    assert lrange(redis_client, keys.paused) == ["dead"]
    assert redis_client.exists(keys.wait, keys.marker) == 0


def test_legacy_markers_in_stalled_are_dropped_from_active(
    redis_client: Redis, keys: QueueKeys
) -> None:
    redis_client.lpush(keys.active, "0:17")
    redis_client.sadd(keys.stalled, "0:17")
    assert stalled_check(redis_client, keys) == []
    assert redis_client.exists(keys.active, keys.wait, keys.stalled) == 0


def test_suspects_no_longer_active_are_forgotten(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "done", state="wait")
    redis_client.sadd(keys.stalled, "done")
    assert stalled_check(redis_client, keys) == []
    assert field(redis_client, keys, "done", "stc") is None
    assert redis_client.exists(keys.stalled) == 0
