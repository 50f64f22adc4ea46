"""The one writer of an action's cohort: the jobs a retry or promote moved,
kept 24 hours so the queue page can say what became of them (queues.read.cohorts
reads them back; docs/pages.md, "Recent actions", lists the keys). Recording
is never part of the action: when Redis cannot take it, the failure is logged
and the answer is unchanged."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from redis import Redis
from redis.exceptions import RedisError

from queues import codec
from queues.keys import QueueKeys
from queues.read.cohorts import KEEP_MS, MAX_COHORTS_PER_QUEUE, build_cohort
from queues.read.refs import QueueRef

log = logging.getLogger("echomq.cohorts")


def record_cohort(
    client: Redis,
    ref: QueueRef,
    action: str,
    moved_ids: Sequence[str],
    *,
    user: str,
    at_ms: int,
    source: str,
    count: int | None = None,
    previous_reasons: Mapping[str, str] | None = None,
    audit_id: int | None = None,
) -> str | None:
    """Keep the cohort of an action that moved ``moved_ids`` (the first
    MAX_TRACKED; ``count`` of them in all) out of ``source``, with the reason
    each had failed with (``previous_reasons``) so "failed again (same
    reason)" can be told. Its id, or None when nothing moved or Redis refused."""
    if not moved_ids:
        return None
    cohort = build_cohort(
        f"{at_ms:013d}-{secrets.token_hex(4)}",  # sortable by time, unique: 32 random bits
        action=action,
        source=source,
        user=user,
        at_ms=at_ms,
        count=count if count is not None else len(moved_ids),
        ids=moved_ids,
        previous_reasons=dict(previous_reasons or {}),
        audit_id=audit_id,
    )
    keys, record = ref.keys, cohort.encode()
    try:
        errors = _write(client, keys, cohort.id, record, at_ms)
        if errors and _replace_broken_index(client, keys.cohort_index()):
            errors = _write(client, keys, cohort.id, record, at_ms)
    except RedisError:
        log.exception("the cohort of %s on %s was not recorded", action, ref.qualified)
        return None
    if errors:
        log.warning("the cohort of %s on %s was not recorded: %s", action, ref.qualified, errors[0])
        return None
    return cohort.id


def _write(client: Redis, keys: QueueKeys, cohort_id: str, record: bytes, at_ms: int) -> list[Any]:
    """Store a cohort and list it in the queue's index; the errors answered."""
    index = keys.cohort_index()
    pipe = client.pipeline(transaction=False)
    pipe.set(keys.cohort(cohort_id), record, px=KEEP_MS)
    pipe.zadd(index, {cohort_id: at_ms})
    # Bounded per queue: what is older than a day, or beyond the newest
    # MAX_COHORTS_PER_QUEUE, leaves the index (its record expires by itself).
    pipe.zremrangebyscore(index, "-inf", at_ms - KEEP_MS)
    pipe.zremrangebyrank(index, 0, -MAX_COHORTS_PER_QUEUE - 1)
    pipe.pexpire(index, KEEP_MS)
    return [error for error in pipe.execute(raise_on_error=False) if isinstance(error, Exception)]


def _replace_broken_index(client: Redis, index: str) -> bool:
    """Delete the queue's cohort index when it is no sorted set (a hand edit):
    left, it would keep every later cohort of the queue from being listed,
    for good; it only lists cohorts whose records expire within a day."""
    kind_raw: Any = client.type(index)
    kind = codec.text(kind_raw) or "none"
    if kind in ("zset", "none"):
        return False
    client.delete(index)
    log.warning("the cohort index %s held a %s: replaced by a new one", index, kind)
    return True
