"""One job: its hash decoded, which state holds it, and everything its page
shows (lock, logs, children) in one pipelined round trip.

The state lookup lives here once, for the job page, the API, the command line
and ``Queue.get_state``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis import Redis

from queues import codec
from queues.job import Job
from queues.keys import InvalidName, QueueKeys, validate_job_id
from queues.read import answers
from queues.read.answers import DATA_DISPLAY_LIMIT as DATA_DISPLAY_LIMIT
from queues.read.decode import job_from_hash
from queues.read.failures import FailedAttempt, failed_attempts
from queues.read.progress import Progress, read_progress
from queues.read.refs import QueueRef
from queues.read.replies import replies
from queues.read.states import FAILED, KEY_STATES, TAB_OF_KEY, TABS, KeyState

# Which key holds a job is asked in the same round trip as what else the
# caller reads: every sorted set by ZSCORE, the active list (as long as the
# concurrency) by LPOS. The ready lists can hold millions, and LPOS walks
# them, so they are asked only about a job found nowhere else.
_LATE_PROBES: tuple[KeyState, ...] = tuple(
    key for tab in TABS if tab.ready for key in tab.keys if key.is_list
)
_FIRST_PROBES: tuple[KeyState, ...] = (
    *(state for state in KEY_STATES if not state.is_list),
    *(state for state in KEY_STATES if state.is_list and state not in _LATE_PROBES),
)
PROBES = len(_FIRST_PROBES)
# The states a job is looked up in directly, by an id alone (the ready lists
# are not walked); queues/read/cohorts.py asks the same of many ids in Lua.
DIRECT_STATES: tuple[KeyState, ...] = _FIRST_PROBES


def _probe(pipe: Any, keys: QueueKeys, state: KeyState, job_id: str) -> None:
    if state.is_list:
        pipe.lpos(keys.state(state.name), job_id)
    else:
        pipe.zscore(keys.state(state.name), job_id)


def add_state_probes(pipe: Any, keys: QueueKeys, job_id: str) -> None:
    """Queue the first PROBES replies :func:`key_state_of` reads."""
    for state in _FIRST_PROBES:
        _probe(pipe, keys, state, job_id)


def key_state_of(client: Redis, keys: QueueKeys, job_id: str, probed: Sequence[Any]) -> str | None:
    """The key state holding the job (``"paused"`` included), None when none
    does; ``probed`` are the replies of :func:`add_state_probes`."""
    for state, hit in zip(_FIRST_PROBES, probed, strict=True):
        if hit is not None:
            return state.name
    check = client.pipeline(transaction=False)
    for state in _LATE_PROBES:
        _probe(check, keys, state, job_id)
    for state, hit in zip(_LATE_PROBES, replies(check), strict=True):
        if hit is not None:
            return state.name
    return None


def state_of(client: Redis, keys: QueueKeys, job_id: str) -> str | None:
    """The key state holding the job, "unknown" when none does but its hash
    exists, None when it is gone."""
    validate_job_id(job_id)
    pipe = client.pipeline(transaction=False)
    pipe.exists(keys.job(job_id))
    add_state_probes(pipe, keys, job_id)
    exists, *probed = replies(pipe)
    found = key_state_of(client, keys, job_id, probed)
    return found or ("unknown" if exists else None)


def load_job(client: Redis, keys: QueueKeys, job_id: str) -> Job | None:
    validate_job_id(job_id)
    raw: Any = client.hgetall(keys.job(job_id))
    return job_from_hash(job_id, raw) if raw else None


def load_jobs(client: Redis, keys: QueueKeys, ids: Sequence[str]) -> list[Job]:
    """Whole jobs (data included) in one round trip; a job whose hash is gone
    is left out, not shown empty."""
    if not ids:
        return []
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hgetall(keys.job(job_id))
    return [
        job_from_hash(job_id, raw) for job_id, raw in zip(ids, replies(pipe), strict=True) if raw
    ]


def job_logs(
    client: Redis, keys: QueueKeys, job_id: str, start: int, stop: int
) -> tuple[list[str], int]:
    """A window of the job's log lines (LRANGE rules) and how many it has."""
    validate_job_id(job_id)
    pipe = client.pipeline(transaction=False)
    pipe.lrange(keys.logs(job_id), start, stop)
    pipe.llen(keys.logs(job_id))
    lines, total = pipe.execute()
    return [codec.text(line) or "" for line in lines], int(total)


def pretty_json(value: Any) -> str:
    return codec.printable(
        json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    )


@dataclass(slots=True)
class JobDetail:
    ref: QueueRef
    job: Job
    state: str | None  # None: the hash exists but no state holds the id
    lock_token: str | None
    lock_ttl_ms: int | None
    logs: list[str]
    logs_start: int
    logs_total: int
    data_display: str
    data_truncated: bool
    data_size: int
    children_pending: list[str]
    children_pending_total: int
    children_processed: dict[str, str]
    children_processed_total: int

    @property
    def parent_ref(self) -> tuple[QueueRef, str] | None:
        """The parent's queue and id, from ``parent`` JSON or ``parentKey``."""
        parent = self.job.parent or {}
        queue_key, job_id = parent.get("queueKey"), parent.get("id")
        if not (isinstance(queue_key, str) and isinstance(job_id, str)):
            queue_key, _, job_id = (self.job.parent_key or "").rpartition(":")
        if not queue_key or not job_id:
            return None
        try:
            # A parent is on the same server as its child (the one read).
            return QueueRef.parse(queue_key).on(self.ref.connection), validate_job_id(job_id)
        except (InvalidName, ValueError):
            return None

    @property
    def failed(self) -> bool:
        """Failed for good: in the failed set (not retrying, not finished since)."""
        return self.state == FAILED.name

    @property
    def opts_display(self) -> str:
        return pretty_json(self.job.opts) if self.job.opts else self.job.opts_text or ""

    @property
    def progress(self) -> Progress:
        return read_progress(self.job.progress)

    @property
    def failed_attempts(self) -> list[FailedAttempt]:
        return failed_attempts(self.job, self.state)

    @property
    def progress_display(self) -> str:
        return pretty_json(self.job.progress)[:DATA_DISPLAY_LIMIT]

    @property
    def returnvalue_display(self) -> str:
        return pretty_json(self.job.returnvalue)[:DATA_DISPLAY_LIMIT]

    def as_json(self, events: list[answers.Event]) -> answers.JobDetail:
        """The job's answer, with ``events`` (its latest, newest first: read apart)."""
        job = self.job
        parent = self.parent_ref
        data: Any = job.data if not self.data_truncated and job.data is not None else None
        return answers.JobDetail(
            queue=self.ref.qualified,
            id=job.id,
            state=self.state,
            name=job.name,
            data=data,
            data_text=None if data is not None else self.data_display,
            data_truncated=self.data_truncated,
            data_size=self.data_size,
            opts=job.opts if job.opts else None,
            opts_text=None if job.opts else job.opts_text,
            timestamp=job.timestamp,
            delay=job.delay,
            priority=job.priority,
            processed_on=job.processed_on,
            finished_on=job.finished_on,
            attempts_made=job.attempts_made,
            attempts_started=job.attempts_started,
            attempts=job.attempts,
            stalled_counter=job.stalled_counter,
            processed_by=job.processed_by,
            progress=job.progress,
            progress_bar=self.progress.as_json(),
            returnvalue=job.returnvalue,
            failed_reason=job.failed_reason,
            stacktrace=job.stacktrace,
            failed_attempts=[attempt.as_json() for attempt in self.failed_attempts],
            deferred_failure=job.deferred_failure,
            lock=answers.Lock(token=self.lock_token, ttl_ms=self.lock_ttl_ms)
            if self.lock_token is not None
            else None,
            logs=answers.Logs(start=self.logs_start, total=self.logs_total, lines=self.logs),
            parent=answers.Parent(queue=parent[0].qualified, id=parent[1]) if parent else None,
            children=answers.Children(
                pending=self.children_pending,
                pending_total=self.children_pending_total,
                processed=self.children_processed,
                processed_total=self.children_processed_total,
            ),
            extra=job.extra,
            events=events,
        )


def _data_display(job: Job, full: bool) -> tuple[str, bool, int]:
    raw = job.data_text or ""
    size = len(raw.encode("utf-8", errors="replace"))
    if not full and len(raw) > DATA_DISPLAY_LIMIT:
        return raw[:DATA_DISPLAY_LIMIT], True, size
    if job.data is not None:
        return codec.printable(json.dumps(job.data, indent=2, ensure_ascii=False)), False, size
    return raw, False, size


def _child_label(client_key: str, keys: QueueKeys) -> str:
    # Children of the same queue show as bare ids, others as their full key.
    return client_key[len(keys.base) :] if client_key.startswith(keys.base) else client_key


def job_detail(
    client: Redis,
    ref: QueueRef,
    job_id: str,
    *,
    logs_start: int = 0,
    logs_size: int = 50,
    full_data: bool = False,
    children_limit: int = 50,
) -> JobDetail | None:
    """Everything the job page shows, or None when the job's hash is gone."""
    validate_job_id(job_id)
    keys = ref.keys
    logs_start = max(0, logs_start)
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(keys.job(job_id))
    pipe.get(keys.lock(job_id))
    pipe.pttl(keys.lock(job_id))
    pipe.llen(keys.logs(job_id))
    pipe.lrange(keys.logs(job_id), logs_start, logs_start + max(1, logs_size) - 1)
    add_state_probes(pipe, keys, job_id)
    pipe.scard(keys.dependencies(job_id))
    pipe.sscan(keys.dependencies(job_id), 0, count=children_limit)
    pipe.hlen(keys.processed(job_id))
    pipe.hscan(keys.processed(job_id), 0, count=children_limit)
    answered = replies(pipe)
    raw, lock, ttl, logs_total, logs = answered[:5]
    if not raw:
        return None
    probed = answered[5 : 5 + PROBES]
    pending_total, pending_scan, processed_total, processed_scan = answered[5 + PROBES :]
    key_state = key_state_of(client, keys, job_id, probed)
    state = TAB_OF_KEY[key_state] if key_state is not None else None
    job = job_from_hash(job_id, raw)
    data_display, truncated, size = _data_display(job, full_data)
    pending = sorted(_child_label(codec.text(k) or "", keys) for k in (pending_scan or (0, []))[1])
    processed = {
        _child_label(codec.text(k) or "", keys): codec.text(v) or ""
        for k, v in (processed_scan or (0, {}))[1].items()
    }
    return JobDetail(
        ref=ref,
        job=job,
        state=state,
        lock_token=codec.text(lock),
        lock_ttl_ms=int(ttl) if lock is not None and ttl is not None and int(ttl) >= 0 else None,
        logs=[codec.text(line) or "" for line in logs or []],
        logs_start=logs_start,
        logs_total=int(logs_total or 0),
        data_display=data_display,
        data_truncated=truncated,
        data_size=size,
        children_pending=pending[:children_limit],
        children_pending_total=int(pending_total or 0),
        children_processed=dict(list(processed.items())[:children_limit]),
        children_processed_total=int(processed_total or 0),
    )
