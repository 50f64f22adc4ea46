"""moveToDelayed-8 against a real Redis."""

from __future__ import annotations

import json

import pytest
from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.keys import QueueKeys
from tests.keyspace import snapshot
from tests.transition_helpers import (
    NOW,
    TOKEN,
    events,
    fetch,
    field,
    lrange,
    seed_job,
    zmembers,
)


def _delay(
    client: Redis,
    keys: QueueKeys,
    job_id: str,
    delay_ms: int,
    *,
    token: str = TOKEN,
    now_ms: int = NOW,
    skip_attempt: bool = False,
    fields: dict[str, str] | None = None,
) -> object:
    call = t.move_to_delayed(
        keys,
        job_id,
        token=token,
        now_ms=now_ms,
        delay_ms=delay_ms,
        skip_attempt=skip_attempt,
        fields=fields,
    )
    return scripts.run(client, call)


def test_moves_an_active_job_to_delayed_with_its_due_time(
    redis_client: Redis, keys: QueueKeys
) -> None:
    seed_job(redis_client, keys, "1", state="active", lock_token=TOKEN)
    seed_job(redis_client, keys, "2", state="active", lock_token="other")
    redis_client.sadd(keys.stalled, "1")

    assert _delay(redis_client, keys, "1", 5000, fields={"stacktrace": '["e1"]'}) == 0

    assert lrange(redis_client, keys.active) == ["2"]
    assert redis_client.exists(keys.lock("1")) == 0
    assert redis_client.sismember(keys.stalled, "1") == 0
    assert field(redis_client, keys, "1", "atm") == "1"
    assert field(redis_client, keys, "1", "delay") == "5000"
    assert field(redis_client, keys, "1", "stacktrace") == '["e1"]'
    assert redis_client.zscore(keys.delayed, "1") == (NOW + 5000) * 4096
    assert redis_client.zscore(keys.marker, "1") == NOW + 5000
    [ev] = events(redis_client, keys)
    assert (ev.event, ev.job_id, ev.fields) == ("delayed", "1", {"delay": str(NOW + 5000)})


def test_skip_attempt_leaves_attempts_made(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1", state="active", lock_token=TOKEN, fields={"atm": "2"})
    assert _delay(redis_client, keys, "1", 10, skip_attempt=True) == 0
    assert field(redis_client, keys, "1", "atm") == "2"


def test_jobs_due_in_the_same_ms_keep_their_order_and_the_marker_shows_the_earliest(
    redis_client: Redis, keys: QueueKeys
) -> None:
    for job_id in ("a", "b", "c"):
        seed_job(redis_client, keys, job_id, state="active", lock_token=TOKEN)
    assert _delay(redis_client, keys, "a", 2000) == 0
    assert _delay(redis_client, keys, "b", 2000) == 0
    assert _delay(redis_client, keys, "c", 1000) == 0
    assert redis_client.zscore(keys.delayed, "b") == (NOW + 2000) * 4096 + 1
    assert zmembers(redis_client, keys.delayed) == ["c", "a", "b"]
    assert redis_client.zscore(keys.marker, "1") == NOW + 1000


def test_missing_job_is_minus_1(redis_client: Redis, keys: QueueKeys) -> None:
    redis_client.lpush(keys.active, "1")
    assert _delay(redis_client, keys, "1", 10) == -1


@pytest.mark.parametrize(
    ("lock", "code"),
    [(None, -2), ("someone-else", -6)],
)
def test_lock_problems_are_refused_without_changes(
    redis_client: Redis, keys: QueueKeys, lock: str | None, code: int
) -> None:
    seed_job(redis_client, keys, "1", state="active", lock_token=lock)
    before = snapshot(redis_client)
    assert _delay(redis_client, keys, "1", 10, fields={"x": "y"}) == code
    assert snapshot(redis_client) == before


def test_job_not_active_is_minus_3_without_changes(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1", state="wait")
    redis_client.set(keys.lock("1"), TOKEN)
    before = snapshot(redis_client)
    assert _delay(redis_client, keys, "1", 10) == -3
    assert snapshot(redis_client) == before


def test_token_zero_skips_the_lock_check(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1", state="active")
    assert _delay(redis_client, keys, "1", 10, token="0") == 0
    assert zmembers(redis_client, keys.delayed) == ["1"]


def test_a_delayed_retry_runs_again_once_due(redis_client: Redis, keys: QueueKeys) -> None:
    seed_job(redis_client, keys, "1", opts={"attempts": 3, "backoff": 1000})
    first = fetch(redis_client, keys)
    assert first.job_id == "1"
    assert _delay(redis_client, keys, "1", 1000, fields={"stacktrace": json.dumps(["e"])}) == 0
    early = fetch(redis_client, keys, now_ms=NOW + 999)
    assert (early.job, early.next_delayed_due_ms) == (None, NOW + 1000)
    again = fetch(redis_client, keys, now_ms=NOW + 1000)
    assert again.job is not None
    assert (again.job.attempts_made, again.job.attempts_started, again.job.delay) == (1, 2, 0)
    assert [(e.event, e.fields.get("prev")) for e in events(redis_client, keys)] == [
        ("active", "waiting"),
        ("delayed", None),
        ("waiting", "delayed"),
        ("active", "waiting"),
    ]
