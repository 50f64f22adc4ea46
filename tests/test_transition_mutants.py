"""The stalled check and the move to delayed, each pinned where bench/mutate.py's
seventh pass (docs/mutation.md) found their tests silent."""

from __future__ import annotations

from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.errors import SkippedJob
from queues.keys import QueueKeys
from tests.transition_helpers import (
    NOW,
    STALLED_INTERVAL_MS,
    STALLED_REASON,
    TOKEN,
    field,
    lrange,
    seed_job,
    stalled_check,
)


def test_a_worker_allowing_two_stalls_hands_a_job_back_a_second_time(
    redis_client: Redis, keys: QueueKeys
) -> None:
    # Worker(max_stalled_count=2): an invoice render whose worker was OOM-killed
    # once already is recovered again, not failed; the third stall fails it.
    seed_job(redis_client, keys, "4821", state="active", fields={"stc": "1"})
    redis_client.sadd(keys.stalled, "4821")
    assert stalled_check(redis_client, keys, max_stalled=2) == ["4821"]
    assert field(redis_client, keys, "4821", "stc") == "2"
    assert field(redis_client, keys, "4821", "defa") is None
    assert lrange(redis_client, keys.wait) == ["4821"]

    redis_client.lrem(keys.wait, 1, "4821")
    redis_client.lpush(keys.active, "4821")
    redis_client.sadd(keys.stalled, "4821")
    assert stalled_check(redis_client, keys, max_stalled=2) == ["4821"]
    assert field(redis_client, keys, "4821", "defa") == STALLED_REASON


def test_a_stalled_check_trims_the_events_stream_even_when_nothing_stalled(
    redis_client: Redis, keys: QueueKeys
) -> None:
    # An idle queue's events are trimmed by its stalled check: a cap lowered
    # to 50 (opts.maxLenEvents) holds once the next check has run.
    redis_client.hset(keys.meta, "opts.maxLenEvents", "50")
    with redis_client.pipeline(transaction=False) as pipe:
        for n in range(1, 1001):
            pipe.xadd(keys.events, {"event": "completed", "jobId": str(n), "returnvalue": "null"})
        pipe.execute()
    assert stalled_check(redis_client, keys, max_stalled=1) == []
    assert redis_client.xlen(keys.events) < 1000 - 800


def test_a_legacy_marker_stuck_in_active_is_dropped_without_being_reported(
    redis_client: Redis, keys: QueueKeys
) -> None:
    # A BullMQ 4 delay marker left in active is no job: dropped silently,
    # while an id whose hash was deleted by hand is reported as missing.
    for stuck in ("0:1700000000000", "5310"):
        redis_client.lpush(keys.active, stuck)
        redis_client.sadd(keys.stalled, stuck)
    redis_client.delete(keys.stalled_check)
    call = t.move_stalled_jobs_to_wait(
        keys, max_stalled_count=1, now_ms=NOW, stalled_interval_ms=STALLED_INTERVAL_MS
    )
    checked = t.decode_stalled(scripts.run(redis_client, call))
    assert checked.recovered == []
    assert checked.broken == [SkippedJob("5310", "missing")]
    assert redis_client.exists(keys.active) == 0


def test_every_one_of_6000_active_jobs_becomes_a_suspect(
    redis_client: Redis, keys: QueueKeys
) -> None:
    # A fleet of workers holding 6,000 jobs: the suspects are added 5,000 ids
    # a call, and none may fall between two calls.
    ids = [str(n) for n in range(10_001, 16_001)]
    redis_client.lpush(keys.active, *ids)
    assert stalled_check(redis_client, keys, max_stalled=1) == []
    assert redis_client.scard(keys.stalled) == 6000


def test_a_retry_without_backoff_is_due_at_once(redis_client: Redis, keys: QueueKeys) -> None:
    # attempts: 3 and no backoff: the worker retries after 0 ms, due now.
    seed_job(redis_client, keys, "9154", state="active", lock_token=TOKEN)
    call = t.move_to_delayed(
        keys,
        "9154",
        token=TOKEN,
        now_ms=NOW,
        delay_ms=0,
        fields={"failedReason": "read ECONNRESET"},
    )
    assert scripts.run(redis_client, call) == 0
    assert field(redis_client, keys, "9154", "delay") == "0"
    ((_id, event),) = redis_client.xrange(keys.events)
    assert event[b"delay"] == str(NOW).encode()
