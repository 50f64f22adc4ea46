"""moveToFinished's keep rules at their edges (issue 26's mutation run):
removeOnComplete {count: N} at exactly N and one past it, count 1, the age
rule's exact cut-off, at most 1,000 removed per finish; and the events
stream trimmed to the queue's cap on every finish."""

from __future__ import annotations

from redis import Redis

from queues.commands import transitions as t
from queues.keys import QueueKeys
from tests.transition_helpers import NOW, TOKEN, finish, finish_options, seed_job, zmembers


def _finished_before(client: Redis, keys: QueueKeys, ages_ms: list[int]) -> None:
    for n, age in enumerate(ages_ms):
        seed_job(client, keys, f"old-{n}", state="wait", name="sync-crm-contact")
        client.lrem(keys.wait, 1, f"old-{n}")
        client.zadd(keys.completed, {f"old-{n}": NOW - age})


def _finish_new(
    client: Redis, keys: QueueKeys, keep: t.KeepJobs, *, fetch_next: bool = False
) -> None:
    seed_job(client, keys, "new", state="active", name="sync-crm-contact", lock_token=TOKEN)
    finish(client, keys, "new", options=finish_options(keep=keep), fetch_next=fetch_next)


def test_keeping_n_jobs_removes_none_at_n_and_the_oldest_one_past_it(
    redis_client: Redis, keys: QueueKeys
) -> None:
    _finished_before(redis_client, keys, [2000, 1000])
    _finish_new(redis_client, keys, t.KeepJobs(count=3))
    assert zmembers(redis_client, keys.completed) == ["old-0", "old-1", "new"]
    redis_client.delete(keys.job("new"))
    redis_client.zrem(keys.completed, "new")
    _finish_new(redis_client, keys, t.KeepJobs(count=2))
    assert zmembers(redis_client, keys.completed) == ["old-1", "new"]


def test_keeping_one_job_keeps_the_newest_only(redis_client: Redis, keys: QueueKeys) -> None:
    _finished_before(redis_client, keys, [2000, 1000])
    _finish_new(redis_client, keys, t.KeepJobs(count=1))
    assert zmembers(redis_client, keys.completed) == ["new"]


def test_the_age_rule_removes_strictly_older_jobs(redis_client: Redis, keys: QueueKeys) -> None:
    _finished_before(redis_client, keys, [3_600_001, 3_600_000])
    _finish_new(redis_client, keys, t.KeepJobs(age_s=3600))
    assert zmembers(redis_client, keys.completed) == ["old-1", "new"]


def test_a_finish_removes_at_most_a_thousand_old_jobs(redis_client: Redis, keys: QueueKeys) -> None:
    redis_client.zadd(keys.completed, {f"old-{n}": NOW - 10_000 + n for n in range(1002)})
    _finish_new(redis_client, keys, t.KeepJobs(count=1))
    # 1,003 held, 1,002 too many: the oldest 1,000 go now, the rest next time.
    assert zmembers(redis_client, keys.completed) == ["old-1000", "old-1001", "new"]


def test_every_finish_trims_the_events_stream_to_the_queues_cap(
    redis_client: Redis, keys: QueueKeys
) -> None:
    for n in range(500):
        redis_client.xadd(keys.events, {"event": "progress", "jobId": f"j{n}", "data": str(n)})
    redis_client.hset(keys.meta, "opts.maxLenEvents", 10)
    _finish_new(redis_client, keys, t.KeepJobs.keep_all())
    # "~": Redis trims whole nodes of about a hundred entries, never below the cap.
    assert 10 <= redis_client.xlen(keys.events) < 200


def test_the_keep_rules_hold_when_the_finish_takes_the_next_job(
    redis_client: Redis, keys: QueueKeys
) -> None:
    """A busy worker's finish takes the next job in the same call (the
    straight-line path): one past N removes the oldest, and at most 1,000
    go in one finish, as without it."""
    _finished_before(redis_client, keys, [2000, 1000])
    _finish_new(redis_client, keys, t.KeepJobs(count=2), fetch_next=True)
    assert zmembers(redis_client, keys.completed) == ["old-1", "new"]
    redis_client.flushdb()
    redis_client.zadd(keys.completed, {f"old-{n}": NOW - 10_000 + n for n in range(1002)})
    _finish_new(redis_client, keys, t.KeepJobs(count=1), fetch_next=True)
    assert zmembers(redis_client, keys.completed) == ["old-1000", "old-1001", "new"]
