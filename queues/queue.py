"""The synchronous Queue: add jobs, read them, and run the admin actions.

Every job move is one script from ``priv/scripts`` (built by
``queues.commands.admin``); reads use a constant number of pipelined round
trips and never more than the page asked for. Works with ``redis.Redis`` and
``RedisCluster`` clients alike (all keys of a queue share its prefix, so a
``{hash-tag}`` prefix keeps them in one slot).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis import Redis
from redis.exceptions import OutOfMemoryError, ResponseError

from queues import codec, scripts
from queues.commands import admin
from queues.commands.admin import CleanableState, FinishedState, RequeueSource
from queues.errors import (
    CorruptKey,
    JobNotInState,
    SkippedJob,
    decode_skipped,
    raise_for_code,
    raise_refusal,
)
from queues.job import Job
from queues.job_options import JobOptions, PreparedJob, prepare_job, to_json
from queues.keys import DEFAULT_PREFIX, QueueKeys, validate_job_id
from queues.read import counts, lists
from queues.read import job as one_job
from queues.read.cohorts import REASON_BYTES
from queues.scripts import ScriptCall

_CLEAN_BATCH = 1000
# List entries one listedJobs call looks at: a few ms of Redis each.
_LISTED_BUDGET = 5000
# At most this many jobs, and about this much JSON, per addJobs call of add_bulk.
_JOBS_PER_CALL = 100
_BYTES_PER_CALL = 4 * 1024 * 1024

AddSpec = tuple[str, Any, "JobOptions | Mapping[str, Any] | None"]


def now_ms() -> int:
    return int(time.time() * 1000)


def _text(raw: object) -> str:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", errors="replace")
    return str(raw)


@dataclass(slots=True)
class BulkResult:
    """What a bulk action did: how many jobs it moved or deleted (``ids``: the
    moved or deleted ones, when asked for; ``previous_reasons``: the start of
    the failedReason each moved one held, when it had one), and the jobs it
    left where they were because their keys are broken, one entry per id."""

    count: int = 0
    ids: list[str] = field(default_factory=list)
    skipped: dict[str, SkippedJob] = field(default_factory=dict)
    previous_reasons: dict[str, str] = field(default_factory=dict)

    def add_skipped(self, jobs: Iterable[SkippedJob]) -> None:
        # A later batch may look again at a job an earlier one reported.
        for job in jobs:
            self.skipped.setdefault(job.job_id, job)


@dataclass(frozen=True, slots=True)
class DataUpdate:
    """What :meth:`Queue.update_data` replaced: the state the job was in
    ("wait", "paused", "prioritized", "delayed", "failed") and the data text
    it held before ("" when it had none)."""

    state: str
    previous: str


class BulkStopped(Exception):
    """Redis refused a bulk action's next batch (out of memory, a key of the
    wrong type). Each batch is one script, so the earlier ones completed and
    nothing is half-moved: ``done`` is what they did, ``__cause__`` the refusal."""

    def __init__(self, done: BulkResult, refusal: Exception) -> None:
        self.done = done
        self.refusal = refusal
        super().__init__(f"stopped after {done.count} jobs: {refusal}")


class Queue:
    def __init__(self, name: str, connection: Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.keys = QueueKeys(name, prefix)
        self.name = name
        self.prefix = prefix
        self.connection = connection
        # redis-py types every command's result as "value | Awaitable[value]";
        # this client is synchronous, so results are read through an Any view.
        self._redis: Any = connection

    def __repr__(self) -> str:
        return f"Queue({self.name!r}, prefix={self.prefix!r})"

    def _pipeline(self) -> Any:
        # No MULTI: a cluster client cannot wrap commands in a transaction, and
        # reads here only need one round trip, not isolation.
        return self._redis.pipeline(transaction=False)

    # -- adding ------------------------------------------------------------

    def add(
        self, name: str, data: Any = None, opts: JobOptions | Mapping[str, Any] | None = None
    ) -> str:
        """Add one job; returns its id (the existing one for a duplicate id or
        a held deduplication id). Raises InvalidJobOptions, ParentJobNotExist."""
        call = admin.add_job(self.keys, prepare_job(name, data, opts))
        return _text(self._run(call, "addJob"))

    def add_bulk(self, jobs: Sequence[AddSpec], *, batch: int = 1000) -> list[str]:
        """Add many jobs, one pipelined round trip per ``batch`` of them; each
        job is added exactly as :meth:`add` would, in order."""
        timestamp = now_ms()  # one clock read: the jobs are added together
        prepared = [prepare_job(name, data, opts, now_ms=timestamp) for name, data, opts in jobs]
        if not prepared:
            return []
        scripts.ensure_loaded(self.connection, ("addJobs",))
        ids: list[str] = []
        for offset in range(0, len(prepared), batch):
            pipe = self._pipeline()
            for call in self._add_calls(prepared[offset : offset + batch]):
                scripts.queue_in_pipeline(pipe, call)
            try:
                answers = pipe.execute()
            except ResponseError as error:
                raise_refusal(error)
            for results in answers:
                for result in results:
                    raise_for_code(result, "addJob")
                    ids.append(_text(result))
        return ids

    def _add_calls(self, jobs: Sequence[PreparedJob]) -> Iterator[ScriptCall]:
        """addJobs calls covering ``jobs`` in order. Several jobs per call
        amortise its fixed cost; a bounded number (and size) per call keeps
        each one short, so Redis stays responsive to other clients (workers),
        and keeps a command of large jobs far below Redis's query buffer limit."""
        start, size = 0, 0
        for index, job in enumerate(jobs, 1):
            size += len(job.data_json) + len(job.opts_json)
            if index - start == _JOBS_PER_CALL or size >= _BYTES_PER_CALL:
                yield admin.add_jobs(self.keys, jobs[start:index])
                start, size = index, 0
        if start < len(jobs):
            yield admin.add_jobs(self.keys, jobs[start:])

    # -- reading -----------------------------------------------------------

    # Every getter reads through the read model (queues.read), like the dashboard.

    def get_job(self, job_id: str) -> Job | None:
        return one_job.load_job(self.connection, self.keys, job_id)

    def get_state(self, job_id: str) -> str | None:
        """The state holding the job ("unknown" when in none), None if it is gone."""
        return one_job.state_of(self.connection, self.keys, job_id)

    def get_counts(self, *states: str) -> dict[str, int]:
        """Jobs per state in one round trip; "wait" counts the wait and paused
        lists together (a 5.x paused queue keeps its ready jobs in paused)."""
        return counts.state_counts(self.connection, self.keys, states)

    def get_jobs(self, state: str, start: int = 0, stop: int = -1) -> list[Job]:
        """Jobs of a state, newest first; ``start``/``stop`` as in LRANGE."""
        _, members = lists.state_window(self.connection, self.keys, state, start, stop)
        return one_job.load_jobs(self.connection, self.keys, [job_id for job_id, _ in members])

    def is_paused(self) -> bool:
        return counts.is_paused(self.connection, self.keys)

    def get_logs(self, job_id: str, start: int = 0, stop: int = -1) -> tuple[list[str], int]:
        """A window of the job's log lines and how many lines it has."""
        return one_job.job_logs(self.connection, self.keys, job_id, start, stop)

    # -- admin actions: one script each; wrong state -> JobNotInState, gone ->
    # JobNotExist, keys broken -> JobBroken, a queue key of the wrong type ->
    # CorruptKey, Redis over maxmemory -> OutOfMemoryError; in each case the
    # job is left exactly as it was.

    def _run(self, call: scripts.ScriptCall, command: str, job_id: str | None = None) -> Any:
        result = scripts.run(self.connection, call)
        raise_for_code(result, command, job_id)
        return result

    def retry(self, job_id: str, *, state: FinishedState = "failed") -> None:
        """Move a failed (or completed) job back to wait to run again."""
        validate_job_id(job_id)
        self._run(admin.requeue_job(self.keys, job_id, state), "retry", job_id)

    def promote(self, job_id: str) -> None:
        """Run a delayed job now."""
        validate_job_id(job_id)
        self._run(admin.requeue_job(self.keys, job_id, "delayed"), "promote", job_id)

    def fail(self, job_id: str, reason: str) -> None:
        """Fail a job that has not finished; an active job's worker loses its lock."""
        validate_job_id(job_id)
        call = admin.fail_job(self.keys, job_id, reason=reason, now_ms=now_ms())
        self._run(call, "fail", job_id)

    def remove(self, job_id: str) -> None:
        validate_job_id(job_id)
        self._run(admin.remove_job(self.keys, job_id, now_ms=now_ms()), "remove", job_id)

    def retry_all(
        self, state: FinishedState = "failed", *, batch: int = 1000, track: int = 0
    ) -> BulkResult:
        """Retry every job that was in ``state`` when the call started. Jobs
        whose keys are broken stay in ``state`` and are listed in ``skipped``.
        ``track``: list the first that many moved jobs in ``ids`` (with their
        previous reasons). Raises :class:`BulkStopped` when Redis refuses a batch."""
        return self._requeue_all(state, batch, max_score=now_ms(), track=track)

    def promote_all(self, *, batch: int = 1000, track: int = 0) -> BulkResult:
        """Run every delayed job now (as :meth:`retry_all` for delayed jobs)."""
        return self._requeue_all("delayed", batch, max_score=None, track=track)

    def _bulk_step(self, call: ScriptCall, done: BulkResult) -> Any:
        """One batch of a bulk action; a refusal stops the action with what
        the earlier batches did."""
        try:
            return scripts.run(self.connection, call)
        except (CorruptKey, OutOfMemoryError) as refusal:
            raise BulkStopped(done, refusal) from refusal

    def _listed(self, source: str, result: BulkResult) -> dict[str, str]:
        """The jobs of ``source`` (a sorted-set state) that wait, paused or
        active holds too: id -> that list. A bulk action's batches leave them
        where they are and report them (retried, such a job would run twice;
        cleaned, its hash would go from under the list's copy). The lists are
        walked once, here, in bounded calls: searching them per job would cost
        a walk of wait per job (LPOS), and a retry's own pushes lengthen it."""
        listed: dict[str, str] = {}
        start = (1, 0)
        while True:
            call = admin.listed_jobs(self.keys, source, start=start, budget=_LISTED_BUDGET)
            next_list, next_index, flat = self._bulk_step(call, result)
            for job_id, state in zip(flat[::2], flat[1::2], strict=True):
                listed.setdefault(_text(job_id), _text(state))
            if int(next_list) == 0:
                return listed
            start = (int(next_list), int(next_index))

    def _requeue_all(
        self, source: RequeueSource, batch: int, max_score: int | None, track: int
    ) -> BulkResult:
        result = BulkResult()
        listed = self._listed(source, result)
        calls_left: int | None = None
        while calls_left is None or calls_left > 0:
            # Broken jobs stay at the front of the source set: pass over them.
            # Moved ids are reported only while the tracked ones are not all in.
            call = admin.requeue_jobs(
                self.keys,
                source,
                batch=batch,
                max_score=max_score,
                pass_over=len(result.skipped),
                report_reason_bytes=REASON_BYTES if len(result.ids) < track else 0,
                listed=listed,
            )
            moved, remaining, skipped, reported = self._bulk_step(call, result)
            result.count += int(moved)
            result.add_skipped(decode_skipped(skipped))
            _add_reported(result, reported, track)
            if int(remaining) == 0:
                break
            # Only what was there at the start: jobs that producers keep adding
            # (promote-all takes every score) must not keep this loop going.
            calls_left = -(-int(remaining) // batch) if calls_left is None else calls_left - 1
        return result

    def clean(
        self, state: CleanableState, grace_ms: int, limit: int = 0, *, keep_ids: bool = True
    ) -> BulkResult:
        """Delete jobs of ``state`` older than ``grace_ms`` (finished for
        completed/failed, created for the others); at most ``limit`` (0 = all).
        "wait" covers the wait and paused lists. ``ids`` lists the deleted ones
        (``keep_ids=False`` for cleaning millions); a job whose key is not a job
        hash, or that another state holds too, is left where it was and
        listed in ``skipped``. Raises
        :class:`BulkStopped` when Redis refuses a batch."""
        cutoff = now_ms() - grace_ms
        result = BulkResult()
        for key_state in ("wait", "paused") if state == "wait" else (state,):
            # The lists' copies of a sorted set's jobs (the lists themselves
            # are checked against the sorted sets by the script).
            listed = {} if key_state in admin.LISTED_STATES else self._listed(key_state, result)
            passed = 0
            while limit == 0 or result.count < limit:
                batch = _CLEAN_BATCH if limit == 0 else min(limit - result.count, _CLEAN_BATCH)
                call = admin.clean_jobs(
                    self.keys,
                    key_state,
                    cutoff_ms=cutoff,
                    limit=batch,
                    now_ms=now_ms(),
                    pass_over=passed,
                    listed=listed,
                )
                deleted, raw_skipped, looked_at = self._bulk_step(call, result)
                skipped = decode_skipped(raw_skipped)
                result.add_skipped(skipped)
                result.count += len(deleted)
                if keep_ids:
                    result.ids.extend(_text(job_id) for job_id in deleted)
                if key_state in ("completed", "failed"):
                    # Ordered by finish time: the broken ones stay in front.
                    passed += len(skipped)
                    if int(looked_at) < batch:
                        break
                elif len(deleted) < batch:
                    break
        return result

    def pause(self) -> None:
        scripts.run(self.connection, admin.pause(self.keys, paused=True))

    def resume(self) -> None:
        scripts.run(self.connection, admin.pause(self.keys, paused=False))

    def set_global_concurrency(self, limit: int | None) -> str | None:
        """Cap the jobs all workers run at once (None clears the cap), as
        BullMQ 5.x's setGlobalConcurrency / removeGlobalConcurrency do.
        Returns the value stored before (None when there was none)."""
        previous = scripts.run(self.connection, admin.set_global_concurrency(self.keys, limit))
        return codec.text(previous) or None

    def drain(self, delayed: bool = False, *, batch: int = 1000) -> list[SkippedJob]:
        """Delete the jobs not started yet (and delayed ones when asked).
        Returns the jobs left where they were because their key is not a job
        hash or another state holds them too (``states:wait,failed``:
        deleting the hash would leave that state an id without a job)."""
        call = admin.drain(self.keys, delayed=delayed, batch=batch, now_ms=now_ms())
        result = BulkResult()
        more = 1
        while more == 1:
            more, skipped = self._bulk_step(call, result)
            result.add_skipped(decode_skipped(skipped))
        return list(result.skipped.values())

    def obliterate(self, force: bool = False, *, batch: int = 1000) -> list[SkippedJob]:
        """Pause the queue, then delete it with all its jobs. Raises
        JobNotInState when jobs are active and ``force`` is not set (or another
        admin resumed the queue meanwhile); what was deleted stays deleted.
        Returns the ids whose key is not a job hash: neither they nor the
        state holding them are deleted."""
        self.pause()
        call = admin.obliterate(self.keys, force=force, batch=batch, now_ms=now_ms())
        result = BulkResult()
        while True:
            answer = self._bulk_step(call, result)
            if answer == -3:
                raise JobNotInState("obliterate (active jobs or not paused)")
            more, skipped = answer
            result.add_skipped(decode_skipped(skipped))
            if more == 0:
                return list(result.skipped.values())

    def update_data(self, job_id: str, data: Any) -> DataUpdate:
        """Replace the data of a job that is waiting, prioritized, delayed or
        failed; raises JobNotInState when a worker took it or it finished
        meanwhile (nothing is changed then), JobNotExist, JobBroken."""
        validate_job_id(job_id)
        call = admin.update_data(self.keys, job_id, to_json(data))
        state, previous = self._run(call, "updateData", job_id)
        return DataUpdate(_text(state), _text(previous))

    def update_progress(self, job_id: str, progress: Any) -> None:
        validate_job_id(job_id)
        call = admin.update_progress(self.keys, job_id, to_json(progress))
        self._run(call, "updateProgress", job_id)

    def add_log(self, job_id: str, line: str, keep: int | None = None) -> int:
        """Append a log line; returns how many lines the job has now."""
        validate_job_id(job_id)
        call = admin.add_log(self.keys, job_id, line, keep=keep or 0)
        return int(self._run(call, "addLog", job_id))


def _add_reported(result: BulkResult, reported: Sequence[Any], track: int) -> None:
    """Keep the moved jobs a batch reported (id, previous reason pairs), up to
    ``track`` ids in all. Sliced rather than walked pair by pair: a retry-all
    hands 100,000 of them over."""
    flat = reported or ()
    end = 2 * max(track - len(result.ids), 0)
    ids = [_text(raw_id) for raw_id in flat[0:end:2]]
    result.ids.extend(ids)
    reasons = result.previous_reasons
    for job_id, raw_reason in zip(ids, flat[1:end:2], strict=True):
        if raw_reason:
            reasons[job_id] = _text(raw_reason)
