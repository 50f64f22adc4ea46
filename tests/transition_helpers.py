"""Shared setup for the transition tests: seed jobs straight into Redis (as any
writer would leave them), run the worker transitions, read events back."""

from __future__ import annotations

import json
from typing import Any

from redis import Redis

from queues import scripts
from queues.commands import transitions as t
from queues.events import Event
from queues.keys import QueueKeys
from queues.pickup import decode_answer

NOW = 1_700_000_000_000  # a fixed "now" keeps scores and timestamps exact
TOKEN = "token-1"
STALLED_INTERVAL_MS = 30_000
STALLED_REASON = "job stalled more than allowable limit"
LOCK_MS = 30_000


def seed_job(
    client: Redis,
    keys: QueueKeys,
    job_id: str,
    *,
    state: str = "wait",
    name: str = "task",
    data: Any = None,
    opts: dict[str, Any] | None = None,
    priority: int = 0,
    due_ms: int | None = None,
    lock_token: str | None = None,
    fields: dict[str, str] | None = None,
) -> str:
    """Write a job hash and put its id where ``state`` keeps it (wait: LPUSH
    like an add; prioritized: score with the counter; delayed: due_ms score;
    active: LPUSH plus a lock when ``lock_token`` is given)."""
    job_hash = {
        "name": name,
        "data": json.dumps(data if data is not None else {"n": job_id}),
        "opts": json.dumps(opts or {"attempts": 1}),
        "timestamp": str(NOW - 1000),
        "delay": "0",
        "priority": str(priority),
        **(fields or {}),
    }
    client.hset(keys.job(job_id), mapping=job_hash)
    if state == "wait":
        client.lpush(keys.wait, job_id)
    elif state == "paused":
        client.lpush(keys.paused, job_id)
    elif state == "prioritized":
        counter = int(client.incr(keys.pc))
        client.zadd(keys.prioritized, {job_id: priority * 2**32 + counter})
    elif state == "delayed":
        assert due_ms is not None
        client.hset(keys.job(job_id), "delay", str(due_ms - NOW))
        client.zadd(keys.delayed, {job_id: due_ms * 4096})
    elif state == "active":
        client.lpush(keys.active, job_id)
        if lock_token is not None:
            client.set(keys.lock(job_id), lock_token, px=LOCK_MS)
    else:
        raise ValueError(state)
    return job_id


def events(client: Redis, keys: QueueKeys) -> list[Event]:
    return [Event.from_entry(sid, raw) for sid, raw in client.xrange(keys.events)]


def event_names(client: Redis, keys: QueueKeys) -> list[tuple[str, str | None]]:
    return [(e.event, e.job_id) for e in events(client, keys)]


def pickup_answer(client: Redis, keys: QueueKeys, limiter: t.RateLimit | None = None) -> Any:
    """The raw answer of moveToActive at NOW, as any client of the script
    reads it (the tests of its documented replies)."""
    call = t.move_to_active(
        keys, token=TOKEN, lock_duration_ms=LOCK_MS, now_ms=NOW, limiter=limiter
    )
    return scripts.run(client, call)


def fetch(
    client: Redis,
    keys: QueueKeys,
    *,
    token: str = TOKEN,
    now_ms: int = NOW,
    worker_name: str = "",
    limiter: t.RateLimit | None = None,
) -> t.Fetched:
    raw = scripts.run(
        client,
        t.move_to_active(
            keys,
            token=token,
            lock_duration_ms=LOCK_MS,
            now_ms=now_ms,
            worker_name=worker_name,
            limiter=limiter,
        ),
    )
    return decode_answer(raw, "moveToActive")


def finish_options(**overrides: Any) -> t.FinishOptions:
    values: dict[str, Any] = {
        "lock_duration_ms": LOCK_MS,
        "attempts": 1,
        "keep": t.KeepJobs.keep_all(),
    }
    values.update(overrides)
    return t.FinishOptions(**values)


def finish(
    client: Redis,
    keys: QueueKeys,
    job_id: str,
    *,
    target: t.FinishTarget = "completed",
    value: str = '"ok"',
    token: str = TOKEN,
    now_ms: int = NOW,
    fetch_next: bool = False,
    options: t.FinishOptions | None = None,
    extra_fields: dict[str, str] | None = None,
) -> Any:
    """The raw answer of moveToFinished."""
    return scripts.run(
        client,
        t.move_to_finished(
            keys,
            job_id,
            token=token,
            now_ms=now_ms,
            target=target,
            value=value,
            fetch_next=fetch_next,
            options=options or finish_options(),
            extra_fields=extra_fields,
        ),
    )


def lrange(client: Redis, key: str) -> list[str]:
    return [v.decode() for v in client.lrange(key, 0, -1)]


def zmembers(client: Redis, key: str) -> list[str]:
    return [v.decode() for v in client.zrange(key, 0, -1)]


def field(client: Redis, keys: QueueKeys, job_id: str, name: str) -> str | None:
    raw = client.hget(keys.job(job_id), name)
    return None if raw is None else raw.decode()


def stalled_check(client: Redis, keys: QueueKeys, *, max_stalled: int = 1) -> list[str]:
    """One stalled check (moveStalledJobsToWait-8), as if the previous one's
    interval had passed: the ids it handed back to wait."""
    client.delete(keys.stalled_check)
    call = t.move_stalled_jobs_to_wait(
        keys, max_stalled_count=max_stalled, now_ms=NOW, stalled_interval_ms=STALLED_INTERVAL_MS
    )
    return t.decode_stalled(scripts.run(client, call)).recovered
