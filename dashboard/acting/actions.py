"""Every dashboard action runs here, one Lua script per move (each job's
own, pipelined, or ``queues.queue.Queue``'s), and becomes a plain-words
message, an audit line and an ``AuditEntry`` row: pages and the API call the
same function, so a click and a POST say the same. Broken jobs left where
they were are named; a refusal by Redis raises :class:`ActionRefused` (its
``status`` and ``code`` the API's), saying what earlier batches did."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.db import DatabaseError, transaction
from redis import Redis
from redis.exceptions import NoScriptError, OutOfMemoryError, ResponseError

from dashboard.acting.cohort_record import record_cohort
from dashboard.core import answers
from dashboard.core.answers import (
    JOB_ACTIONS,
    LIMIT_ACTIONS,
    MAX_JOBS_PER_ACTION,
    QUEUE_ACTIONS,
    SCHEDULER_ACTIONS,
    SET_ACTIONS,
    SchedulerOutcome,
)
from dashboard.core.answers import JobOutcome as Outcome
from dashboard.core.jsonresponse import JsonResponse
from dashboard.models import AuditEntry
from queues import errors, scripts
from queues.commands import admin
from queues.commands.admin import MAX_GLOBAL_CONCURRENCY, FinishedState, RequeueSource
from queues.keys import InvalidName, QueueKeys, validate_job_id
from queues.queue import BulkResult, BulkStopped, Queue, now_ms
from queues.read.answers import Answer
from queues.read.cohorts import MAX_TRACKED, previous_reasons
from queues.read.refs import DEFAULT_CONNECTION, QueueRef
from queues.read.states import TAB, TABS
from queues.schedulers import JobSchedulers, SchedulerRefused, describe_refusal
from queues.scripts import ScriptCall

audit = logging.getLogger("echomq.audit")
_Answer = TypeVar("_Answer", bound=Answer)

FINISHED_STATES: dict[str, FinishedState] = {"failed": "failed", "completed": "completed"}

# Which single-job actions each state's jobs can take (what the buttons offer).
ACTIONS_BY_STATE: dict[str, tuple[str, ...]] = {tab.name: tab.actions for tab in TABS}

# What an action did to its jobs, as its message says it.
PAST = {
    "retry": "retried",
    "promote": "promoted",
    "fail": "failed",
    "remove": "removed",
    "retry_all": "moved back to waiting",
    "promote_all": "promoted to waiting",
    "clean": "removed",
}
_NOT_IN_STATE = {
    "retry": "Job {id} is no longer {state} — someone retried it already",
    "promote": "Job {id} is no longer delayed — it was promoted or has run already",
    "fail": "Job {id} was not failed: it is not waiting, delayed or active any more",
    "remove": "Job {id} was not removed: it is not in a state it can be removed from",
}
# The actions whose jobs go back to run, so "what became of them" has an answer.
COHORT_ACTIONS = ("retry", "promote", "retry_all", "promote_all")
# How many broken jobs a message names before it says "and N more".
NAMED_BROKEN = 3


# The API's status of each refusal: a full Redis 507, not an outage's 503 (a
# retry will not help until memory is freed); a corrupt key 409 (the queue's
# data is in the way, not the request).
REFUSAL_STATUS = {
    "bad_request": 400,
    "job_not_exist": 404,
    "job_not_in_state": 409,
    "job_broken": 409,
    "corrupt_key": 409,
    "search_replaced": 409,
    "data_too_large": 413,
    "search_busy": 429,
    "redis_out_of_memory": 507,
}


class ActionRefused(ValueError):
    """An action that did not run, and why: bad input unless its ``code``
    says otherwise, its ``status`` the code's in REFUSAL_STATUS (else 400);
    the subclasses are Redis refusing it."""

    code = "bad_request"

    def __init__(self, message: str, code: str | None = None):
        super().__init__(message)
        self.code = code or self.code
        self.status = REFUSAL_STATUS.get(self.code, 400)


class RedisOutOfMemory(ActionRefused):
    code = "redis_out_of_memory"


class QueueKeyCorrupt(ActionRefused):
    code = "corrupt_key"


@dataclass(slots=True)
class ActionResult:
    """What an action did; ``state``, ``started``, ``reasons`` and
    ``moved_ids`` are what a retry's or promote's cohort keeps."""

    action: str
    ref: QueueRef
    outcomes: list[Outcome] = field(default_factory=list)
    count: int = 0  # jobs moved
    message: str = ""
    # Jobs a bulk action left where they were because their keys are broken.
    skipped: list[errors.SkippedJob] = field(default_factory=list)
    # act_on_ids: jobs that had left the state (or were gone) when their turn came.
    moved_meanwhile: int = 0
    moved_ids: list[str] = field(default_factory=list)
    state: str = ""
    started: int = 0
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.count > 0 or all(o.ok for o in self.outcomes)

    def api_answer(self, shape: type[_Answer], refused: type[_Answer]) -> _Answer | JsonResponse:
        """The API's answer: ``shape``, or when nothing moved ``refused`` with
        the first refusal as its ``error`` and status."""
        if self.ok:
            return self.answer(shape)
        first = next(o for o in self.outcomes if not o.ok)
        error = answers.ErrorDetail(code=first.code.lower(), message=self.message)
        return JsonResponse(self.answer(refused, error=error), status=first.status)

    def answer(self, shape: type[_Answer], **more: Any) -> _Answer:
        """This result as the API answers it: ``shape`` (answers.ActionResult or
        one of its kin), with the fields ``more`` adds or replaces."""
        skipped = [
            answers.SkippedJob(id=j.job_id, reason=j.describe(), code=j.reason)
            for j in self.skipped
        ]
        fields: dict[str, Any] = {
            "action": self.action,
            "queue": self.ref.qualified,
            "count": self.count,
            "message": self.message,
            "results": self.outcomes,
            "skipped": skipped,
        }
        return shape(**(fields | more))


def _refusal_message(action: str, job_id: str, code: errors.ErrorCode, state: str) -> str:
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
    return f"Job {job_id} was not {PAST[action]}: {code.name.replace('_', ' ').lower()}"


def _named(said: Sequence[str]) -> str:
    """The first :data:`NAMED_BROKEN` of ``said``, and how many more."""
    more = f"; and {len(said) - NAMED_BROKEN:,} more" if len(said) > NAMED_BROKEN else ""
    return "; ".join(said[:NAMED_BROKEN]) + more


def _first_ids(ids: Sequence[str]) -> str:
    """The first 20 ids, as an audit line lists them."""
    return ",".join(ids[:20]) + ("..." if len(ids) > 20 else "")


def _with_broken(message: str, skipped: Sequence[errors.SkippedJob]) -> str:
    """E.g. "...; 1 skipped as broken: job 5 (its key is a string, not a job hash)"."""
    if not skipped:
        return message
    named = _named([f"job {job.job_id} ({job.describe()})" for job in skipped])
    return f"{message}; {len(skipped):,} skipped as broken: {named}"


def refusal_for(error: Exception, done: str) -> ActionRefused:
    """The ActionRefused for Redis refusing to start (the rest of) an action;
    ``done`` says what happened before it, "" when nothing did."""
    before = f" {done} before that; the rest was left as it was." if done else ""
    if isinstance(error, errors.CorruptKey):
        return QueueKeyCorrupt(f"{error}{before}")
    return RedisOutOfMemory(
        "Redis is out of memory: "
        + ("nothing was changed." if not done else f"it refused to go on.{before}")
        + " Free memory (clean or remove old jobs) or raise maxmemory, then try again."
    )


def _audited(client: Redis, user: str, result: ActionResult, jobs: str, outcome: str) -> None:
    """Audit an action and keep what a retry or promote moved as its cohort
    (acting/cohort_record.py), linked to the audit row."""
    audit_id = record_audit(user, result, jobs, outcome)
    if result.action in COHORT_ACTIONS:
        record_cohort(
            client,
            result.ref,
            result.action,
            result.moved_ids,
            user=user,
            at_ms=result.started,
            source="delayed" if result.action.startswith("promote") else result.state,
            count=result.count,
            previous_reasons=result.reasons,
            audit_id=audit_id,
        )


def _refused(
    client: Redis, user: str, result: ActionResult, jobs: str, refusal: ActionRefused, did: str = ""
) -> ActionRefused:
    """Audit an action Redis refused to start or go on with (``did``: the
    figures of what it did before) and return the refusal to raise."""
    result.message = str(refusal)
    _audited(client, user, result, jobs, f"{did}refused:{refusal.code}")
    return refusal


def record_audit(
    user: str, result: ActionResult, jobs: str, outcome: str, *, diff: str = "", job: str = ""
) -> int | None:
    """The log line, and the row (for a change to one job, dashboard.acting.job_edits:
    that ``job`` and the ``diff`` of its name, data or options). The action has
    happened by now: a database that cannot take the row is logged, and the
    user still gets the answer. Returns the row's id (None when not stored)."""
    ref = result.ref
    audit.info(
        # The connection is named when not the default: a dashboard of one Redis logs as before.
        "user=%s action=%s %squeue=%s jobs=%s result=%s",
        user,
        result.action,
        "" if ref.connection == DEFAULT_CONNECTION else f"connection={ref.connection} ",
        ref.qualified,
        jobs,
        outcome,
    )
    try:
        # Its own savepoint: inside a transaction (a test's, or ATOMIC_REQUESTS)
        # a refused row must not leave the request unable to query.
        with transaction.atomic():
            entry = AuditEntry.objects.create(
                user=user[:150],
                action=result.action,
                queue=ref.qualified,
                connection=ref.connection,
                jobs=jobs,
                count=result.count,
                result=result.message[:1000],
                diff=diff,
                job=job,
            )
    except DatabaseError:
        audit.exception("the audit entry of %s on %s was not stored", result.action, ref.qualified)
        return None
    return int(entry.pk)


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
    """Run ``action`` on each job (each its own script, :data:`BATCH` to a
    round trip); each job's refusal becomes its message."""
    if action not in JOB_ACTIONS:
        raise ActionRefused(f"Unknown action {action!r}")
    if not job_ids:
        raise ActionRefused("Select at least one job")
    if len(job_ids) > MAX_JOBS_PER_ACTION:
        raise ActionRefused(f"At most {MAX_JOBS_PER_ACTION} jobs per action")
    if action == "retry" and state not in FINISHED_STATES:
        raise ActionRefused("Only failed or completed jobs can be retried")
    for job_id in job_ids:
        validate_job_id(job_id)
    admin_reason = f"{reason.strip() or 'Failed by an operator'} (failed by {user})"
    return _act_on_each(client, ref, action, job_ids, state, user=user, reason=admin_reason)


def _summary(action: str, outcomes: Sequence[Outcome]) -> str:
    if len(outcomes) == 1:
        return outcomes[0].message
    refused = [o.message for o in outcomes if not o.ok]
    moved = len(outcomes) - len(refused)
    parts = [f"{moved} jobs {PAST[action]}"] if moved else []
    if refused:
        parts.append(f"{len(refused)} not: " + _named(refused))
    return ". ".join(parts)


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
    finished = FINISHED_STATES.get(state)
    if action in ("retry_all", "clean") and finished is None:
        verb = "retried" if action == "retry_all" else "cleaned"
        raise ActionRefused(f"Only failed or completed jobs can be {verb}")
    if action == "clean" and grace_ms < 0:
        raise ActionRefused("Choose an age: zero or more milliseconds")
    result = ActionResult(action, ref, state=state, started=now_ms())
    jobs = f"state={state}"
    # The jobs a bulk action moves, as its message names them.
    which = f"{'delayed' if action == 'promote_all' else state} jobs"
    older = f" older than {_age(grace_ms)}" if action == "clean" else ""
    try:
        if action == "pause":
            queue.pause()
            result.message = f"Queue {ref.name} paused: workers take no new jobs"
        elif action == "resume":
            queue.resume()
            result.message = f"Queue {ref.name} resumed"
        else:
            if action == "retry_all":
                bulk = queue.retry_all(finished or "failed", track=MAX_TRACKED)
            elif action == "promote_all":
                bulk = queue.promote_all(track=MAX_TRACKED)
            else:
                bulk = queue.clean(finished or "failed", grace_ms, keep_ids=False)
            _bulk_done(bulk, result)
            result.message = _with_broken(
                f"{bulk.count:,} {which}{older} {PAST[action]}", result.skipped
            )
    except (BulkStopped, OutOfMemoryError, errors.CorruptKey) as error:
        refused: Exception = error
        done = ""
        if isinstance(error, BulkStopped):  # what its completed batches did
            refused = error.refusal
            _bulk_done(error.done, result)
            if result.count:
                moved = f"{result.count:,} {which} were {PAST[action]}"
                done = _with_broken(moved, result.skipped)
        refusal = refusal_for(refused, done)
        raise _refused(client, user, result, jobs, refusal, f"count={result.count} ") from error
    skipped = ",".join(job.job_id for job in result.skipped[:20])
    outcome = f"count={result.count}" + (f" skipped={skipped}" if skipped else "")
    _audited(client, user, result, jobs, outcome)
    return result


def _bulk_done(bulk: BulkResult, result: ActionResult) -> None:
    """Copy what a bulk action moved into ``result`` (and its cohort), and what it skipped."""
    result.count, result.moved_ids, result.reasons = bulk.count, bulk.ids, bulk.previous_reasons
    result.skipped = list(bulk.skipped.values())


def _age(ms: int) -> str:
    seconds = ms // 1000
    for unit, size in (("day", 86_400), ("hour", 3_600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} seconds"


def set_global_concurrency(
    client: Redis, ref: QueueRef, limit: int | None, *, user: str
) -> ActionResult:
    """Set the queue's global concurrency (``limit`` 1 up) or clear it (None):
    one script that checks the meta hash before it writes."""
    if limit is not None and not 1 <= limit <= MAX_GLOBAL_CONCURRENCY:
        raise ActionRefused(
            f"Global concurrency must be a whole number from 1 to {MAX_GLOBAL_CONCURRENCY:,}"
        )
    action = LIMIT_ACTIONS[0] if limit is not None else LIMIT_ACTIONS[1]
    result = ActionResult(action, ref)
    setting = f"concurrency={limit if limit is not None else 'none'}"
    try:
        previous = Queue(ref.name, client, prefix=ref.prefix).set_global_concurrency(limit)
    except (OutOfMemoryError, errors.CorruptKey) as error:
        raise _refused(client, user, result, setting, refusal_for(error, "")) from error
    # Whatever another writer stored is quoted, and cut: it goes into a log line.
    before = (previous if previous.isdigit() else repr(previous))[:40] if previous else "none"
    was = f"it was {before}" if previous else "there was none"
    if limit is None:
        result.message = (
            f"Global concurrency of {ref.name} cleared ({was}): each worker runs up to its own"
        )
    else:
        run = "job runs" if limit == 1 else "jobs run"
        result.message = (
            f"Global concurrency of {ref.name} set to {limit:,} ({was}): at most {limit:,}"
            f" {run} at once, across all workers"
        )
    _audited(client, user, result, setting, f"previous={before}")
    return result


# -- job schedulers ---------------------------------------------------------------

# A scheduler id comes from the page or the API and becomes part of the key
# repeat:<id>: printable, bounded (BullMQ's ids may hold ':', so that stays).
MAX_SCHEDULER_ID_LENGTH = 1000


def _scheduler_outcome(owner: JobSchedulers, action: str, scheduler_id: str) -> Outcome:
    """The one script of a scheduler action, in words; refusals included."""

    def said(ok: bool, code: str, words: str, outcome_id: str = scheduler_id) -> Outcome:
        return SchedulerOutcome(outcome_id, ok, code, f"Job scheduler {scheduler_id} {words}")

    try:
        if action == "run_now":
            job_id = owner.run_now(scheduler_id)
            return said(True, "ok", f"ran now: job {job_id} added", job_id)
        removed = owner.remove(scheduler_id)
    except SchedulerRefused as refused:
        code = (
            "SCHEDULER_NOT_EXIST" if refused.reason == "scheduler:missing" else "SCHEDULER_BROKEN"
        )
        verb = "run" if action == "run_now" else "removed"
        return said(False, code, f"was not {verb}: {describe_refusal(refused.reason)}")
    if not removed.existed:
        return said(False, "SCHEDULER_NOT_EXIST", "no longer exists — it was removed already")
    pending = f" with its pending run {removed.pending_job_id}" if removed.pending_job_id else ""
    return said(True, "ok", f"removed{pending}")


def scheduler_action(
    client: Redis, ref: QueueRef, action: str, scheduler_id: str, *, user: str
) -> ActionResult:
    """Run now (a job from the template, the schedule left alone) or remove
    (the scheduler and its pending run): one script each. A scheduler whose
    definition is broken is refused, nothing changed, with the reason."""
    if action not in SCHEDULER_ACTIONS:
        raise ActionRefused(f"Unknown action {action!r}")
    # Not printable: control characters, and lone surrogates UTF-8 cannot encode.
    if not 0 < len(scheduler_id) <= MAX_SCHEDULER_ID_LENGTH or not scheduler_id.isprintable():
        raise ActionRefused("Not a job scheduler id")
    result = ActionResult(action, ref)
    owner = JobSchedulers(ref.name, client, prefix=ref.prefix)
    jobs = f"scheduler={scheduler_id}"
    try:
        outcome = _scheduler_outcome(owner, action, scheduler_id)
    except (OutOfMemoryError, errors.CorruptKey) as error:
        raise _refused(client, user, result, jobs, refusal_for(error, "")) from error
    result.outcomes, result.count, result.message = [outcome], int(outcome.ok), outcome.message
    _audited(client, user, result, jobs, "ok" if outcome.ok else outcome.code)
    return result


# -- one script per job, in batches (the ticked jobs, a search result, an error group) --

# The most ids one call of act_on_ids takes: a search keeps this many matches
# for acting; beyond it the person narrows the search.
MAX_IDS_PER_SET = 10_000
# Ids per pipelined round trip: each is one short script, so Redis serves the
# workers between them; 100 per trip makes 10,000 jobs about 100 round trips.
BATCH = 100
_SET_SCRIPTS = {"retry": "requeueJob", "promote": "requeueJob", "remove": "removeJob"}
# Codes meaning "no longer where the set was taken from": skipped and counted.
_MOVED_CODES = (errors.ErrorCode.JOB_NOT_EXIST, errors.ErrorCode.JOB_NOT_IN_STATE)


def _call(
    keys: QueueKeys, action: str, job_id: str, state: str, *, reason: str = "", listed: bool = True
) -> ScriptCall:
    """The script of ``action`` on one job; a set's remove (``listed`` False)
    only takes the job from ``state``, where the set found it."""
    if action == "fail":
        return admin.fail_job(keys, job_id, reason=reason, now_ms=now_ms())
    if action == "remove":
        only_from = () if listed else [key.name for key in TAB[state].keys]
        return admin.remove_job(keys, job_id, now_ms=now_ms(), only_from=only_from)
    source: RequeueSource = "delayed" if action == "promote" else FINISHED_STATES[state]
    return admin.requeue_job(keys, job_id, source)


def _set_ids(action: str, job_ids: Sequence[str], state: str) -> list[str]:
    """The ids, checked and de-duplicated in order; refusals for a bad request."""
    if action not in SET_ACTIONS:
        raise ActionRefused(f"Unknown action {action!r}: one of {', '.join(SET_ACTIONS)}")
    if state not in TAB:
        raise ActionRefused(f"Unknown state {state!r}")
    if action == "retry" and state not in FINISHED_STATES:
        raise ActionRefused("Only failed or completed jobs can be retried")
    if action == "promote" and state != "delayed":
        raise ActionRefused("Only delayed jobs can be promoted")
    ids = list(dict.fromkeys(job_ids))
    if not ids:
        raise ActionRefused("No jobs to act on")
    if len(ids) > MAX_IDS_PER_SET:
        raise ActionRefused(f"At most {MAX_IDS_PER_SET:,} jobs at once; narrow the search")
    for job_id in ids:
        try:
            validate_job_id(job_id)
        except InvalidName:
            raise ActionRefused(f"Not a job id: {job_id[:40]!r}") from None
    return ids


def _act_on_each(
    client: Redis,
    ref: QueueRef,
    action: str,
    ids: Sequence[str],
    state: str,
    *,
    user: str,
    listed: bool = True,
    reason: str = "",
) -> ActionResult:
    """Each job's script (_call), :data:`BATCH` to a pipelined round trip,
    each answer counted into the result (_tally), then its message and audit
    (``listed``: the jobs a person ticked; else a set's). A script Redis forgot
    meanwhile (SCRIPT FLUSH, a restart) is run again on its own, loading it;
    Redis refusing a batch is audited and raised, saying what was done."""
    jobs = _first_ids(ids) if listed else f"{len(ids)} ids from {state}: {_first_ids(ids)}"
    # Read before the retry deletes them: "failed again (same reason)" later.
    reasons = previous_reasons(client, ref.keys, ids) if action == "retry" else {}
    result = ActionResult(action, ref, state=state, started=now_ms(), reasons=reasons)
    calls = [_call(ref.keys, action, i, state, reason=reason, listed=listed) for i in ids]
    try:
        for first in range(0, len(calls), BATCH):
            pipe: Any = client.pipeline(transaction=False)
            for call in calls[first : first + BATCH]:
                scripts.queue_in_pipeline(pipe, call)
            answers: list[Any] = pipe.execute(raise_on_error=False)
            for i, answer in enumerate(answers, first):
                if isinstance(answer, NoScriptError):
                    answer = scripts.run(client, calls[i])
                _tally(result, ids[i], answer, listed=listed)
    except (OutOfMemoryError, errors.CorruptKey) as error:
        moved, past = result.count, PAST[action]
        done = f"{moved:,} jobs were {past}"
        if listed:  # a page's few ticked jobs
            done = f"{moved} of the jobs {'was' if moved == 1 else 'were'} {past}"
        refusal = refusal_for(error, done if moved else "")
        raise _refused(client, user, result, jobs, refusal, f"moved={moved} ") from error
    if listed:
        result.message = _summary(action, result.outcomes)
        # Listed only now: a refusal half-way keeps no cohort.
        result.moved_ids = [o.id for o in result.outcomes if o.ok]
        broken = [o.id for o in result.outcomes if o.code == "JOB_BROKEN"]
        outcome = f"moved={result.count} refused={len(ids) - result.count}"
    else:
        result.message = _set_summary(action, result, len(ids))
        broken = [job.job_id for job in result.skipped]
        outcome = f"moved={result.count} moved_meanwhile={result.moved_meanwhile}"
    broken_ids = ",".join(broken[:20])
    _audited(client, user, result, jobs, outcome + (f" broken={broken_ids}" if broken else ""))
    return result


def act_on_ids(
    client: Redis,
    ref: QueueRef,
    action: str,
    job_ids: Sequence[str],
    *,
    user: str,
    state: str,
) -> ActionResult:
    """Retry, promote or remove a set of up to :data:`MAX_IDS_PER_SET` jobs
    that were in ``state`` when it was taken (a search result, an error group,
    a cohort): each by its own script, which checks the job is still there
    (one that moved meanwhile is counted, a broken one listed in ``skipped``),
    :data:`BATCH` to a round trip, one audit entry for the set."""
    ids = _set_ids(action, job_ids, state)
    scripts.ensure_loaded(client, (_SET_SCRIPTS[action],))
    # A search result or an error group retried or promoted: its jobs are
    # followed as any retry's are ("what became of them").
    return _act_on_each(client, ref, action, ids, state, user=user, listed=False)


def _tally(result: ActionResult, job_id: str, answer: Any, *, listed: bool) -> None:
    """Count one script's answer into ``result``; an error reply is raised.
    ``listed``: jobs a person ticked, each answered with its own outcome
    (a broken one refused); else a set's, where a job that moved meanwhile is
    counted and a broken one skipped."""
    if isinstance(answer, ResponseError) and not isinstance(answer, OutOfMemoryError):
        errors.raise_refusal(answer)  # CorruptKey, or the error itself
    if isinstance(answer, Exception):
        raise answer
    past = PAST[result.action]
    reason = errors.broken_reason(answer)
    if reason is not None and not listed:
        result.skipped.append(errors.SkippedJob(job_id, reason))
    elif reason is not None:
        message = f"Job {job_id} was not {past}: {errors.describe_reason(reason)}"
        result.outcomes.append(Outcome(job_id, False, "JOB_BROKEN", message))
    elif errors.is_error_code(answer):
        code = errors.ErrorCode(int(answer))
        if code in _MOVED_CODES and not listed:
            result.moved_meanwhile += 1
        elif len(result.outcomes) < MAX_JOBS_PER_ACTION:
            # Bounded like a job action's results; the summary counts what is kept.
            message = _refusal_message(result.action, job_id, code, result.state)
            result.outcomes.append(Outcome(job_id, False, code.name, message))
    else:
        result.count += 1
        if listed:
            result.outcomes.append(Outcome(job_id, True, "ok", f"Job {job_id} {past}"))
        else:
            result.moved_ids.append(job_id)


def _set_summary(action: str, result: ActionResult, asked: int) -> str:
    """E.g. "1,201 of 1,204 jobs retried; 3 had moved meanwhile and were skipped"."""
    parts = [f"{result.count:,} of {asked:,} jobs {PAST[action]}"]
    if result.moved_meanwhile:
        parts.append(f"{result.moved_meanwhile:,} had moved meanwhile and were skipped")
    refused = result.outcomes
    if refused:
        parts.append(f"{len(refused):,} refused: " + _named([o.message for o in refused]))
    return _with_broken("; ".join(parts), result.skipped)
