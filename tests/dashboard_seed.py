"""Fast test and bench data written straight into Redis, bypassing the runtime.

The dashboard must show whatever another writer left, so tests seed job
hashes and state structures directly (including malformed ones). Bulk seeding
runs a loop inside Redis so a million failed jobs take seconds, not minutes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from redis import Redis

from queues.keys import QueueKeys

_DELAYED_SEQ = 4096

# Creates ARGV[2] failed jobs with ids ARGV[3].. under key prefix ARGV[1];
# KEYS[1] = the failed zset. Test data only, not a protocol script.
_BULK_FAILED = """
local base, count, first, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for i = first, first + count - 1 do
  local id = tostring(i)
  redis.call('HSET', base .. id, 'name', 'bulk', 'data', '{"n":' .. id .. '}',
    'opts', '{"attempts":3}', 'timestamp', now - 1000, 'processedOn', now - 500,
    'finishedOn', now + i, 'atm', 3, 'ats', 3, 'failedReason', 'boom ' .. id,
    'stacktrace', '["Error: boom"]')
  redis.call('ZADD', KEYS[1], now + i, id)
end
return count
"""


def now_ms() -> int:
    return int(time.time() * 1000)


def seed_job(
    client: Redis,
    keys: QueueKeys,
    job_id: str,
    *,
    state: str = "wait",
    name: str = "task",
    data: Any = None,
    opts: Mapping[str, Any] | None = None,
    fields: Mapping[str, str | bytes | int] | None = None,
    raw: bool = False,
    score: int | None = None,
) -> str:
    """One job hash plus its membership in ``state``; ``raw`` writes only ``fields``."""
    ts = now_ms()
    mapping: dict[str, str | bytes | int] = {}
    if not raw:
        mapping = {
            "name": name,
            "data": json.dumps(data if data is not None else {}),
            "opts": json.dumps(dict(opts or {"attempts": 1})),
            "timestamp": ts,
            "delay": 0,
            "priority": 0,
        }
        if state in ("active", "completed", "failed"):
            mapping["processedOn"] = ts
            mapping["ats"] = 1
        if state in ("completed", "failed"):
            mapping["finishedOn"] = ts
            mapping["atm"] = 1
        if state == "failed":
            mapping["failedReason"] = "boom"
            mapping["stacktrace"] = json.dumps(["Error: boom\n    at work (job.js:1:1)"])
        if state == "completed":
            mapping["returnvalue"] = json.dumps({"ok": True})
    mapping.update(fields or {})
    pipe = client.pipeline(transaction=False)
    if mapping:
        pipe.hset(keys.job(job_id), mapping=mapping)
    if state in ("wait", "paused", "active"):
        pipe.lpush(keys.state(state), job_id)
    elif state == "delayed":
        pipe.zadd(keys.delayed, {job_id: score if score is not None else _due(client, keys, ts)})
    elif state != "none":
        pipe.zadd(keys.state(state), {job_id: score if score is not None else ts})
    pipe.incr(keys.id)
    pipe.execute()
    return job_id


def _due(client: Redis, keys: QueueKeys, ts: int) -> int:
    """A minute from ``ts``, scored as delayedScore.lua scores it: jobs due in
    the same millisecond keep the order they were added in (a tie would sort
    them by id as text: "50" before "9")."""
    low = (ts + 60_000) * _DELAYED_SEQ
    high = low + _DELAYED_SEQ - 1
    last = client.zrevrangebyscore(keys.delayed, high, low, start=0, num=1, withscores=True)
    return min(int(last[0][1]) + 1, high) if last else low


def seed_jobs(client: Redis, keys: QueueKeys, state: str, count: int, *, first: int = 1) -> None:
    for n in range(first, first + count):
        seed_job(client, keys, str(n), state=state, data={"n": n})


def seed_failed_bulk(
    client: Redis, keys: QueueKeys, count: int, *, first: int = 1, batch: int = 20_000
) -> None:
    """``count`` failed jobs with integer ids, written inside Redis in batches."""
    script = client.register_script(_BULK_FAILED)
    # finishedOn = base + id: all in the past, newest id newest (as a real queue would be).
    now = now_ms() - (first + count) - 1
    done = 0
    while done < count:
        n = min(batch, count - done)
        script(keys=[keys.failed], args=[keys.base, n, first + done, now])
        done += n
    client.set(keys.id, first + count)
    client.hset(keys.meta, "opts.maxLenEvents", 10_000)


def seed_events(
    client: Redis, keys: QueueKeys, events: list[tuple[str, Mapping[str, str]]]
) -> list[str]:
    """XADD each (event, fields) in order; returns the stream ids."""
    ids = []
    for name, fields in events:
        entry = {"event": name, **fields}
        ids.append(client.xadd(keys.events, entry).decode())  # type: ignore[union-attr]
    return ids


def seed_metrics(
    client: Redis,
    keys: QueueKeys,
    completed: list[int],
    failed: list[int],
    now: int,
    *,
    this_minute: tuple[int, int] = (0, 0),
) -> None:
    """Per-minute history as a worker with metrics on leaves it at ``now``.

    ``completed`` / ``failed`` are the full minutes before ``now``'s minute,
    oldest first; ``this_minute`` the finishes so far in ``now``'s minute. The
    data lists are stored newest first and the hashes say where they end
    (prevTS) and how many finishes are not in a data point yet.
    """
    for kind, minutes, current in (
        ("completed", completed, this_minute[0]),
        ("failed", failed, this_minute[1]),
    ):
        data = keys.metrics_data(kind)
        client.delete(data)
        if minutes:
            client.lpush(data, *minutes)
        total = sum(minutes) + current
        client.hset(
            keys.metrics(kind),
            mapping={"count": total, "prevTS": now, "prevCount": total - current},
        )


def seed_schedulers(client: Redis, keys: QueueKeys, count: int, *, batch: int = 2_000) -> None:
    """``count`` job schedulers (every 1 to 60 minutes, a small template each)
    as BullMQ 5.x lays them out, without their pending runs: the list reads
    only the zset and the definitions."""
    now = now_ms()
    for first in range(0, count, batch):
        pipe = client.pipeline(transaction=False)
        for n in range(first, min(first + batch, count)):
            scheduler_id = f"scheduler-{n:06d}"
            every = 60_000 * (1 + n % 60)
            pipe.zadd(keys.repeat, {scheduler_id: now + every})
            pipe.hset(
                keys.repeat_scheduler(scheduler_id),
                mapping={
                    "name": f"task-{n % 50}",
                    "every": every,
                    "ic": 1 + n % 1000,
                    "data": json.dumps({"tenant": n, "kind": "report"}),
                    "opts": json.dumps({"attempts": 3}),
                },
            )
        pipe.execute()
    client.incr(keys.id)


def seed_index_of_older_rules(client: Redis, ref: Any, job_ids: list[str]) -> None:
    """The error groups index of failed jobs as a dashboard from before the
    rules' version was kept left it: counted, built, no ``rules`` in its
    state, and each job in a group of its own (what those rules made of a
    reason with a prefixed id, "(order ord_d3587f749c)"). The jobs must be
    in the failed set already."""
    from queues import scripts
    from queues.read import error_groups
    from queues.read.error_folding import group_key

    index = error_groups._Index(ref.keys)
    generation = str(scripts.run(client, index.reset()))
    entries = []
    for job_id in job_ids:
        score = int(client.zscore(ref.keys.failed, job_id) or 0)
        reason = (client.hget(ref.keys.job(job_id), "failedReason") or b"").decode()
        sample = {"text": reason, "job": job_id, "reason": reason, "trace": ""}
        entries.append((job_id, score, group_key(reason), json.dumps(sample)))
    newest = max(entry[1] for entry in entries)
    scripts.run(client, index.add(generation, entries, watermark=newest, built=True))
    client.hdel(index.state, "rules")
