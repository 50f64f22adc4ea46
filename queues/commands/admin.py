"""Pure builders for every script that is not a worker transition.

Each function takes a queue's :class:`QueueKeys` plus plain values and returns
the :class:`ScriptCall` to run; nothing here talks to Redis, so the argument
order each script expects (see the header of its Lua file) is tested without a
server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from queues import scripts
from queues.job_options import PreparedJob
from queues.keys import QueueKeys
from queues.read.states import KEY_STATE, KEY_STATES
from queues.scripts import ScriptArg, ScriptCall

FinishedState = Literal["completed", "failed"]
# Where a job comes back to run from: a retry (failed/completed) or a promotion.
RequeueSource = Literal["failed", "completed", "delayed"]
CleanableState = Literal["completed", "failed", "delayed", "prioritized", "wait", "paused"]
# Runtime checks too: callers (views, API) pass strings that typing never saw,
# and e.g. cleaning "active" would delete running jobs.
_REQUEUE_SOURCES = frozenset(get_args(RequeueSource))
_CLEANABLE_STATES = frozenset(get_args(CleanableState))


_KEY_STATE_NAMES = frozenset(KEY_STATE)


def _check(state: str, allowed: frozenset[str]) -> None:
    if state not in allowed:
        raise ValueError(f"state {state!r} is not one of {sorted(allowed)}")


def _flag(value: bool) -> str:
    return "1" if value else "0"


def add_keys(keys: QueueKeys) -> tuple[str, ...]:
    return (
        keys.wait,
        keys.paused,
        keys.meta,
        keys.id,
        keys.delayed,
        keys.prioritized,
        keys.pc,
        keys.active,
        keys.events,
        keys.marker,
    )


def job_args(job: PreparedJob) -> tuple[ScriptArg, ...]:
    # The twelve per-job arguments of addJob and addJobs (addJobSteps.lua).
    return (
        job.job_id,
        job.name,
        job.data_json,
        job.opts_json,
        job.timestamp,
        job.delay,
        job.priority,
        _flag(job.lifo),
        job.dedup_id,
        job.dedup_ttl,
        job.parent_key,
        job.parent_json,
    )


def add_job(keys: QueueKeys, job: PreparedJob) -> ScriptCall:
    return scripts.call("addJob", add_keys(keys), (keys.base, *job_args(job)))


def add_jobs(keys: QueueKeys, jobs: Sequence[PreparedJob]) -> ScriptCall:
    """Many adds in one call; its result lists one addJob result per job."""
    args: list[ScriptArg] = [keys.base]
    for job in jobs:
        args.extend(job_args(job))
    return scripts.call("addJobs", add_keys(keys), tuple(args))


def _requeue_keys(keys: QueueKeys, source: RequeueSource) -> tuple[str, ...]:
    # requeueJob(s): the source set, what makes a job runnable, then the
    # sorted-set states a requeued job must not also be in.
    return (
        keys.state(source),
        keys.wait,
        keys.paused,
        keys.meta,
        keys.active,
        keys.prioritized,
        keys.pc,
        keys.marker,
        keys.events,
        keys.completed,
        keys.failed,
        keys.delayed,
        keys.waiting_children,
    )


def requeue_job(keys: QueueKeys, job_id: str, source: RequeueSource) -> ScriptCall:
    """Retry (source failed/completed) or promote (source delayed) one job."""
    _check(source, _REQUEUE_SOURCES)
    return scripts.call("requeueJob", _requeue_keys(keys, source), (keys.base, job_id, source))


def requeue_jobs(
    keys: QueueKeys,
    source: RequeueSource,
    *,
    batch: int,
    max_score: int | None = None,
    pass_over: int = 0,
    report_reason_bytes: int = 0,
    listed: Mapping[str, str] | None = None,
) -> ScriptCall:
    """One bounded batch of retry-all / promote-all; ``max_score`` None = all.
    ``pass_over``: how many broken jobs earlier batches reported (they stay at
    the front of the source set). ``report_reason_bytes`` > 0: the answer also
    lists the jobs moved, each with that many bytes of its previous reason.
    ``listed``: jobs of the source that a list state holds too (id -> that
    state, :func:`listed_jobs`): left where they are and reported."""
    _check(source, _REQUEUE_SOURCES)
    if batch <= 0 or pass_over < 0 or report_reason_bytes < 0:
        raise ValueError("batch must be positive, pass_over and report_reason_bytes not negative")
    limit = "+inf" if max_score is None else str(max_score)
    return scripts.call(
        "requeueJobs",
        _requeue_keys(keys, source),
        (keys.base, source, batch, limit, pass_over, report_reason_bytes, *_pairs(listed)),
    )


def _pairs(listed: Mapping[str, str] | None) -> tuple[str, ...]:
    return tuple(text for pair in (listed or {}).items() for text in pair)


# The list states, in the order listedJobs numbers them (1, 2, 3): wait,
# paused, active.
LISTED_STATES = tuple(state.name for state in KEY_STATES if state.is_list)
_SORTED_SET_STATES = frozenset(state.name for state in KEY_STATES if not state.is_list)


def listed_jobs(keys: QueueKeys, source: str, *, start: tuple[int, int], budget: int) -> ScriptCall:
    """A bounded stretch of the search for jobs of ``source`` (a sorted-set
    state) that a list state holds too; ``start`` is (list number, index):
    (1, 0) at first, then what the previous call answered."""
    _check(source, _SORTED_SET_STATES)
    if budget <= 0 or not 1 <= start[0] <= len(LISTED_STATES) or start[1] < 0:
        raise ValueError("budget must be positive and start a list number and an index")
    return scripts.call(
        "listedJobs",
        (keys.state(source), keys.wait, keys.paused, keys.active),
        (start[0], start[1], budget),
    )


def fail_job(keys: QueueKeys, job_id: str, *, reason: str, now_ms: int) -> ScriptCall:
    return scripts.call(
        "failJob",
        (
            keys.wait,
            keys.paused,
            keys.active,
            keys.prioritized,
            keys.delayed,
            keys.failed,
            keys.stalled,
            keys.meta,
            keys.events,
            keys.completed,
            keys.waiting_children,
        ),
        (keys.base, job_id, reason, now_ms),
    )


def remove_job(
    keys: QueueKeys, job_id: str, *, now_ms: int, only_from: Sequence[str] = ()
) -> ScriptCall:
    """Remove one job from whatever state holds it; with ``only_from`` (key
    state names) only when one of those holds it, else -3."""
    for state in only_from:
        _check(state, _KEY_STATE_NAMES)
    return scripts.call(
        "removeJob",
        (
            keys.wait,
            keys.paused,
            keys.active,
            keys.prioritized,
            keys.delayed,
            keys.completed,
            keys.failed,
            keys.waiting_children,
            keys.stalled,
            keys.repeat,
            keys.meta,
            keys.events,
        ),
        (keys.base, job_id, now_ms, *only_from),
    )


def pause(keys: QueueKeys, *, paused: bool) -> ScriptCall:
    """Pause (``paused=True``) or resume the queue."""
    return scripts.call(
        "pause",
        (
            keys.wait,
            keys.paused,
            keys.meta,
            keys.prioritized,
            keys.delayed,
            keys.marker,
            keys.events,
        ),
        ("pause" if paused else "resume",),
    )


# The largest global concurrency setGlobalConcurrency takes (nine digits).
MAX_GLOBAL_CONCURRENCY = 999_999_999


def set_global_concurrency(keys: QueueKeys, limit: int | None) -> ScriptCall:
    """Set the queue's global concurrency to ``limit`` (1 up), or clear it (None)."""
    if limit is not None and (isinstance(limit, bool) or not 1 <= limit <= MAX_GLOBAL_CONCURRENCY):
        raise ValueError(f"global concurrency must be 1..{MAX_GLOBAL_CONCURRENCY}, got {limit!r}")
    return scripts.call(
        "setGlobalConcurrency",
        (keys.meta, keys.active, keys.wait, keys.prioritized, keys.marker),
        ("" if limit is None else str(limit),),
    )


def clean_jobs(
    keys: QueueKeys,
    state: CleanableState,
    *,
    cutoff_ms: int,
    limit: int,
    now_ms: int,
    pass_over: int = 0,
    listed: Mapping[str, str] | None = None,
) -> ScriptCall:
    """Delete up to ``limit`` jobs of ``state`` finished/created at or before
    ``cutoff_ms``. ``pass_over`` (completed/failed): how many broken jobs
    earlier batches reported (they stay at the front of the set). ``listed``
    (sorted-set states): as for :func:`requeue_jobs`, kept and reported."""
    _check(state, _CLEANABLE_STATES)
    if limit <= 0 or pass_over < 0:
        raise ValueError("limit must be positive and pass_over not negative")
    return scripts.call(
        "cleanJobsInSet",
        (
            keys.state(state),
            keys.events,
            keys.meta,
            keys.prioritized,
            keys.delayed,
            keys.completed,
            keys.failed,
            keys.waiting_children,
            keys.wait,
            keys.paused,
            keys.active,
        ),
        (keys.base, state, cutoff_ms, limit, now_ms, pass_over, *_pairs(listed)),
    )


def drain(keys: QueueKeys, *, delayed: bool, batch: int, now_ms: int) -> ScriptCall:
    if batch <= 0:
        raise ValueError("batch must be positive")
    return scripts.call(
        "drain",
        (
            keys.wait,
            keys.paused,
            keys.prioritized,
            keys.delayed,
            keys.pc,
            keys.meta,
            keys.events,
            keys.active,
            keys.completed,
            keys.failed,
            keys.waiting_children,
        ),
        (keys.base, _flag(delayed), batch, now_ms),
    )


def obliterate(keys: QueueKeys, *, force: bool, batch: int, now_ms: int) -> ScriptCall:
    if batch <= 0:
        raise ValueError("batch must be positive")
    return scripts.call(
        "obliterate",
        (
            keys.meta,
            keys.active,
            keys.wait,
            keys.paused,
            keys.prioritized,
            keys.delayed,
            keys.completed,
            keys.failed,
            keys.waiting_children,
            keys.repeat,
            keys.id,
            keys.pc,
            keys.marker,
            keys.events,
            keys.stalled,
            keys.stalled_check,
            keys.limiter,
            keys.metrics_completed,
            keys.metrics_data("completed"),
            keys.metrics_failed,
            keys.metrics_data("failed"),
        ),
        (keys.base, batch, _flag(force), now_ms),
    )


def update_progress(keys: QueueKeys, job_id: str, progress_json: str) -> ScriptCall:
    return scripts.call(
        "updateProgress", (keys.job(job_id), keys.events, keys.meta), (job_id, progress_json)
    )


def add_log(keys: QueueKeys, job_id: str, line: str, *, keep: int = 0) -> ScriptCall:
    """Append a log line; ``keep`` > 0 trims to the newest ``keep`` lines."""
    return scripts.call("addLog", (keys.job(job_id), keys.logs(job_id)), (line, max(keep, 0)))


def update_data(keys: QueueKeys, job_id: str, data_json: str) -> ScriptCall:
    """Replace a job's data, if it is waiting, prioritized, delayed or failed."""
    return scripts.call(
        "updateData",
        (
            keys.wait,
            keys.paused,
            keys.active,
            keys.prioritized,
            keys.delayed,
            keys.failed,
            keys.completed,
            keys.waiting_children,
        ),
        (keys.base, job_id, data_json),
    )
