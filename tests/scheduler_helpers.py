"""Helpers shared by the job scheduler tests: a processor recording runs, the
check that runs came once each on their grid, and bullmq 2.20.1's own
scheduler scripts, driven as BullMQ drives them.

bullmq 2.20.1 (the Python peer) ships BullMQ 5.x's scheduler scripts in its
package (bullmq/commands) but has no Python API for them, and its worker adds
no next run when it takes a scheduler's run (BullMQ's Node worker does, with
updateJobScheduler). These helpers run those installed scripts with the
arguments BullMQ's Node code passes (its scripts.ts: addJobScheduler,
updateJobSchedulerNextMillis), so the keyspace is written by BullMQ's code.
"""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path
from typing import Any

import bullmq
import msgpack
from redis import Redis

from queues.job import Job
from queues.keys import QueueKeys

BULLMQ_COMMANDS = Path(bullmq.__file__).parent / "commands"


def run_time(job_id: str) -> int:
    return int(job_id.rsplit(":", 1)[1])


class Runs:
    """A processor (ours) recording the ids of the runs it processed."""

    def __init__(self) -> None:
        self.ids: list[str] = []

    async def __call__(self, job: Job) -> Any:
        self.ids.append(job.id)
        return {"run": job.id}


def assert_every_run_once_on_the_grid(
    client: Redis, keys: QueueKeys, ids: list[str], every: int
) -> None:
    """No run twice, none off the grid (every run time a whole number of
    ``every`` after the first), and none missed but after a run taken late:
    a worker adds a scheduler's next run when it takes one, and when the next
    slot has passed by then the schedule goes on from the first slot after
    that moment (BullMQ's rule: missed runs are not made up). A loaded test
    machine does that now and then; a slot skipped after a run taken in time
    is a defect. The moment is the next run's ``timestamp``: when it was
    added."""
    times = sorted(run_time(job_id) for job_id in ids)
    assert len(set(ids)) == len(ids), "a run was processed twice"
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert all(gap > 0 and gap % every == 0 for gap in gaps), f"runs drifted: gaps {gaps}"
    run_at = {run_time(job_id): job_id for job_id in ids}
    for earlier, later in itertools.pairwise(times):
        if later - earlier > every:
            added = int(client.hget(keys.job(run_at[later]), "timestamp") or 0)
            assert added >= earlier + every, (
                f"the run after {earlier} skipped to {later}, though it was added at"
                f" {added}, before its slot {earlier + every}: gaps {gaps}"
            )


# The KEYS of bullmq's addJobScheduler-11 and updateJobScheduler-12 ("" = no
# producer job key: BullMQ passes the taken run's key there only to set nrjid).
_ADD_KEYS = (
    "repeat", "delayed", "wait", "paused", "meta", "prioritized", "marker", "id", "events", "pc",
    "active",
)  # fmt: skip
_UPDATE_KEYS = (*_ADD_KEYS[:10], "", "active")


def _now_ms() -> int:
    return int(time.time() * 1000)


class BullmqSchedulerScripts:
    """bullmq 2.20.1's installed addJobScheduler-11 and updateJobScheduler-12."""

    def __init__(self, client: Redis, queue: str, prefix: str = "bull") -> None:
        self.client = client
        self.base = f"{prefix}:{queue}:"
        self._add = client.register_script((BULLMQ_COMMANDS / "addJobScheduler-11.lua").read_text())
        self._update = client.register_script(
            (BULLMQ_COMMANDS / "updateJobScheduler-12.lua").read_text()
        )

    def _keys(self, *names: str) -> list[str]:
        return [self.base + name if name else "" for name in names]

    def upsert(
        self,
        scheduler_id: str,
        *,
        name: str,
        data: Any,
        every: int | None = None,
        pattern: str | None = None,
        next_ms: int | None = None,
        tz: str | None = None,
    ) -> str:
        """Queue.upsertJobScheduler: a pattern's next run comes from the
        caller (BullMQ computes it with cron-parser), an every scheduler's
        is computed by the script."""
        now = _now_ms()
        definition: dict[str, Any] = {"name": name}
        repeat: dict[str, Any] = {"count": 1}
        for key, value in (("every", every), ("pattern", pattern), ("tz", tz)):
            if value is not None:
                definition[key] = value
                repeat[key] = value
        run_opts = {
            "attempts": 0,
            "jobId": f"repeat:{scheduler_id}:{next_ms or now}",
            "delay": max((next_ms or now) - now, 0),
            "timestamp": now,
            "prevMillis": next_ms or now,
            "repeatJobKey": scheduler_id,
            "repeat": repeat,
        }
        answer = self._add(
            keys=self._keys(*_ADD_KEYS),
            args=[
                next_ms or now,
                msgpack.packb(definition),
                scheduler_id,
                json.dumps(data),
                msgpack.packb({}),
                msgpack.packb(run_opts),
                now,
                self.base,
                "",
            ],
        )
        assert isinstance(answer, list), f"addJobScheduler refused: {answer}"
        job_id = answer[0]
        return job_id.decode() if isinstance(job_id, bytes) else str(job_id)

    def next_run(self, job: Any, next_ms: int | None = None) -> Any:
        """What BullMQ's Node worker does when it takes a scheduler's run
        (Worker.nextJobFromJobData -> JobScheduler.upsertJobScheduler with
        override false): ``job`` is a bullmq.Job."""
        repeat = dict(job.opts.get("repeat") or {})
        repeat["count"] = int(repeat.get("count") or 0) + 1
        opts = {**job.opts, "repeat": repeat, "timestamp": _now_ms()}
        return self._update(
            keys=self._keys(*_UPDATE_KEYS),
            args=[
                "" if next_ms is None else next_ms,
                job.repeatJobKey,
                json.dumps(job.data),
                msgpack.packb(opts),
                _now_ms(),
                self.base,
                job.id,
            ],
        )
