"""Pure builders for the job scheduler scripts (see each Lua file's header).

The definition of a scheduler (``queues.schedulers.Repeat``) and the cron
arithmetic live in ``queues.schedulers``; these functions only put already
computed values in the order each script reads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from queues import scripts
from queues.commands.admin import add_keys
from queues.keys import QueueKeys
from queues.scripts import ScriptCall


def _add_and_repeat_keys(keys: QueueKeys) -> tuple[str, ...]:
    # The ten keys of addJob (the scripts add a run through its steps), then `repeat`.
    return (*add_keys(keys), keys.repeat)


def _text(value: int | str | None) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True, slots=True)
class SchedulerDefinition:
    """What upsertJobScheduler stores, encoded: every field as the hash holds it."""

    scheduler_id: str
    name: str
    data_json: str
    template_opts_json: str
    run_opts_json: str
    every_ms: int | None = None
    pattern: str | None = None
    next_run_ms: int | None = None  # a pattern's; an every scheduler's is computed in Lua
    tz: str | None = None
    limit: int | None = None
    start_ms: int | None = None
    end_ms: int | None = None


def upsert_job_scheduler(
    keys: QueueKeys, definition: SchedulerDefinition, *, now_ms: int
) -> ScriptCall:
    d = definition
    return scripts.call(
        "upsertJobScheduler",
        _add_and_repeat_keys(keys),
        (
            keys.base,
            d.scheduler_id,
            _text(d.next_run_ms),
            _text(d.every_ms),
            _text(d.pattern),
            _text(d.tz),
            _text(d.limit),
            _text(d.start_ms),
            _text(d.end_ms),
            d.name,
            d.data_json,
            d.template_opts_json,
            d.run_opts_json,
            now_ms,
        ),
    )


def schedule_next_run(
    keys: QueueKeys,
    scheduler_id: str,
    *,
    taken_job_id: str,
    next_run_ms: int | None,
    run_opts_json: str,
    now_ms: int,
) -> ScriptCall:
    """``next_run_ms`` None: the scheduler repeats every N ms (the script
    computes the slot)."""
    return scripts.call(
        "scheduleNextRun",
        _add_and_repeat_keys(keys),
        (keys.base, scheduler_id, taken_job_id, _text(next_run_ms), now_ms, run_opts_json),
    )


def run_job_scheduler(keys: QueueKeys, scheduler_id: str, *, now_ms: int) -> ScriptCall:
    return scripts.call(
        "runJobScheduler", _add_and_repeat_keys(keys), (keys.base, scheduler_id, now_ms)
    )


def remove_job_scheduler(
    keys: QueueKeys, scheduler_id: str, *, now_ms: int, legacy_run_ids: Sequence[str] = ()
) -> ScriptCall:
    """``legacy_run_ids``: for a legacy key, the ids its pending run may have."""
    return scripts.call(
        "removeJobScheduler",
        (
            keys.repeat,
            keys.delayed,
            keys.prioritized,
            keys.wait,
            keys.paused,
            keys.meta,
            keys.events,
        ),
        (keys.base, scheduler_id, now_ms, *legacy_run_ids),
    )
