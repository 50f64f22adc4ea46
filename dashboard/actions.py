"""Every dashboard action runs here: through ``queues.queue.Queue`` (one Lua
script per move), turned into a plain-words message, an audit log line and an
``AuditEntry`` row (the audit trail, and the queue page chart's markers).

Pages and the API both call :func:`job_action` / :func:`queue_action`, so the
same click and the same POST say the same thing and log the same line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, transaction
from redis import Redis

from dashboard.models import AuditEntry
from queues import errors
from queues.commands.admin import FinishedState
from queues.inspect import QueueRef
from queues.queue import Queue

audit = logging.getLogger("echomq.audit")

JOB_ACTIONS = ("retry", "promote", "fail", "remove")
QUEUE_ACTIONS = ("retry_all", "promote_all", "clean", "pause", "resume")
FINISHED_STATES: dict[str, FinishedState] = {"failed": "failed", "completed": "completed"}
MAX_JOBS_PER_ACTION = 500

# Which states each single-job action starts from (what the buttons offer).
ACTIONS_BY_STATE: dict[str, tuple[str, ...]] = {
    "wait": ("fail", "remove"),
    "prioritized": ("fail", "remove"),
    "delayed": ("promote", "fail", "remove"),
    "active": ("fail", "remove"),
    "waiting-children": ("remove",),
    "completed": ("retry", "remove"),
    "failed": ("retry", "remove"),
}

_PAST = {"retry": "retried", "promote": "promoted", "fail": "failed", "remove": "removed"}
_NOT_IN_STATE = {
    "retry": "Job {id} is no longer {state} — someone retried it already",
    "promote": "Job {id} is no longer delayed — it was promoted or has run already",
    "fail": "Job {id} was not failed: it is not waiting, delayed or active any more",
    "remove": "Job {id} was not removed: it is not in a state it can be removed from",
}


class ActionRefused(ValueError):
    """Bad input for an action (unknown action, state, age...): a 400."""


@dataclass(slots=True)
class Outcome:
    job_id: str
    ok: bool
    code: str  # "ok" or the script error's name (e.g. "JOB_NOT_IN_STATE")
    message: str

    @property
    def status(self) -> int:
        if self.ok:
            return 200
        return 404 if self.code == "JOB_NOT_EXIST" else 409


@dataclass(slots=True)
class ActionResult:
    action: str
    ref: QueueRef
    outcomes: list[Outcome] = field(default_factory=list)
    count: int = 0  # jobs moved
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.count > 0 or all(o.ok for o in self.outcomes)

    @property
    def status(self) -> int:
        """HTTP status for the API: the first failure's when nothing moved."""
        if self.ok:
            return 200
        return next(o.status for o in self.outcomes if not o.ok)

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "queue": self.ref.qualified,
            "count": self.count,
            "message": self.message,
            "results": [
                {"id": o.job_id, "ok": o.ok, "code": o.code, "message": o.message}
                for o in self.outcomes
            ],
        }


def _refusal_message(action: str, job_id: str, error: errors.ScriptError, state: str) -> str:
    code = error.code
    if code == errors.ErrorCode.JOB_NOT_EXIST:
        return f"Job {job_id} no longer exists — it was removed already"
    if code == errors.ErrorCode.JOB_NOT_IN_STATE:
        return _NOT_IN_STATE[action].format(id=job_id, state=state)
    if code in (errors.ErrorCode.JOB_LOCK_NOT_EXIST, errors.ErrorCode.JOB_LOCK_MISMATCH):
        return f"Job {job_id} is being processed by a worker; try again when it finishes"
    if code == errors.ErrorCode.JOB_BELONGS_TO_JOB_SCHEDULER:
        return f"Job {job_id} belongs to a job scheduler; remove the scheduler instead"
    if code in (errors.ErrorCode.JOB_PENDING_CHILDREN, errors.ErrorCode.JOB_HAS_FAILED_CHILDREN):
        return f"Job {job_id} has children that have not finished"
    return f"Job {job_id} was not {_PAST[action]}: {code.name.replace('_', ' ').lower()}"


def _summary(action: str, outcomes: Sequence[Outcome]) -> str:
    moved = [o for o in outcomes if o.ok]
    refused = [o for o in outcomes if not o.ok]
    if len(outcomes) == 1:
        return outcomes[0].message
    parts = []
    if moved:
        parts.append(f"{len(moved)} jobs {_PAST[action]}")
    if refused:
        parts.append(f"{len(refused)} not: " + "; ".join(o.message for o in refused[:3]))
        if len(refused) > 3:
            parts[-1] += f"; and {len(refused) - 3} more"
    return ". ".join(parts)


def _audit(user: str, result: ActionResult, jobs: str, outcome: str) -> None:
    """The log line, and the row. The action has happened by now: a database
    that cannot take the row is logged, and the user still gets the answer."""
    ref = result.ref
    audit.info(
        "user=%s action=%s queue=%s jobs=%s result=%s",
        user,
        result.action,
        ref.qualified,
        jobs,
        outcome,
    )
    try:
        # Its own savepoint: inside a transaction (a test's, or ATOMIC_REQUESTS)
        # a refused row must not leave the request unable to query.
        with transaction.atomic():
            AuditEntry.objects.create(
                user=user[:150],
                action=result.action,
                queue=ref.qualified,
                jobs=jobs,
                count=result.count,
                result=result.message[:1000],
            )
    except DatabaseError:
        audit.exception("the audit entry of %s on %s was not stored", result.action, ref.qualified)


def job_action(
    client: Redis,
    ref: QueueRef,
    action: str,
    job_ids: Sequence[str],
    *,
    user: str,
    state: str = "failed",
    reason: str = "",
) -> ActionResult:
    """Run ``action`` on each job (each one script); refusals become messages."""
    if action not in JOB_ACTIONS:
        raise ActionRefused(f"Unknown action {action!r}")
    if not job_ids:
        raise ActionRefused("Select at least one job")
    if len(job_ids) > MAX_JOBS_PER_ACTION:
        raise ActionRefused(f"At most {MAX_JOBS_PER_ACTION} jobs per action")
    finished = FINISHED_STATES.get(state)
    if action == "retry" and finished is None:
        raise ActionRefused("Only failed or completed jobs can be retried")
    queue = Queue(ref.name, client, prefix=ref.prefix)
    admin_reason = f"{reason.strip() or 'Failed by an operator'} (failed by {user})"
    outcomes = []
    for job_id in job_ids:
        try:
            if action == "retry":
                queue.retry(job_id, state=finished or "failed")
            elif action == "promote":
                queue.promote(job_id)
            elif action == "fail":
                queue.fail(job_id, admin_reason)
            else:
                queue.remove(job_id)
        except errors.ScriptError as error:
            message = _refusal_message(action, job_id, error, state)
            outcomes.append(Outcome(job_id, False, error.code.name, message))
        else:
            outcomes.append(Outcome(job_id, True, "ok", f"Job {job_id} {_PAST[action]}"))
    result = ActionResult(action, ref, outcomes, sum(o.ok for o in outcomes))
    result.message = _summary(action, outcomes)
    ids = ",".join(job_ids[:20]) + ("..." if len(job_ids) > 20 else "")
    _audit(user, result, ids, f"moved={result.count} refused={len(job_ids) - result.count}")
    return result


def queue_action(
    client: Redis,
    ref: QueueRef,
    action: str,
    *,
    user: str,
    state: str = "failed",
    grace_ms: int = 0,
) -> ActionResult:
    """A whole-queue action; bulk moves run in bounded batches inside Lua."""
    if action not in QUEUE_ACTIONS:
        raise ActionRefused(f"Unknown action {action!r}")
    queue = Queue(ref.name, client, prefix=ref.prefix)
    result = ActionResult(action, ref)
    finished = FINISHED_STATES.get(state)
    if action == "retry_all":
        if finished is None:
            raise ActionRefused("Only failed or completed jobs can be retried")
        result.count = queue.retry_all(finished)
        result.message = f"{result.count:,} {state} jobs moved back to waiting"
    elif action == "promote_all":
        result.count = queue.promote_all()
        result.message = f"{result.count:,} delayed jobs promoted to waiting"
    elif action == "clean":
        if finished is None:
            raise ActionRefused("Only completed or failed jobs can be cleaned")
        if grace_ms < 0:
            raise ActionRefused("Choose an age: zero or more milliseconds")
        result.count = len(queue.clean(finished, grace_ms))
        result.message = f"{result.count:,} {state} jobs older than {_age(grace_ms)} removed"
    elif action == "pause":
        queue.pause()
        result.message = f"Queue {ref.name} paused: workers take no new jobs"
    else:
        queue.resume()
        result.message = f"Queue {ref.name} resumed"
    _audit(user, result, f"state={state}", f"count={result.count}")
    return result


def _age(ms: int) -> str:
    seconds = ms // 1000
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} seconds"
