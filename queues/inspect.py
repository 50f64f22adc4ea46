"""The read model: what the dashboard, the JSON API and any CLI show.

Every function here costs O(page), never O(queue): counts come from LLEN /
ZCARD, lists from range commands, job fields from pipelined HMGET, and each
call makes a constant number of round trips whatever the queue holds. Nothing
here moves a job, and nothing raises on malformed data written by another
runtime: job hashes are decoded by ``queues.read.decode``.

Each result type has ``as_json()`` so the HTML page and the JSON API render
exactly the same data.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis import Redis
from redis.exceptions import ResponseError

from queues import codec, scripts, throughput
from queues.commands import reads
from queues.connection import is_cluster
from queues.events import Event
from queues.job import Job
from queues.keys import InvalidName, QueueKeys, validate_job_id

# Until every caller imports it from queues.keys, where it now lives.
from queues.keys import QueueRef as QueueRef
from queues.read.decode import job_from_hash, job_from_values
from queues.throughput import RecentFinishes, Windows

# The tabs of a queue, in the order a job usually travels through them.
# "wait" shows the wait and paused lists together (5.x moves ready jobs to
# "paused" while the queue is paused; 6.x leaves them in "wait").
STATES: tuple[str, ...] = (
    "wait",
    "prioritized",
    "delayed",
    "active",
    "waiting-children",
    "completed",
    "failed",
)
DATA_DISPLAY_LIMIT = 64 * 1024
METRICS_POINTS = 30
MAX_PAGE_SIZE = 500
# Fields a job-list row needs; data (possibly megabytes) is never fetched for a list.
_ROW_FIELDS = (
    b"name",
    b"timestamp",
    b"processedOn",
    b"finishedOn",
    b"atm",
    b"attemptsMade",
    b"ats",
    b"opts",
    b"progress",
    b"failedReason",
    b"delay",
    b"priority",
)
_LIST_KEY_STATES = ("wait", "paused", "active")
_ZSET_STATES = ("prioritized", "delayed", "completed", "failed", "waiting-children")
_DELAYED_SEQ_BITS = 4096


def _replies(pipe: Any) -> list[Any]:
    """Pipeline replies with per-command errors (a key of the wrong type left
    by another writer: WRONGTYPE) read as None, so one bad key shows as empty
    instead of failing the whole page."""
    return [None if isinstance(r, Exception) else r for r in pipe.execute(raise_on_error=False)]


def _read(command: Any, *args: Any, **kwargs: Any) -> list[Any]:
    """A single list-returning read, tolerant of WRONGTYPE like :func:`_replies`."""
    try:
        return list(command(*args, **kwargs) or [])
    except ResponseError:
        return []


# --------------------------------------------------------------------------- counts


@dataclass(slots=True)
class QueueSummary:
    ref: QueueRef
    counts: dict[str, int]
    paused: bool
    # Full minutes, oldest first, the newest being the minute before now's
    # (queues.throughput aligns the metrics to now); empty without metrics.
    completed_per_minute: list[int] = field(default_factory=list)
    failed_per_minute: list[int] = field(default_factory=list)
    # (completed, failed) in the current minute so far; None when not known.
    this_minute: tuple[int, int] | None = None
    # What finished lately, from the metrics or the finished sets; None when
    # the caller asked for no metrics.
    recent: RecentFinishes | None = None
    # The moment the series are aligned to (ms), for charts that label minutes.
    read_at_ms: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "queue": self.ref.qualified,
            "prefix": self.ref.prefix,
            "name": self.ref.name,
            "counts": dict(self.counts),
            "paused": self.paused,
            "metrics": {
                "completed_per_minute": self.completed_per_minute,
                "failed_per_minute": self.failed_per_minute,
            },
        }


def _queue_count_commands(
    pipe: Any, keys: QueueKeys, metrics_points: int, windows: Windows
) -> None:
    # The same reads, in the same order, as priv/scripts/queueCounts-0.lua
    # (which shortens the recent window to a trimmed completed set: see
    # _pipelined_summary_replies).
    pipe.llen(keys.wait)
    pipe.llen(keys.paused)
    pipe.zcard(keys.prioritized)
    pipe.zcard(keys.delayed)
    pipe.llen(keys.active)
    pipe.zcard(keys.waiting_children)
    pipe.zcard(keys.completed)
    pipe.zcard(keys.failed)
    pipe.hexists(keys.meta, "paused")
    if metrics_points:
        pipe.lrange(keys.metrics_data("completed"), 0, metrics_points - 1)
        pipe.lrange(keys.metrics_data("failed"), 0, metrics_points - 1)
        for kind in ("completed", "failed"):
            pipe.hmget(keys.metrics(kind), ["count", "prevTS", "prevCount"])
        recent, previous = windows.recent_start, windows.previous_start
        pipe.zrange(keys.completed, 0, 0, withscores=True)
        pipe.zcount(keys.completed, recent, "+inf")
        pipe.zcount(keys.failed, recent, "+inf")
        pipe.zcount(keys.completed, previous, f"({recent}")
        pipe.zcount(keys.failed, previous, f"({recent}")


def _counts_from(replies: Sequence[Any]) -> tuple[dict[str, int], bool]:
    wait, paused_list, prioritized, delayed, active, children, completed, failed, paused = replies
    counts = {
        "wait": int(wait or 0) + int(paused_list or 0),
        "prioritized": int(prioritized or 0),
        "delayed": int(delayed or 0),
        "active": int(active or 0),
        "waiting-children": int(children or 0),
        "completed": int(completed or 0),
        "failed": int(failed or 0),
    }
    return counts, bool(paused)


def _summary_replies(
    client: Redis, refs: Sequence[QueueRef], metrics_points: int, windows: Windows
) -> list[Any]:
    """The flat reply list of queueCounts: one script call on a single Redis; on
    a cluster (queues spread over nodes) the same reads as one pipeline."""
    if not is_cluster(client):
        call = reads.queue_counts(
            [ref.keys for ref in refs], metrics_points=metrics_points, windows=windows
        )
        return list(scripts.run(client, call))
    return _pipelined_summary_replies(client, refs, metrics_points, windows)


def _pipelined_summary_replies(
    client: Redis, refs: Sequence[QueueRef], metrics_points: int, windows: Windows
) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        _queue_count_commands(pipe, ref.keys, metrics_points, windows)
    replies = _replies(pipe)
    if not metrics_points:
        return replies
    # Shaped like the script's reply: the oldest completed score and where the
    # recent counts start; a completed set trimmed inside the recent window is
    # counted again from its oldest job, both sets alike (one more round trip
    # for those queues only).
    per_queue = reads.COUNT_REPLIES + throughput.REPLIES - 1
    shaped: list[Any] = []
    recount = client.pipeline(transaction=False)
    recounted: list[int] = []
    for index, ref in enumerate(refs):
        chunk = replies[index * per_queue : (index + 1) * per_queue]
        oldest_pairs = chunk[reads.COUNT_REPLIES + 4] or []
        oldest = int(oldest_pairs[0][1]) if oldest_pairs else -1
        start = windows.recent_start
        if oldest > start:
            start = oldest
            recount.zcount(ref.keys.completed, start, "+inf")
            recount.zcount(ref.keys.failed, start, "+inf")
            recounted.append(len(shaped) + reads.COUNT_REPLIES + 6)
        shaped += [*chunk[: reads.COUNT_REPLIES + 4], oldest, start, *chunk[-4:]]
    counted = _replies(recount) if recounted else []
    for n, position in enumerate(recounted):
        shaped[position : position + 2] = counted[2 * n : 2 * n + 2]
    return shaped


def queue_summaries(
    client: Redis,
    refs: Sequence[QueueRef],
    *,
    metrics_points: int = METRICS_POINTS,
    now_ms: int | None = None,
) -> list[QueueSummary]:
    """Counts, paused flag, per-minute metrics and recent finishes of many
    queues: one round trip (``metrics_points=0``: counts only)."""
    if not refs:
        return []
    windows = Windows(int(time.time() * 1000) if now_ms is None else now_ms)
    replies = _summary_replies(client, refs, metrics_points, windows)
    per_queue = reads.COUNT_REPLIES + (throughput.REPLIES if metrics_points else 0)
    summaries = []
    for index, ref in enumerate(refs):
        chunk = replies[index * per_queue : (index + 1) * per_queue]
        counts, paused = _counts_from(chunk[: reads.COUNT_REPLIES])
        summary = QueueSummary(ref, counts, paused, read_at_ms=windows.now_ms)
        if metrics_points:
            done = throughput.decode(chunk[reads.COUNT_REPLIES :], windows, metrics_points)
            summary.completed_per_minute = done.completed_per_minute
            summary.failed_per_minute = done.failed_per_minute
            summary.this_minute = done.this_minute
            summary.recent = done.recent
        summaries.append(summary)
    return summaries


# --------------------------------------------------------------------------- job lists


def first_line(text: str | None, limit: int = 300) -> str:
    """The first non-empty line of a failure reason, for one-line displays."""
    lines = (text or "").strip().splitlines()
    return lines[0][:limit] if lines else ""


# --------------------------------------------------------------------------- progress and attempts

# The progress shapes drawn as a bar; every other value is shown as (short)
# JSON. A number is a percent. An object is counted work when it holds one
# key of each tuple below, both numbers, the total above zero:
# {"step": 1, "of": 5}, {"current": 3, "total": 8}, {"done": 2, "total": 4},
# {"value": 30, "max": 120}... (the README lists them under "Reading the pages").
PROGRESS_DONE_KEYS = ("step", "current", "done", "completed", "processed", "value")
PROGRESS_TOTAL_KEYS = ("of", "total", "max")


def _finite_number(value: Any) -> float | None:
    # JSON from other writers may hold NaN or Infinity (Python's json accepts
    # them): no bar can be drawn from those.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class Progress:
    """A job's progress as the dashboard draws it: ``percent`` fills a bar
    (None: not a known shape, shown as JSON); ``done`` of ``total`` is set for
    counted work, None for a plain percent."""

    value: Any
    percent: int | None = None
    done: int | float | None = None
    total: int | float | None = None

    @property
    def counted(self) -> bool:
        return self.total is not None

    def as_json(self) -> dict[str, Any] | None:
        if self.percent is None:
            return None
        return {"percent": self.percent, "done": self.done, "total": self.total}


def read_progress(value: Any) -> Progress:
    """The one decoder of the ``progress`` field (rows, job page, JSON API)."""
    number = _finite_number(value)
    if number is not None:
        return Progress(value, percent=max(0, min(100, int(number))))
    if not isinstance(value, dict):
        return Progress(value)
    done_key = next((key for key in PROGRESS_DONE_KEYS if key in value), None)
    total_key = next((key for key in PROGRESS_TOTAL_KEYS if key in value), None)
    if done_key is None or total_key is None:
        return Progress(value)
    done, total = _finite_number(value[done_key]), _finite_number(value[total_key])
    if done is None or total is None or done < 0 or total <= 0:
        return Progress(value)
    percent = max(0, min(100, int(100 * done / total)))
    return Progress(value, percent, value[done_key], value[total_key])


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One failed attempt of a job: its number (None when the job's counters
    cannot tell), the one-line reason and the stack trace ("" when none kept)."""

    number: int | None
    reason: str
    trace: str

    def as_json(self) -> dict[str, Any]:
        return {"attempt": self.number, "reason": self.reason, "trace": self.trace}


def trace_reason(trace: str) -> str:
    """The line of a stack trace that says what went wrong: the last line of a
    Python traceback, the first line of a JavaScript stack ("Error: ...")."""
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    return line.strip()[:300]


def failed_attempts(job: Job, state: str | None) -> list[FailedAttempt]:
    """Every failed attempt the job's hash remembers, latest first.

    ``stacktrace`` holds one entry per failed attempt, oldest first (capped by
    stackTraceLimit: the oldest go first); ``failedReason`` is the latest
    failure's reason (a retry by an admin clears it). Numbers count back from
    the latest attempt started or made: an active or completed job's latest
    attempt is not a failure, so its failures end one before it.
    """
    traces = job.stacktrace
    if not traces and not job.failed_reason:
        return []
    latest = max(job.attempts_started, job.attempts_made)
    last_failed = latest - 1 if state in ("active", "completed") else latest
    entries = list(reversed(traces)) or [""]
    attempts = []
    for back, trace in enumerate(entries):
        number = last_failed - back
        reason = first_line(job.failed_reason) if back == 0 and job.failed_reason else ""
        attempts.append(
            FailedAttempt(number if number >= 1 else None, reason or trace_reason(trace), trace)
        )
    return attempts


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(slots=True)
class JobRow:
    """What one line of a job list shows."""

    job: Job
    state: str
    missing: bool = False  # listed in the state but its hash is gone
    score: int | None = None

    @property
    def due_ms(self) -> int | None:
        """For delayed jobs: when the job becomes ready (from the zset score)."""
        if self.state != "delayed" or self.score is None:
            return None
        return self.score // _DELAYED_SEQ_BITS

    @property
    def reason_line(self) -> str:
        return first_line(self.job.failed_reason)

    @property
    def progress(self) -> Progress:
        return read_progress(self.job.progress)

    def as_json(self) -> dict[str, Any]:
        job = self.job
        return {
            "id": job.id,
            "state": self.state,
            "missing": self.missing,
            "name": job.name,
            "timestamp": job.timestamp,
            "processed_on": job.processed_on,
            "finished_on": job.finished_on,
            "attempts_made": job.attempts_made,
            "attempts": job.attempts,
            "progress": job.progress,
            "progress_bar": self.progress.as_json(),
            "failed_reason": self.reason_line or None,
            "priority": job.priority,
            "delay": job.delay,
            "due": self.due_ms,
        }


@dataclass(slots=True)
class JobPage:
    ref: QueueRef
    state: str
    start: int
    size: int
    total: int
    rows: list[JobRow]

    @property
    def end(self) -> int:
        """One-based index of the last row shown (0 when empty)."""
        return self.start + len(self.rows)

    @property
    def has_next(self) -> bool:
        # By position, not rows shown: a member whose id cannot be a job id is
        # skipped, and must not make the last page offer an empty "older" one.
        return self.start + self.size < self.total

    @property
    def has_previous(self) -> bool:
        return self.start > 0

    def as_json(self) -> dict[str, Any]:
        return {
            "queue": self.ref.qualified,
            "state": self.state,
            "start": self.start,
            "end": self.end,
            "total": self.total,
            "jobs": [row.as_json() for row in self.rows],
        }


def _fetch_rows(
    client: Redis, keys: QueueKeys, state: str, members: Sequence[tuple[str, int | None]]
) -> list[JobRow]:
    pipe = client.pipeline(transaction=False)
    for job_id, _ in members:
        pipe.hmget(keys.job(job_id), list(_ROW_FIELDS))
    replies = _replies(pipe) if members else []
    rows = []
    for (job_id, score), values in zip(members, replies, strict=True):
        fields = values or [None] * len(_ROW_FIELDS)
        missing = all(value is None for value in fields)
        job = job_from_values(job_id, _ROW_FIELDS, fields)
        rows.append(JobRow(job, state, missing=missing, score=score))
    return rows


def _member_id(raw: Any) -> str | None:
    job_id = codec.text(raw) or ""
    try:
        return validate_job_id(job_id)
    except InvalidName:
        return None  # legacy "0:" markers and garbage members are not jobs


def job_page(
    client: Redis, ref: QueueRef, state: str, *, start: int = 0, size: int = 50
) -> JobPage:
    """One page of a state, newest first, with the total: two round trips."""
    if state not in STATES:
        raise InvalidName(f"unknown state {state!r}")
    start = max(0, start)
    size = max(1, min(size, MAX_PAGE_SIZE))
    keys = ref.keys
    stop = start + size - 1
    pipe = client.pipeline(transaction=False)
    members: list[tuple[str, int | None]] = []
    if state == "wait":
        pipe.llen(keys.wait)
        pipe.llen(keys.paused)
        pipe.lrange(keys.wait, start, stop)
        wait_len, paused_len, wait_ids = _replies(pipe)
        total = int(wait_len or 0) + int(paused_len or 0)
        ids = list(wait_ids or [])
        if len(ids) < size and paused_len:
            # The page runs past the end of wait into the paused list.
            offset = max(0, start - int(wait_len or 0))
            ids += _read(client.lrange, keys.paused, offset, offset + size - len(ids) - 1)
        members = [(i, None) for i in map(_member_id, ids) if i is not None]
    elif state == "active":
        pipe.llen(keys.active)
        pipe.lrange(keys.active, start, stop)
        total, ids = _replies(pipe)
        members = [(i, None) for i in map(_member_id, ids or []) if i is not None]
    else:
        key = keys.state(state)
        pipe.zcard(key)
        pipe.zrevrange(key, start, stop, withscores=True)
        total, scored = _replies(pipe)
        for raw, score in scored or []:
            job_id = _member_id(raw)
            if job_id is not None:
                members.append((job_id, int(score)))
    rows = _fetch_rows(client, keys, state, members)
    return JobPage(ref, state, start, size, int(total or 0), rows)


# --------------------------------------------------------------------------- job detail


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
            return QueueRef.parse(queue_key), validate_job_id(job_id)
        except (InvalidName, ValueError):
            return None

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

    def as_json(self) -> dict[str, Any]:
        job = self.job
        parent = self.parent_ref
        data: Any = job.data if not self.data_truncated and job.data is not None else None
        return {
            "queue": self.ref.qualified,
            "id": job.id,
            "state": self.state,
            "name": job.name,
            "data": data,
            "data_text": None if data is not None else self.data_display,
            "data_truncated": self.data_truncated,
            "data_size": self.data_size,
            "opts": job.opts if job.opts else None,
            "opts_text": None if job.opts else job.opts_text,
            "timestamp": job.timestamp,
            "delay": job.delay,
            "priority": job.priority,
            "processed_on": job.processed_on,
            "finished_on": job.finished_on,
            "attempts_made": job.attempts_made,
            "attempts_started": job.attempts_started,
            "attempts": job.attempts,
            "stalled_counter": job.stalled_counter,
            "processed_by": job.processed_by,
            "progress": job.progress,
            "progress_bar": self.progress.as_json(),
            "returnvalue": job.returnvalue,
            "failed_reason": job.failed_reason,
            "stacktrace": job.stacktrace,
            "failed_attempts": [attempt.as_json() for attempt in self.failed_attempts],
            "deferred_failure": job.deferred_failure,
            "lock": {"token": self.lock_token, "ttl_ms": self.lock_ttl_ms}
            if self.lock_token is not None
            else None,
            "logs": {"start": self.logs_start, "total": self.logs_total, "lines": self.logs},
            "parent": {"queue": parent[0].qualified, "id": parent[1]} if parent else None,
            "children": {
                "pending": self.children_pending,
                "pending_total": self.children_pending_total,
                "processed": self.children_processed,
                "processed_total": self.children_processed_total,
            },
            "extra": job.extra,
        }


def _data_display(job: Job, full: bool) -> tuple[str, bool, int]:
    raw = job.data_text or ""
    size = len(raw.encode("utf-8", errors="replace"))
    if not full and len(raw) > DATA_DISPLAY_LIMIT:
        return raw[:DATA_DISPLAY_LIMIT], True, size
    if job.data is not None:
        return json.dumps(job.data, indent=2, ensure_ascii=False), False, size
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
    for zset_state in _ZSET_STATES:
        pipe.zscore(keys.state(zset_state), job_id)
    pipe.lpos(keys.active, job_id)
    pipe.scard(keys.dependencies(job_id))
    pipe.sscan(keys.dependencies(job_id), 0, count=children_limit)
    pipe.hlen(keys.processed(job_id))
    pipe.hscan(keys.processed(job_id), 0, count=children_limit)
    replies = _replies(pipe)
    raw, lock, ttl, logs_total, logs = replies[:5]
    if not raw:
        return None
    scores = replies[5 : 5 + len(_ZSET_STATES)]
    active_pos, pending_total, pending_scan, processed_total, processed_scan = replies[
        5 + len(_ZSET_STATES) :
    ]
    in_zsets = (s for s, score in zip(_ZSET_STATES, scores, strict=True) if score is not None)
    state: str | None = next(in_zsets, None)
    if state is None and active_pos is not None:
        state = "active"
    if state is None:
        # Only a job not in any zset nor active can be waiting: LPOS on the
        # (possibly huge) ready lists runs only then.
        check = client.pipeline(transaction=False)
        check.lpos(keys.wait, job_id)
        check.lpos(keys.paused, job_id)
        in_wait, in_paused = _replies(check)
        if in_wait is not None or in_paused is not None:
            state = "wait"
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


# --------------------------------------------------------------------------- events


@dataclass(slots=True)
class EventPage:
    ref: QueueRef
    events: list[Event]
    next_before: str | None  # pass as ``before`` for the next (older) page
    newest_id: str | None  # the newest stream id that exists, for live resume

    def as_json(self) -> dict[str, Any]:
        return {
            "queue": self.ref.qualified,
            "events": [event_json(e) for e in self.events],
            "next_before": self.next_before,
            "newest_id": self.newest_id,
        }


def event_json(event: Event) -> dict[str, Any]:
    return {
        "id": event.stream_id,
        "event": event.event,
        "job_id": event.job_id,
        "timestamp": event.timestamp_ms,
        "fields": event.fields,
    }


def _stream_id_ok(stream_id: str) -> bool:
    ms, _, seq = stream_id.partition("-")
    return ms.isdigit() and (seq == "" or seq.isdigit()) and len(stream_id) < 48


def events_page(
    client: Redis,
    ref: QueueRef,
    *,
    before: str | None = None,
    size: int = 50,
    event_type: str | None = None,
    job_id: str | None = None,
    skip_events: Collection[str] = (),
    scan_limit: int = 5_000,
) -> EventPage:
    """Events newest first, older than ``before`` (a stream id), optionally filtered
    to one event type, one job, or every event but those in ``skip_events``.

    Filters are applied while reading batches backwards, at most
    ``scan_limit`` entries per call, so a rare event type never makes one
    request walk the whole stream; ``next_before`` continues where it stopped.
    """
    keys = ref.keys
    size = max(1, min(size, MAX_PAGE_SIZE))
    if before is not None and not _stream_id_ok(before):
        raise InvalidName(f"invalid stream id {before!r}")
    filtered = bool(event_type or job_id or skip_events)
    batch = size if not filtered else max(size * 4, 200)
    upper = "(" + before if before else "+"
    events: list[Event] = []
    scanned = 0
    cursor: str | None = None
    newest_raw = _read(client.xrevrange, keys.events, "+", "-", count=1)
    newest_id = codec.text(newest_raw[0][0]) if newest_raw else None
    ended = False
    while len(events) < size and scanned < scan_limit:
        entries = _read(client.xrevrange, keys.events, upper, "-", count=batch)
        consumed_all = True
        for index, (stream_id, raw) in enumerate(entries):
            scanned += 1
            event = Event.from_entry(stream_id, raw)
            cursor = event.stream_id
            if (
                (event_type and event.event != event_type)
                or (job_id and event.job_id != job_id)
                or event.event in skip_events
            ):
                continue
            events.append(event)
            if len(events) == size:
                consumed_all = index == len(entries) - 1
                break
        if len(entries) < batch and consumed_all:
            ended = True
            break
        upper = "(" + (cursor or "0")
    next_before = None if ended else cursor
    return EventPage(ref, events, next_before, newest_id)


def job_events(client: Redis, ref: QueueRef, job_id: str, *, size: int = 50) -> list[Event]:
    """This job's most recent events (from the latest few thousand), newest first."""
    validate_job_id(job_id)
    return events_page(client, ref, size=size, job_id=job_id, scan_limit=5_000).events


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m queues.inspect``: the dashboard's read model as JSON on stdout."""
    import argparse
    import os

    from queues.connection import connect
    from queues.discovery import scan_queues

    parser = argparse.ArgumentParser(prog="python -m queues.inspect", description=main.__doc__)
    parser.add_argument("queue", nargs="?", help="queue name (omit: every queue with counts)")
    parser.add_argument("--url", default=os.environ.get("REDIS_URL", "redis://localhost:6379/0"))
    parser.add_argument("--prefix", default="bull")
    parser.add_argument("--state", choices=STATES, help="list jobs of this state")
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--job", help="show one job")
    parser.add_argument("--events", action="store_true", help="newest events")
    args = parser.parse_args(argv)
    client = connect(args.url)
    answer: Any
    if args.queue is None:
        refs = scan_queues(client, [args.prefix])  # one whole pass: a command runs once
        answer = [summary.as_json() for summary in queue_summaries(client, refs)]
    else:
        ref = QueueRef(args.prefix, args.queue)
        if args.job:
            detail = job_detail(client, ref, args.job)
            answer = detail.as_json() if detail else {"error": f"no job {args.job}"}
        elif args.events:
            answer = events_page(client, ref, size=args.count).as_json()
        elif args.state:
            answer = job_page(client, ref, args.state, start=args.start, size=args.count).as_json()
        else:
            answer = queue_summaries(client, [ref])[0].as_json()
    print(json.dumps(answer, indent=2, ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
