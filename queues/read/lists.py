"""Pages of a state's jobs, newest first: the ids from range commands, the
row fields by one pipelined HMGET, never the data (possibly megabytes).

A tab made of several keys ("wait": the wait list, then the paused list) is
paged as one list; this is the only code that does it, for the pages, the API,
the command line and ``Queue.get_jobs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis import Redis

from queues import codec, discovery, scripts
from queues.commands import reads
from queues.connection import is_cluster
from queues.job import Job
from queues.keys import InvalidName, QueueKeys, validate_job_id
from queues.read import answers
from queues.read.decode import job_from_values
from queues.read.failures import first_line
from queues.read.progress import Progress, read_progress
from queues.read.refs import QueueRef
from queues.read.replies import replies
from queues.read.states import KEY_STATE, TAB, KeyState

MAX_PAGE_SIZE = 500
# Fields a job-list row needs; data (possibly megabytes) is never fetched for a list.
ROW_FIELDS = (
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
# A delayed job's score is its due time (ms) times this, plus a sequence number.
_DELAYED_SEQ_BITS = 4096


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

    def as_json(self) -> answers.JobRow:
        job = self.job
        return answers.JobRow(
            id=job.id,
            state=self.state,
            missing=self.missing,
            name=job.name,
            timestamp=job.timestamp,
            processed_on=job.processed_on,
            finished_on=job.finished_on,
            attempts_made=job.attempts_made,
            attempts=job.attempts,
            progress=job.progress,
            progress_bar=self.progress.as_json(),
            failed_reason=self.reason_line or None,
            priority=job.priority,
            delay=job.delay,
            due=self.due_ms,
        )


class PagePosition:
    """Where a page of ``size`` rows from ``start`` sits in ``total``: what its
    pager shows. Mixed into the dataclasses of a page (jobs, schedulers)."""

    __slots__ = ()
    start: int
    size: int
    total: int
    rows: Sequence[Any]

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


@dataclass(slots=True)
class JobPage(PagePosition):
    ref: QueueRef
    state: str
    start: int
    size: int
    total: int
    rows: list[JobRow]

    def as_json(self) -> answers.JobPage:
        return answers.JobPage(
            queue=self.ref.qualified,
            state=self.state,
            start=self.start,
            end=self.end,
            total=self.total,
            jobs=[row.as_json() for row in self.rows],
        )


def list_windows(lengths: Sequence[int], start: int, stop: int) -> list[tuple[int, int] | None]:
    """Split the window [start, stop] (Redis LRANGE rules: inclusive, negative
    counts from the end) of lists read one after the other into one
    (start, stop) per list, None for a list the window misses."""
    total = sum(lengths)
    first = max(start + total if start < 0 else start, 0)
    last = min(stop + total if stop < 0 else stop, total - 1)
    windows: list[tuple[int, int] | None] = []
    offset = 0
    for length in lengths:
        low, high = max(first - offset, 0), min(last - offset, length - 1)
        windows.append((low, high) if low <= high else None)
        offset += length
    return windows


def _member_id(raw: Any) -> str | None:
    job_id = codec.text(raw) or ""
    try:
        return validate_job_id(job_id)
    except InvalidName:
        return None  # legacy "0:" markers and garbage members are not jobs


Members = list[tuple[str, int | None]]


def _ids(raw_ids: Sequence[Any] | None) -> Members:
    return [(i, None) for i in map(_member_id, raw_ids or []) if i is not None]


def _lists_window(
    client: Redis,
    keys: QueueKeys,
    lists: Sequence[KeyState],
    start: int,
    stop: int,
    traces: Sequence[str],
) -> tuple[list[int], int, Members]:
    """Lists read one after the other as one list: their total length and the
    ids in [start, stop]. One round trip when the window is in the first list
    (a page of wait), two when it runs into the next ones (paused). The
    EXISTS answers of ``traces`` come first (asked in the first round trip)."""
    names = [keys.state(state.name) for state in lists]
    pipe = client.pipeline(transaction=False)
    for trace in traces:
        pipe.exists(trace)
    for name in names:
        pipe.llen(name)
    # With a window from the head, the first list's part of it is known before
    # the lengths are: read it in the same round trip.
    from_head = start >= 0 and stop >= 0
    if from_head:
        pipe.lrange(names[0], start, stop)
    answered = replies(pipe)
    found_traces, answered = answered[: len(traces)], answered[len(traces) :]
    lengths = [int(length or 0) for length in answered[: len(names)]]
    windows = list_windows(lengths, start, stop)
    found: list[Any] = list(answered[-1] or []) if from_head else []
    rest = client.pipeline(transaction=False)
    asked = False
    for index, (name, window) in enumerate(zip(names, windows, strict=True)):
        if window is not None and not (from_head and index == 0):
            rest.lrange(name, *window)
            asked = True
    if asked:
        found += [job_id for chunk in replies(rest) for job_id in chunk or []]
    return found_traces, sum(lengths), _ids(found)


def _zset_window(
    client: Redis,
    keys: QueueKeys,
    state: KeyState,
    start: int,
    stop: int,
    traces: Sequence[str],
) -> tuple[list[int], int, Members]:
    key = keys.state(state.name)
    pipe = client.pipeline(transaction=False)
    for trace in traces:
        pipe.exists(trace)
    pipe.zcard(key)
    pipe.zrevrange(key, start, stop, withscores=True)
    *found_traces, total, scored = replies(pipe)
    members: Members = []
    for raw, score in scored or []:
        job_id = _member_id(raw)
        if job_id is not None:
            members.append((job_id, codec.score_ms(score)))
    return found_traces, int(total or 0), members


def state_window(
    client: Redis, keys: QueueKeys, name: str, start: int, stop: int
) -> tuple[int, Members]:
    """How many jobs a state holds, and the ids (with zset scores) of its
    window [start, stop] (LRANGE rules), newest first. ``name`` is a tab or
    a key state ("paused" alone)."""
    _, total, members = _window(client, keys, name, start, stop, traces=())
    return total, members


def _window(
    client: Redis, keys: QueueKeys, name: str, start: int, stop: int, *, traces: Sequence[str]
) -> tuple[list[int], int, Members]:
    """:func:`state_window`, with the EXISTS answers of ``traces`` (keys
    asked in the same first round trip) before it."""
    if name in TAB:
        states = TAB[name].keys
    elif name in KEY_STATE:
        states = (KEY_STATE[name],)
    else:
        raise InvalidName(f"unknown state {name!r}")
    if states[0].is_list:
        return _lists_window(client, keys, states, start, stop, traces)
    (state,) = states
    return _zset_window(client, keys, state, start, stop, traces)


def _row_fields(client: Redis, keys: QueueKeys, job_ids: Sequence[str]) -> list[Any]:
    """Each job's ROW_FIELDS values (a falsy reply for a wrong-typed key): one
    script call on a single Redis (a third of the client CPU of 50 pipelined
    HMGETs), the pipeline on a cluster, where the hashes may sit on any node."""
    if not job_ids:
        return []
    if not is_cluster(client):
        return list(scripts.run(client, reads.job_rows(keys, ROW_FIELDS, job_ids)))
    pipe = client.pipeline(transaction=False)
    for job_id in job_ids:
        pipe.hmget(keys.job(job_id), list(ROW_FIELDS))
    return replies(pipe)


def _fetch_rows(client: Redis, keys: QueueKeys, state: str, members: Members) -> list[JobRow]:
    answered = _row_fields(client, keys, [job_id for job_id, _ in members])
    rows = []
    for (job_id, score), values in zip(members, answered, strict=True):
        fields = values or [None] * len(ROW_FIELDS)
        missing = all(value is None for value in fields)
        job = job_from_values(job_id, ROW_FIELDS, fields)
        rows.append(JobRow(job, state, missing=missing, score=score))
    return rows


def job_rows(client: Redis, keys: QueueKeys, state: str, job_ids: Sequence[str]) -> list[JobRow]:
    """The list rows of jobs chosen elsewhere (a search's hits, an error
    group's jobs), read as a tab reads its page: one round trip."""
    return _fetch_rows(client, keys, state, [(job_id, None) for job_id in job_ids])


def job_page(
    client: Redis, ref: QueueRef, state: str, *, start: int = 0, size: int = 50
) -> JobPage:
    """One page of a tab, newest first, with the total: two round trips (three
    when a page of wait runs into the paused list)."""
    _, page = _read_page(client, ref, state, start, size, traces=[])
    return page


def job_page_if_exists(
    client: Redis, ref: QueueRef, state: str, *, start: int = 0, size: int = 50
) -> JobPage | None:
    """:func:`job_page`, or None when the queue has left no trace in Redis
    (what discovery.queue_exists asks), asked in the page's first round trip
    rather than one of its own before it: the JSON list's lookup
    (dashboard.core.lookup.queue_to_read) was a third of its round trips."""
    found, page = _read_page(client, ref, state, start, size, traces=discovery.trace_keys([ref]))
    return page if discovery.any_per_queue(found)[0] else None


def _read_page(
    client: Redis, ref: QueueRef, state: str, start: int, size: int, *, traces: list[str]
) -> tuple[list[int], JobPage]:
    if state not in TAB:
        raise InvalidName(f"unknown state {state!r}")
    start = max(0, start)
    size = max(1, min(size, MAX_PAGE_SIZE))
    keys = ref.keys
    found, total, members = _window(client, keys, state, start, start + size - 1, traces=traces)
    rows = _fetch_rows(client, keys, state, members)
    return found, JobPage(ref, state, start, size, total, rows)
