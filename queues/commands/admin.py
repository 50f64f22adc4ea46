"""Pure builders for every script that is not a worker transition.

Each function takes a queue's :class:`QueueKeys` plus plain values and returns
the :class:`ScriptCall` to run; nothing here talks to Redis, so the argument
order each script expects (see the header of its Lua file) is tested without a
server.
"""

from __future__ import annotations

from typing import Literal

from queues import scripts
from queues.job_options import PreparedJob
from queues.keys import QueueKeys
from queues.scripts import ScriptCall

FinishedState = Literal["completed", "failed"]


def _flag(value: bool) -> str:
    return "1" if value else "0"


def add_job(keys: QueueKeys, job: PreparedJob) -> ScriptCall:
    return scripts.call(
        "addJob",
        (
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
        ),
        (
            keys.base,
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
        ),
    )
