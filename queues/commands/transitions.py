"""Builders for the worker transitions: pick up, finish, delay, recover, renew.

Each function returns a :class:`~queues.scripts.ScriptCall` for one script of
``priv/scripts`` with the KEYS order fixed by docs/protocol.md. Option tables travel
msgpack-packed (the Lua side unpacks them with ``cmsgpack``), so their key
names (``limiter``, ``maxMetricsSize`` ...) are part of the protocol. The
worker's two per-job scripts, moveToActive and moveToFinished, take one key
and their common options as plain arguments instead (each argument and each
unpacked table costs Redis per job; the scripts derive the queue's other
keys from its prefix): their values are checked here, and the scripts pass
them to Redis as they are.

The shared answer of moveToActive and of moveToFinished-with-fetch-next is
decoded into a :class:`Fetched` by ``queues.pickup.decode_answer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgpack

from queues import codec, scripts
from queues.errors import SkippedJob, decode_skipped
from queues.job import Job
from queues.keys import QueueKeys, validate_job_id
from queues.scripts import ScriptCall

FinishTarget = Literal["completed", "failed"]

# Token "0" tells the scripts not to take or check a lock (BullMQ's convention
# for processing without a lock).
NO_LOCK_TOKEN = "0"  # noqa: S105 (a protocol constant, not a secret)
# Default cap on finished jobs removed by age in one finish (BullMQ's default).
DEFAULT_KEEP_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``max`` jobs started per ``duration_ms`` window (per queue)."""

    max: int
    duration_ms: int

    def __post_init__(self) -> None:
        if self.max < 1 or self.duration_ms < 1:
            raise ValueError(f"rate limit needs max >= 1 and duration >= 1 ms, got {self}")

    def packed(self) -> dict[str, int]:
        return {"max": self.max, "duration": self.duration_ms}


@dataclass(frozen=True, slots=True)
class KeepJobs:
    """What stays of finished jobs (removeOnComplete / removeOnFail).

    ``count``: ``0`` removes the job at once, ``N > 0`` keeps the newest N,
    ``None`` (or a negative number) keeps every job. ``age_s`` removes jobs
    finished more than that many seconds ago, at most ``limit`` per finish.
    """

    count: int | None = None
    age_s: int | None = None
    limit: int | None = None

    @classmethod
    def keep_all(cls) -> KeepJobs:
        return cls()

    @classmethod
    def remove(cls) -> KeepJobs:
        return cls(count=0)

    @classmethod
    def from_option(cls, value: object) -> KeepJobs:
        """Interpret a BullMQ ``removeOnComplete``/``removeOnFail`` value:
        true = delete, false/None = keep, N = keep newest N,
        ``{age, count, limit}``. Malformed values keep the job (never lose data)."""
        if isinstance(value, bool):
            return cls.remove() if value else cls.keep_all()
        if isinstance(value, int):
            return cls(count=value)
        if isinstance(value, Mapping):
            return cls(
                count=_optional_int(value.get("count")),
                age_s=_optional_int(value.get("age")),
                limit=_optional_int(value.get("limit")),
            )
        return cls.keep_all()

    def count_arg(self) -> str:
        """moveToFinished's keep argument: "0" delete, "N" keep the newest N,
        "-1" keep all (a negative count keeps all, as ``None`` does)."""
        return "-1" if self.count is None or self.count < 0 else str(self.count)

    def by_age(self) -> dict[str, int]:
        """The age rule for moveToFinished's rarer options (empty: none)."""
        if self.age_s is None:
            return {}
        limit = DEFAULT_KEEP_LIMIT if self.limit is None else self.limit
        return {"age": self.age_s, "limit": limit}


def _optional_int(value: object) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return None


@dataclass(frozen=True, slots=True)
class FinishOptions:
    """Everything moveToFinished needs besides the job and its result.

    ``lock_duration_ms``, ``limiter`` and ``worker_name`` are used only when
    the call also fetches the next job. ``max_metrics_size`` > 0 records
    per-minute metrics (that many data points kept). The four parent flags are
    BullMQ's failure policies (fpof / cpof / idof / rdof); the script also
    reads them from the job's ``parent`` field.
    """

    lock_duration_ms: int
    attempts: int
    keep: KeepJobs
    max_metrics_size: int = 0
    limiter: RateLimit | None = None
    worker_name: str = ""
    fail_parent_on_failure: bool = False
    continue_parent_on_failure: bool = False
    ignore_dependency_on_failure: bool = False
    remove_dependency_on_failure: bool = False
    # moveToFinished's option arguments (keep, attempts, lock duration, worker
    # name, rarer options): built at the first finish, then reused (a worker
    # shares one FinishOptions between all its jobs of one kind, so this is
    # once per worker and kind).
    _args: tuple[str, str, str, str, bytes] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def finish_args(self) -> tuple[str, str, str, str, bytes]:
        """Check the options and turn them into ARGV[7..11] of moveToFinished
        (once): keep, attempts, lock duration, worker name, and the rarer
        options msgpack-packed, or b"" when there are none, which the
        script's straight-line path needs."""
        if self._args is not None:
            return self._args
        if self.attempts < 0 or self.max_metrics_size < 0:
            raise ValueError("attempts and max_metrics_size must not be negative")
        _check_lock_duration(self.lock_duration_ms)
        rare: dict[str, Any] = dict(self.keep.by_age())
        if self.max_metrics_size:
            rare["maxMetricsSize"] = self.max_metrics_size
        if self.limiter is not None:
            rare["limiter"] = self.limiter.packed()
        for flag, enabled in (
            ("fpof", self.fail_parent_on_failure),
            ("cpof", self.continue_parent_on_failure),
            ("idof", self.ignore_dependency_on_failure),
            ("rdof", self.remove_dependency_on_failure),
        ):
            if enabled:
                rare[flag] = True
        args = (
            self.keep.count_arg(),
            str(self.attempts),
            str(self.lock_duration_ms),
            self.worker_name,
            _pack(rare) if rare else b"",
        )
        object.__setattr__(self, "_args", args)  # frozen: a cache, not state
        return args


@dataclass(frozen=True, slots=True)
class Fetched:
    """What a pick-up answered: a job, or why there is none.

    ``rate_limit_ms`` > 0: the queue is rate limited for that long.
    ``next_delayed_due_ms``: when the earliest delayed job is due (a worker may
    sleep until then); ``None`` when there is none or a job was returned.
    """

    job: Job | None
    job_id: str | None
    rate_limit_ms: int = 0
    next_delayed_due_ms: int | None = None
    # Jobs met on the way and left where they were because their keys are broken.
    broken: tuple[SkippedJob, ...] = ()


def _pack(value: Any) -> bytes:
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def _check_token(token: str) -> str:
    if not token:
        raise ValueError("a lock token is required (use NO_LOCK_TOKEN for no lock)")
    return token


def _check_lock_duration(lock_duration_ms: int) -> str:
    """The lock duration as the scripts take it: integer text, at least 1 ms."""
    if lock_duration_ms < 1:
        raise ValueError(f"lock duration must be >= 1 ms, got {lock_duration_ms}")
    return str(int(lock_duration_ms))


def _flat_fields(fields: Mapping[str, str] | None) -> bytes | None:
    if not fields:
        return None
    flat: list[str] = []
    for name, value in fields.items():
        flat.extend((name, value))
    return _pack(flat)


def move_to_active(
    keys: QueueKeys,
    *,
    token: str,
    lock_duration_ms: int,
    now_ms: int,
    worker_name: str = "",
    limiter: RateLimit | None = None,
) -> ScriptCall:
    return scripts.call(
        "moveToActive",
        (keys.wait,),
        (
            keys.base,
            now_ms,
            _check_token(token),
            _check_lock_duration(lock_duration_ms),
            worker_name,
            b"" if limiter is None else _pack(limiter.packed()),
        ),
    )


def move_to_finished(
    keys: QueueKeys,
    job_id: str,
    *,
    token: str,
    now_ms: int,
    target: FinishTarget,
    value: str,
    fetch_next: bool,
    options: FinishOptions,
    extra_fields: dict[str, str] | None = None,
) -> ScriptCall:
    """``value`` is the return value as JSON (completed) or the failed reason."""
    validate_job_id(job_id)
    if target not in ("completed", "failed"):
        raise ValueError(f"unknown finish target {target!r}")
    keep, attempts, lock_ms, worker_name, rare = options.finish_args()
    args: tuple[scripts.ScriptArg, ...] = (
        keys.base,
        job_id,
        now_ms,
        target,
        value,
        _check_token(token),
        keep,
        attempts,
        lock_ms if fetch_next else "0",
        worker_name,
        rare,
    )
    # Absent rather than empty when there are none (most completions): each
    # argument costs Redis about as much as a short command.
    packed_fields = _flat_fields(extra_fields)
    if packed_fields is not None:
        args = (*args, packed_fields)
    return scripts.call("moveToFinished", (keys.job(job_id),), args)


def move_to_delayed(
    keys: QueueKeys,
    job_id: str,
    *,
    token: str,
    now_ms: int,
    delay_ms: int,
    skip_attempt: bool = False,
    fields: dict[str, str] | None = None,
) -> ScriptCall:
    """Move an active job to delayed, due at ``now_ms + delay_ms`` (a retry
    with backoff, or a job postponing itself with ``skip_attempt``)."""
    validate_job_id(job_id)
    if delay_ms < 0:
        raise ValueError(f"delay must not be negative, got {delay_ms}")
    args: tuple[scripts.ScriptArg, ...] = (
        keys.base,
        now_ms,
        job_id,
        token,
        delay_ms,
        1 if skip_attempt else 0,
    )
    packed_fields = _flat_fields(fields)
    if packed_fields is not None:
        args = (*args, packed_fields)
    return scripts.call(
        "moveToDelayed",
        (
            keys.marker,
            keys.active,
            keys.prioritized,
            keys.delayed,
            keys.job(job_id),
            keys.events,
            keys.meta,
            keys.stalled,
        ),
        args,
    )


def move_stalled_jobs_to_wait(
    keys: QueueKeys, *, max_stalled_count: int, now_ms: int, stalled_interval_ms: int
) -> ScriptCall:
    if max_stalled_count < 0 or stalled_interval_ms < 1:
        raise ValueError("max_stalled_count >= 0 and stalled_interval_ms >= 1 required")
    return scripts.call(
        "moveStalledJobsToWait",
        (
            keys.stalled,
            keys.wait,
            keys.active,
            keys.stalled_check,
            keys.meta,
            keys.paused,
            keys.marker,
            keys.events,
        ),
        (max_stalled_count, keys.base, now_ms, stalled_interval_ms),
    )


@dataclass(frozen=True, slots=True)
class StalledCheck:
    """A stalled check's answer: the jobs it handed back to wait, and the
    suspects it left in active because their keys are broken."""

    recovered: list[str]
    broken: list[SkippedJob]


def decode_stalled(answer: Any) -> StalledCheck:
    recovered, broken = (
        answer if isinstance(answer, list | tuple) and len(answer) == 2 else ((), ())
    )
    return StalledCheck([codec.text(raw) or "" for raw in recovered], decode_skipped(broken))


def extend_lock(keys: QueueKeys, job_id: str, *, token: str, lock_duration_ms: int) -> ScriptCall:
    validate_job_id(job_id)
    if lock_duration_ms < 1:
        raise ValueError(f"lock duration must be >= 1 ms, got {lock_duration_ms}")
    return scripts.call(
        "extendLock",
        (keys.lock(job_id), keys.stalled),
        (token, lock_duration_ms, job_id),
    )
