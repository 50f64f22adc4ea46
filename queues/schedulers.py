"""Job schedulers in BullMQ 5.x's layout: create or replace one, remove it,
run its template now, and add the next run when a worker takes a run.

The layout (docs/protocol.md, "Job schedulers"): the zset ``repeat`` scores
each scheduler id with its next run (ms); the hash ``repeat:<id>`` holds the
definition (``name``, ``pattern`` or ``every``, ``tz``, ``limit``,
``startDate``, ``endDate``, ``offset``, the template's ``data`` and ``opts``,
``ic`` the runs added so far); each run is a job ``repeat:<id>:<run ms>``
whose hash names the scheduler in ``rjk`` and whose opts carry ``repeat``
(pattern or every, limit, tz, dates, ``count`` = which run it is) and
``prevMillis`` (its run time). Legacy repeatable jobs (BullMQ before job
schedulers) share the zset; their hash has no ``ic``.

Cron patterns are BullMQ's: five fields, or six with the seconds first,
evaluated in the scheduler's time zone (UTC when it names none: set ``tz`` to
be explicit); croniter computes them. Every-N runs are computed inside the
scripts, which read the previous run atomically.

What a worker does when it takes a scheduler's run, as BullMQ's worker does,
before the processor runs (a slow or failing run does not hold up the next):
with ``count + 1`` beyond ``limit``, or past ``endDate``, the schedule ends;
else the next run is the first cron time after ``max(now, prevMillis)`` (a
pattern) or the next slot of the every-N grid, and scheduleNextRun adds it
only when the taken job is the run the scheduler waits for (so two workers,
ours or BullMQ's, never add it twice).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterError, croniter
from redis import Redis
from redis.exceptions import ResponseError

from queues import scripts
from queues.commands import schedulers as cmd
from queues.errors import broken_reason, raise_for_code
from queues.job import Job
from queues.job_options import InvalidJobOptions, prepare_job, to_json
from queues.keys import DEFAULT_PREFIX, InvalidName, QueueKeys, validate_job_id
from queues.scripts import ScriptCall

# Options a template cannot have: each run gets its own id and delay, and
# `repeat` is the scheduler's definition.
_NOT_IN_TEMPLATES = ("jobId", "delay", "repeat", "parent")
# BullMQ's workers take a run's `rjk` with this many ':' or more for a legacy
# repeatable job's key (name:id:endDate:tz:pattern) rather than a scheduler id.
_LEGACY_KEY_COLONS = 4


class InvalidSchedule(ValueError):
    """A definition no runtime could follow: both or neither of pattern and
    every, a pattern cron cannot read, an unknown time zone, a bad limit..."""


class SchedulerRefused(Exception):
    """A scheduler script left everything as it was; ``reason`` says why
    (the script headers' reasons), ``str()`` in plain words."""

    def __init__(self, scheduler_id: str, reason: str) -> None:
        self.scheduler_id = scheduler_id
        self.reason = reason
        super().__init__(f"job scheduler {scheduler_id}: {describe_refusal(reason)}")


_REFUSALS = {
    "scheduler:missing": "there is no such job scheduler (it was removed)",
    "scheduler:definition": "its definition hash is missing",
    "scheduler:legacy": "it is a legacy repeatable job, which keeps no template to run",
    "scheduler:name": "its definition has no job name",
    "scheduler:data": "its template data is not valid JSON",
    "scheduler:opts": "its template options are not a JSON object",
    "field:name": "its definition has no job name",
    "field:ic": "its iteration count is not a number",
    "field:every": "its definition has neither a pattern nor a valid every",
}


def describe_refusal(reason: str) -> str:
    if reason in _REFUSALS:
        return _REFUSALS[reason]
    if reason.startswith("states:"):
        return "its pending run is in more than one state; repair it in Redis first"
    return f"its pending run's keys are broken ({reason})"


def is_legacy_repeat_key(scheduler_id: str) -> bool:
    """A legacy repeatable job's key (``name:id:endDate:tz:pattern``), as
    BullMQ's worker tells it from a job scheduler's id."""
    return scheduler_id.count(":") >= _LEGACY_KEY_COLONS


def legacy_run_ids(legacy_key: str, run_ms: int) -> list[str]:
    """The ids a legacy repeatable job's run at ``run_ms`` may have (BullMQ
    before 5.0, whose zset member is the key ``name:id:endDate:tz:pattern``).

    Such a run's id is not the key: it is ``repeat:<checksum>:<ms>`` with the
    checksum the MD5 hex of the job name, a job id and the MD5 hex of the
    key, concatenated (BullMQ's default ``repeatKeyHashAlgorithm``). Which
    job id depends on the BullMQ version that added the run: the one in the
    key, or none. Both are given, the key's first; a reader checks which
    exists.
    """
    name, job_id = legacy_key.split(":", 2)[:2]
    namespace = _md5(legacy_key)
    ids = [f"repeat:{_md5(name + job_id + namespace)}:{run_ms}"]
    if job_id:
        ids.append(f"repeat:{_md5(name + namespace)}:{run_ms}")
    return ids


def _md5(text: str) -> str:
    # A checksum of ids, as BullMQ computes it, not a use of MD5 for security.
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def validate_scheduler_id(scheduler_id: str) -> str:
    """An id our runtime gives a scheduler: a job id without ':', so that its
    runs' ids (``repeat:<id>:<ms>``) read back unambiguously everywhere."""
    if ":" in scheduler_id:
        raise InvalidName(f"a job scheduler id may not contain ':': {scheduler_id!r}")
    return validate_job_id(scheduler_id)


def _zone(tz: str | None) -> Any:
    if not tz:
        return UTC
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidSchedule(f"unknown time zone {tz!r}") from exc


def next_cron_run(
    pattern: str,
    after_ms: int,
    *,
    tz: str | None = None,
    start_ms: int | None = None,
    end_ms: int | None = None,
) -> int | None:
    """The first time ``pattern`` matches strictly after ``after_ms`` (and not
    before ``start_ms``), in ms; None when that is past ``end_ms``."""
    base = after_ms if start_ms is None else max(after_ms, start_ms)
    start = datetime.fromtimestamp(base / 1000, _zone(tz))
    try:
        run = croniter(pattern, start, second_at_beginning=True).get_next(float)
    except (CroniterError, ValueError, TypeError) as exc:
        raise InvalidSchedule(f"cannot read the cron pattern {pattern!r}: {exc}") from exc
    run_ms = round(run * 1000)
    if end_ms is not None and run_ms > end_ms:
        return None
    return run_ms


def _whole_or_none(value: Any) -> int | None:
    """A whole number from a run's opts (JSON), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value != int(value):
        return None
    return int(value)


@dataclass(frozen=True, slots=True)
class Repeat:
    """When a scheduler runs: every ``every_ms`` or on cron ``pattern``;
    optionally in time zone ``tz``, at most ``limit`` times, from ``start_ms``
    until ``end_ms``; ``immediately`` runs a pattern's first run now."""

    every_ms: int | None = None
    pattern: str | None = None
    tz: str | None = None
    limit: int | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    immediately: bool = False

    def __post_init__(self) -> None:
        if (self.every_ms is None) == (not self.pattern):
            raise InvalidSchedule("give exactly one of every_ms and pattern")
        if self.every_ms is not None and (isinstance(self.every_ms, bool) or self.every_ms < 1):
            raise InvalidSchedule(f"every_ms must be a whole number >= 1, got {self.every_ms!r}")
        if self.pattern and not croniter.is_valid(self.pattern, second_at_beginning=True):
            raise InvalidSchedule(f"cannot read the cron pattern {self.pattern!r}")
        _zone(self.tz)
        if self.limit is not None and self.limit < 1:
            raise InvalidSchedule(f"limit must be >= 1, got {self.limit}")
        if self.immediately and self.start_ms is not None:
            raise InvalidSchedule("immediately and a start date cannot go together")

    def as_run_opts(self, count: int) -> dict[str, Any]:
        """The ``repeat`` object a run's opts carry (BullMQ's names)."""
        opts: dict[str, Any] = {"count": count}
        if self.every_ms is not None:
            opts["every"] = self.every_ms
        else:
            opts["pattern"] = self.pattern
        for name, value in (
            ("tz", self.tz),
            ("limit", self.limit),
            ("startDate", self.start_ms),
            ("endDate", self.end_ms),
        ):
            if value is not None:
                opts[name] = value
        return opts

    def first_cron_run(self, now_ms: int) -> int | None:
        """A pattern's first run (None for every-N, whose slot the script computes)."""
        if self.pattern is None:
            return None
        if self.immediately:
            return now_ms
        run = next_cron_run(
            self.pattern, now_ms, tz=self.tz, start_ms=self.start_ms, end_ms=self.end_ms
        )
        if run is None:
            raise InvalidSchedule("the pattern has no run before the end date")
        return max(run, now_ms)


def upsert_call(
    keys: QueueKeys,
    scheduler_id: str,
    repeat: Repeat,
    *,
    name: str,
    data: Any = None,
    opts: Mapping[str, Any] | None = None,
    now_ms: int,
) -> ScriptCall:
    """The call that creates or replaces a scheduler (raises InvalidSchedule,
    InvalidJobOptions or InvalidName for a definition it cannot store)."""
    validate_scheduler_id(scheduler_id)
    template = dict(opts or {})
    refused = [key for key in _NOT_IN_TEMPLATES if key in template]
    if refused:
        raise InvalidJobOptions(f"a scheduler's template cannot set {', '.join(refused)}")
    if repeat.end_ms is not None and now_ms > repeat.end_ms:
        raise InvalidSchedule("the end date has passed")
    prepared = prepare_job(name, {} if data is None else data, template, now_ms=now_ms)
    run_opts = {**_decoded(prepared.opts_json), "repeat": repeat.as_run_opts(1)}
    run_opts["timestamp"] = now_ms
    definition = cmd.SchedulerDefinition(
        scheduler_id=scheduler_id,
        name=name,
        data_json=prepared.data_json,
        template_opts_json=prepared.opts_json,
        run_opts_json=to_json(run_opts),
        every_ms=repeat.every_ms,
        pattern=repeat.pattern,
        next_run_ms=repeat.first_cron_run(now_ms),
        tz=repeat.tz,
        limit=repeat.limit,
        start_ms=repeat.start_ms,
        end_ms=repeat.end_ms,
    )
    return cmd.upsert_job_scheduler(keys, definition, now_ms=now_ms)


def _decoded(opts_json: str) -> dict[str, Any]:
    decoded = json.loads(opts_json)
    return decoded if isinstance(decoded, dict) else {}


def next_run_call(keys: QueueKeys, job: Job, now_ms: int) -> ScriptCall | None:
    """The call a worker makes when it takes ``job``: adds the run after it.
    None when ``job`` is no job scheduler's run, or its schedule ends here
    (limit reached, end date passed, no cron time left). Raises
    InvalidSchedule when the run's pattern or time zone cannot be read."""
    scheduler_id = job.scheduler_id
    if not scheduler_id or is_legacy_repeat_key(scheduler_id):
        return None
    repeat = job.opts.get("repeat")
    repeat = dict(repeat) if isinstance(repeat, dict) else {}
    count = (_whole_or_none(repeat.get("count")) or 0) + 1
    limit = _whole_or_none(repeat.get("limit"))
    end_ms = _whole_or_none(repeat.get("endDate"))
    if (limit is not None and count > limit) or (end_ms is not None and now_ms > end_ms):
        return None
    next_ms = None
    pattern = repeat.get("pattern")
    if isinstance(pattern, str) and pattern:
        after = max(now_ms, _whole_or_none(job.opts.get("prevMillis")) or 0)
        tz = repeat.get("tz") if isinstance(repeat.get("tz"), str) else None
        start_ms = _whole_or_none(repeat.get("startDate"))
        next_ms = next_cron_run(pattern, after, tz=tz, start_ms=start_ms, end_ms=end_ms)
        if next_ms is None:
            return None
    repeat.pop("immediately", None)
    repeat["count"] = count
    run_opts = {**job.opts, "repeat": repeat, "timestamp": now_ms}
    return cmd.schedule_next_run(
        keys,
        scheduler_id,
        taken_job_id=job.id,
        next_run_ms=next_ms,
        run_opts_json=to_json(run_opts),
        now_ms=now_ms,
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class Removed:
    """A removal's answer: whether the scheduler existed, and the id of the
    pending run deleted with it ("" when there was none waiting)."""

    existed: bool
    pending_job_id: str


class JobSchedulers:
    """The job schedulers of one queue (a synchronous client, cluster or not)."""

    def __init__(self, name: str, connection: Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.keys = QueueKeys(name, prefix)
        self.connection = connection

    def _run(self, call: ScriptCall, scheduler_id: str, command: str) -> Any:
        answer = scripts.run(self.connection, call)
        reason = broken_reason(answer)
        if reason is not None:
            raise SchedulerRefused(scheduler_id, reason)
        raise_for_code(answer, command, scheduler_id)
        return answer

    def upsert(
        self,
        scheduler_id: str,
        repeat: Repeat,
        *,
        name: str,
        data: Any = None,
        opts: Mapping[str, Any] | None = None,
    ) -> str:
        """Create or replace a scheduler; returns the id of its next run's job."""
        call = upsert_call(
            self.keys, scheduler_id, repeat, name=name, data=data, opts=opts, now_ms=_now_ms()
        )
        job_id, _delay = self._run(call, scheduler_id, "upsertJobScheduler")
        return _text(job_id)

    def remove(self, scheduler_id: str) -> Removed:
        """Delete a scheduler (5.x or legacy) and its pending run."""
        candidates: list[str] = []
        if is_legacy_repeat_key(scheduler_id):
            # Its run's id is a checksum of the key and its next run time:
            # read the time first (a run a worker adds meanwhile is not
            # among these ids, and stays, as a taken run does).
            try:
                score: Any = self.connection.zscore(self.keys.repeat, scheduler_id)
            except ResponseError:
                score = None  # not a sorted set: the script refuses it, changing nothing
            if score is not None and math.isfinite(float(score)):
                candidates = legacy_run_ids(scheduler_id, int(float(score)))
        call = cmd.remove_job_scheduler(
            self.keys, scheduler_id, now_ms=_now_ms(), legacy_run_ids=candidates
        )
        outcome, pending = self._run(call, scheduler_id, "removeJobScheduler")
        return Removed(_text(outcome) == "removed", _text(pending))

    def run_now(self, scheduler_id: str) -> str:
        """Add a job from the scheduler's template, ready now; the schedule
        stays as it is. Returns the new job's id."""
        call = cmd.run_job_scheduler(self.keys, scheduler_id, now_ms=_now_ms())
        return _text(self._run(call, scheduler_id, "runJobScheduler"))


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)
