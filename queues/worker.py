"""The asyncio Worker: takes jobs from a queue, runs a processor, records results.

Shape of the runtime, chosen so a busy worker costs one script call per job:

- ``concurrency`` slots. A slot runs a job, then finishes it with
  moveToFinished *and fetch next*: the same round trip hands back the next
  job, so the slot keeps running without a separate pick-up call.
- One fetch loop fills free slots with moveToActive. When nothing is ready it
  blocks on the marker zset (BZPOPMIN) until a job is added, the next delayed
  job is due (member ``1``'s score) or ``drain_delay`` passes. A rate-limited
  answer makes it sleep for the window's remaining ttl.
- One lock-renewal timer for all held jobs (every ``lock_duration / 2``,
  one pipeline) and one stalled-job checker (every ``stalled_interval``).
- Failures with attempts left move the job to delayed with the backoff delay
  (delay 0 = due at once); otherwise the job fails for good with its
  stacktrace. ``UnrecoverableError`` skips the remaining attempts.
- ``close()`` stops fetching and waits for the jobs in flight; ``force`` (or a
  ``timeout`` that runs out) cancels them and hands them back to wait
  (releaseJob: they run next, no attempt counted).
- Its connections are named the way BullMQ names a worker's
  (``queues.connection_names``: ``<prefix>:<base64 queue>:w:<name>``), so the
  dashboard and BullMQ's ``getWorkers`` list it: the pipeline's connection
  always, the blocking connection too when the worker opened the client
  itself (a client passed in is the caller's to name).
- Script calls share one auto-pipelined connection (``queues.autopipe``:
  hiredis packs and parses, one write per event-loop turn); pick-up answers
  are decoded by ``queues.pickup``.
- A job whose keys another writer broke is passed over by the scripts and
  logged once per worker (``broken_seen``); it stays where it was.
- Redis over ``maxmemory`` refuses the scripts that add data, the worker's
  included: a full Redis should start no new work, and a finish writes the
  result, an event and maybe the next job's lock. Only lock renewals run
  (allow-oom). So the fetch loop waits and tries again; a finish or a retry
  refused for lack of memory keeps its job held and its lock renewed, and is
  tried again every second until Redis has room: the job is not lost, and
  not run a second time as it would be if its lock lapsed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from queues import codec, schedulers, scripts
from queues.autopipe import AutoPipeline
from queues.backoff import UnknownBackoffType, retry_delay
from queues.commands import admin
from queues.commands import transitions as tr
from queues.commands.release import release_job
from queues.connection import connect_async
from queues.connection_names import worker_connection_name
from queues.errors import (
    JobBroken,
    ScriptError,
    SkippedJob,
    broken_reason,
    is_out_of_memory,
    raise_for_code,
)
from queues.flow import children_values
from queues.job import Job
from queues.job_options import InvalidJobOptions, to_json
from queues.keys import DEFAULT_PREFIX, QueueKeys
from queues.pickup import decode_answer
from queues.reconnect import Outage

log = logging.getLogger("echomq.worker")

Processor = Callable[[Job], Awaitable[Any]]

# Per-minute data points kept when metrics are on: two weeks, BullMQ's usual choice.
DEFAULT_METRICS_POINTS = 14 * 24 * 60
# A blocked BZPOPMIN is cut short at most this often, so a dropped connection
# is noticed and a stale delayed due time is re-read.
MAX_BLOCK_S = 10.0
MIN_BLOCK_S = 0.001
# Redis ends a blocked command's wait on its clock tick (every 1/hz s: 100 ms
# at its default hz of 10), so a BZPOPMIN timed to a delayed job's due time
# returned up to 100 ms past it (measured 0-126 ms; a scheduler's run every
# 200 ms then skipped slots under load). The block ends a tick early and the
# worker sleeps the rest on its own clock: a job added in that last tick
# waits at most a tick, as every delayed job did before.
REDIS_TICK_S = 0.1
# Waits between the fetch loop's attempts while Redis is unreachable.
RECONNECT_FIRST_S = 0.2
RECONNECT_LONGEST_S = 5.0
# Wait after any other Redis error before the fetch loop tries again.
ERROR_BACKOFF_S = 1.0
# Broken jobs a worker remembers having logged (then it starts afresh).
MAX_REPORTED_BROKEN = 1000


class UnrecoverableError(Exception):
    """Raise from a processor to fail the job now, whatever attempts are left."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class Worker:
    """Runs ``processor`` on the jobs of one queue; see the module docstring.

    Pass ``client`` (a redis.asyncio client, cluster or not, returning bytes)
    or ``connection_url`` (then the worker owns and closes the client).
    ``metrics`` True keeps two weeks of per-minute counts, an int that many
    points. ``remove_on_complete`` / ``remove_on_fail`` apply to jobs whose
    opts do not say (BullMQ's values: bool, count, ``{age, count, limit}``).
    """

    def __init__(
        self,
        queue_name: str,
        processor: Processor,
        *,
        client: AsyncRedis | None = None,
        connection_url: str | None = None,
        prefix: str = DEFAULT_PREFIX,
        concurrency: int = 1,
        lock_duration_ms: int = 30_000,
        stalled_interval_ms: int = 30_000,
        max_stalled_count: int = 1,
        limiter: tr.RateLimit | None = None,
        name: str = "",
        metrics: bool | int = False,
        drain_delay_s: float = 5.0,
        remove_on_complete: object = None,
        remove_on_fail: object = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if (client is None) == (connection_url is None):
            raise ValueError("pass exactly one of client= or connection_url=")
        self.keys = QueueKeys(queue_name, prefix)
        token = uuid.uuid4().hex
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{token[:8]}"
        self.connection_name = worker_connection_name(prefix, queue_name, self.name)
        if self.connection_name is None:
            log.warning(
                "worker %s: its connections stay unnamed (Redis names take the characters"
                " ! to ~ only), so CLIENT LIST cannot show it",
                self.name,
            )
        self.processor = processor
        self.concurrency = concurrency
        self.lock_duration_ms = lock_duration_ms
        self.stalled_interval_ms = stalled_interval_ms
        self.max_stalled_count = max_stalled_count
        self.limiter = limiter
        self.drain_delay_s = drain_delay_s
        self._owns_client = client is None
        if client is None:
            named: dict[str, Any] = (
                {"client_name": self.connection_name} if self.connection_name else {}
            )
            client = connect_async(connection_url or "", **named)
        self.client: AsyncRedis = client
        # Script calls go through one auto-pipelined connection (to the node
        # owning the queue's slot on a cluster); blocking reads stay on the client.
        self._pipe = AutoPipeline.for_client(
            client, slot_key=self.keys.wait, client_name=self.connection_name
        )
        self._token_prefix = token + ":"
        self._token_seq = 0
        self._metrics_points = DEFAULT_METRICS_POINTS if metrics is True else max(int(metrics), 0)
        self._default_keep = {"completed": remove_on_complete, "failed": remove_on_fail}
        self._finish_cache: dict[tuple[str, int, object], tr.FinishOptions] = {}
        # job id -> lock token of every job this worker holds right now.
        self.held: dict[str, str] = {}
        self._slots: set[asyncio.Task[None]] = set()
        # The slots currently inside the processor: what close(force) cancels.
        self._processing: set[asyncio.Task[Any]] = set()
        self._slot_freed = asyncio.Event()
        self._closing = asyncio.Event()
        self._blocking: asyncio.Future[Any] | None = None
        self._limit_until_ms = 0
        self._outage = Outage(
            log, f"worker {self.name}", first_s=RECONNECT_FIRST_S, longest_s=RECONNECT_LONGEST_S
        )
        self._running = False
        self._done = asyncio.Event()
        self._fetch_stopped = asyncio.Event()
        self._timers: list[asyncio.Task[None]] = []
        # Jobs met whose keys are broken: id -> what is wrong (see _report_broken).
        self.broken_seen: dict[str, SkippedJob] = {}

    # -- public ---------------------------------------------------------------

    @property
    def closing(self) -> bool:
        return self._closing.is_set()

    async def run(self) -> None:
        """Process jobs until :meth:`close` is called (then return when done)."""
        if self._running:
            raise RuntimeError("this worker is already running")
        self._running = True
        self._done.clear()
        self._fetch_stopped.clear()
        self._timers = [
            asyncio.create_task(self._renew_locks_forever(), name=f"{self.name}:locks"),
            asyncio.create_task(self._check_stalled_forever(), name=f"{self.name}:stalled"),
        ]
        try:
            try:
                await self._fetch_loop()
            finally:
                self._fetch_stopped.set()
            if self._slots:
                await asyncio.wait(set(self._slots))
        finally:
            for timer in self._timers:
                timer.cancel()
            await asyncio.gather(*self._timers, return_exceptions=True)
            self._running = False
            self._done.set()

    async def close(self, *, force: bool = False, timeout: float | None = None) -> None:
        """Stop taking jobs and wait for those in flight.

        ``force`` cancels the jobs in flight at once and returns them to wait;
        ``timeout`` (seconds) does the same to those still running by then.
        Closes the client when the worker created it.
        """
        self._closing.set()
        self._slot_freed.set()
        if self._blocking is not None:
            self._blocking.cancel()
        if self._running:
            # A pick-up in flight may still start a slot: let it, then look.
            await self._fetch_stopped.wait()
        if self._slots and not force:
            await asyncio.wait(set(self._slots), timeout=timeout)
        for slot in self._processing:
            slot.cancel()
        if self._slots:
            # Slots cancelled inside the processor end at once; the others
            # are finishing a job (one script call) and end right after.
            await asyncio.gather(*self._slots, return_exceptions=True)
        await self._release_held()
        if self._running:
            await self._done.wait()
        if self._pipe is not None:
            await self._pipe.close()
        if self._owns_client:
            await self.client.aclose()

    async def update_progress(self, job: Job, progress: Any) -> None:
        """Record a job's progress (any JSON value) and emit a ``progress`` event;
        InvalidJobOptions, and nothing written, for what JSON cannot say (NaN)."""
        call = admin.update_progress(self.keys, job.id, to_json(progress))
        raise_for_code(await self._run(call), "updateProgress", job.id)
        job.progress = progress

    async def add_log(self, job: Job, line: str, *, keep: int = 0) -> int:
        """Append a line to the job's log; returns how many lines it has now."""
        answer = await self._run(admin.add_log(self.keys, job.id, line, keep=keep))
        raise_for_code(answer, "addLog", job.id)
        return int(answer)

    async def children_values(self, job: Job) -> dict[str, Any]:
        """A flow parent's completed children's return values, by child key
        (``<prefix>:<queue>:<id>``): what the parent runs on (queues.flow)."""
        return await children_values(self.client, self.keys, job.id)

    # -- the fetch loop -------------------------------------------------------

    async def _fetch_loop(self) -> None:
        block_until_ms = 0
        while not self.closing:
            if len(self._slots) >= self.concurrency:
                self._slot_freed.clear()
                await self._slot_freed.wait()
                continue
            try:
                wait_ms = self._limit_until_ms - _now_ms()
                if wait_ms > 0:
                    await self._sleep(wait_ms / 1000)
                    continue
                if block_until_ms:
                    block_until_ms = await self._wait_for_marker(block_until_ms)
                    if block_until_ms:
                        continue
                fetched = await self._fetch()
            except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
                if self.closing:
                    break
                # The next attempt opens a new connection: a restarted Redis is picked up.
                await self._sleep(self._outage.failed(exc))
                continue
            except RedisError as exc:
                if self.closing:
                    break
                log.warning("worker %s: fetching from %s failed: %s", self.name, self.keys, exc)
                await self._sleep(ERROR_BACKOFF_S)
                continue
            except asyncio.CancelledError:
                if self.closing:
                    break
                raise
            self._outage.recovered()
            if fetched.job is not None:
                self._start_slot(fetched.job)
            elif fetched.rate_limit_ms > 0:
                self._limit_until_ms = _now_ms() + fetched.rate_limit_ms
            else:
                # Nothing ready: block until the due time (capped) or a marker.
                block_until_ms = fetched.next_delayed_due_ms or -1

    async def _fetch(self) -> tr.Fetched:
        token = self._next_token()
        call = tr.move_to_active(
            self.keys,
            token=token,
            lock_duration_ms=self.lock_duration_ms,
            now_ms=_now_ms(),
            worker_name=self.name,
            limiter=self.limiter,
        )
        fetched = decode_answer(await self._run(call), "moveToActive")
        self._report_broken(fetched.broken)
        if fetched.job_id is not None:
            self.held[fetched.job_id] = token
        return fetched

    async def _wait_for_marker(self, block_until_ms: int) -> int:
        """Block on the marker; 0 = go fetch now, else a due time to keep waiting for.

        ``block_until_ms`` -1 means "no delayed job known": wait ``drain_delay``.
        """
        if block_until_ms > 0:
            remaining = (block_until_ms - _now_ms()) / 1000
            if remaining < MIN_BLOCK_S:
                return 0
            if remaining <= REDIS_TICK_S:
                await self._sleep(remaining)
                return 0
            timeout = min(remaining - REDIS_TICK_S, MAX_BLOCK_S)
        else:
            timeout = max(min(self.drain_delay_s, MAX_BLOCK_S), MIN_BLOCK_S)
        self._blocking = asyncio.ensure_future(self.client.bzpopmin(self.keys.marker, timeout))
        try:
            popped = await self._blocking
        finally:
            self._blocking = None
        if popped is None:
            # Timed out: a due time still ahead is waited for again (the
            # last tick of it by the sleep above).
            return block_until_ms if block_until_ms > _now_ms() else 0
        # Member "1" scored in the future: the next delayed job is not due yet.
        # Another writer may have scored it +inf: then look again now.
        due = codec.integer(popped[2], 0) or 0
        return due if due > _now_ms() else 0

    async def _sleep(self, seconds: float) -> None:
        """Sleep, but wake at once when the worker closes."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closing.wait(), seconds)

    def _run(self, call: scripts.ScriptCall) -> Awaitable[Any]:
        if self._pipe is not None:
            return self._pipe.run(call)
        return scripts.arun(self.client, call)

    def _next_token(self) -> str:
        self._token_seq += 1
        return self._token_prefix + str(self._token_seq)

    # -- slots: run a job, finish it, take the next -----------------------------

    def _start_slot(self, job: Job) -> None:
        slot = asyncio.create_task(self._run_slot(job))
        self._slots.add(slot)
        slot.add_done_callback(self._slot_done)

    def _slot_done(self, slot: asyncio.Task[None]) -> None:
        self._slots.discard(slot)
        self._slot_freed.set()
        if not slot.cancelled() and slot.exception() is not None:
            log.error("worker %s: slot crashed", self.name, exc_info=slot.exception())

    async def _run_slot(self, first: Job) -> None:
        job: Job | None = first
        slot = asyncio.current_task()
        assert slot is not None
        processing = self._processing
        while job is not None:
            if job.scheduler_id is not None:
                await self._schedule_next_run(job)
            processing.add(slot)
            try:
                result = await self.processor(job)
            except asyncio.CancelledError as cancelled:
                processing.discard(slot)
                if slot.cancelling():
                    raise  # close(force): the job stays held and is released there
                # The processor's own CancelledError (an inner timeout, say) is a failure.
                job = await self._handle_failure(job, cancelled)
            except Exception as exc:
                processing.discard(slot)
                job = await self._handle_failure(job, exc)
            else:
                processing.discard(slot)
                job = await self._complete(job, result)

    async def _schedule_next_run(self, job: Job) -> None:
        """A job scheduler's run was taken: add the next run before this one
        runs, as BullMQ's worker does (queues.schedulers). A failure is
        logged; the run taken is processed all the same."""
        try:
            call = schedulers.next_run_call(self.keys, job, _now_ms())
            if call is None:
                return
            answer = await self._run(call)
        except (schedulers.InvalidSchedule, InvalidJobOptions) as exc:
            log.warning("worker %s: job %s: no next run scheduled: %s", self.name, job.id, exc)
            return
        except (RedisError, OSError) as exc:
            log.error(
                "worker %s: scheduling the run after job %s failed: %s", self.name, job.id, exc
            )
            return
        reason = broken_reason(answer)
        if reason is not None:
            refused = schedulers.SchedulerRefused(job.scheduler_id or "", reason)
            log.warning("worker %s: no run after job %s: %s", self.name, job.id, refused)

    async def _complete(self, job: Job, result: Any) -> Job | None:
        if result is None:  # most processors return nothing: skip the encoder
            return await self._finish(job, "completed", "null", None)
        try:
            value = codec.dumps(result)
        except codec.UNENCODABLE as exc:
            return await self._handle_failure(job, exc)
        return await self._finish(job, "completed", value, None)

    async def _handle_failure(self, job: Job, exc: BaseException) -> Job | None:
        reason = _reason(exc)
        stacktrace = self._stacktrace(job, exc)
        attempts_made = job.attempts_made + 1
        if attempts_made < job.attempts and not isinstance(exc, UnrecoverableError):
            try:
                delay = retry_delay(job.opts.get("backoff"), attempts_made)
            except UnknownBackoffType as bad:
                log.warning("job %s of %s: %s; retrying without delay", job.id, self.keys, bad)
                delay = 0
            await self._retry_later(job, delay, {"failedReason": reason, "stacktrace": stacktrace})
            return None
        return await self._finish(job, "failed", reason, {"stacktrace": stacktrace})

    def _stacktrace(self, job: Job, exc: BaseException) -> str:
        lines = [*job.stacktrace, "".join(traceback.format_exception(exc))]
        limit = job.opts.get("stackTraceLimit")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            lines = lines[-limit:]
        return codec.dumps(lines)

    async def _retry_later(self, job: Job, delay_ms: int, fields: dict[str, str]) -> None:
        token = self.held.get(job.id)
        if token is None:
            return
        call = tr.move_to_delayed(
            self.keys, job.id, token=token, now_ms=_now_ms(), delay_ms=delay_ms, fields=fields
        )
        await self._settle(call, "moveToDelayed", job.id)

    async def _finish(
        self, job: Job, target: tr.FinishTarget, value: str, fields: dict[str, str] | None
    ) -> Job | None:
        token = self.held.get(job.id)
        if token is None:
            return None  # released by close(force) meanwhile
        now = _now_ms()
        fetch_next = not self.closing and self._limit_until_ms <= now
        call = tr.move_to_finished(
            self.keys,
            job.id,
            token=token,
            now_ms=now,
            target=target,
            value=value,
            fetch_next=fetch_next,
            options=self._finish_options(job, target),
            extra_fields=fields,
        )
        answer = await self._settle(call, "moveToFinished", job.id)
        if not fetch_next or answer is None:
            return None
        fetched = decode_answer(answer, "moveToFinished", job.id)
        self._report_broken(fetched.broken)
        if fetched.job_id is not None:
            # The next job is locked with the same token (one token per slot chain).
            self.held[fetched.job_id] = token
            return fetched.job
        if fetched.rate_limit_ms > 0:
            self._limit_until_ms = _now_ms() + fetched.rate_limit_ms
        return None

    def _finish_options(self, job: Job, target: str) -> tr.FinishOptions:
        """The options of a finish, shared by all jobs with the same attempts and
        keep option (built once, not per job)."""
        option = "removeOnComplete" if target == "completed" else "removeOnFail"
        keep_raw = job.opts.get(option, self._default_keep[target])
        attempts = job.attempts
        cache_key: tuple[str, int, object] | None = None
        if keep_raw is None or isinstance(keep_raw, bool | int | str):
            cache_key = (target, attempts, keep_raw)
            cached = self._finish_cache.get(cache_key)
            if cached is not None:
                return cached
        options = tr.FinishOptions(
            lock_duration_ms=self.lock_duration_ms,
            attempts=attempts,
            keep=tr.KeepJobs.from_option(keep_raw),
            max_metrics_size=self._metrics_points,
            limiter=self.limiter,
            worker_name=self.name,
        )
        if cache_key is not None:
            self._finish_cache[cache_key] = options
        return options

    async def _settle(self, call: scripts.ScriptCall, command: str, job_id: str) -> Any:
        """Run a finishing call (moveToFinished, moveToDelayed) of a held job.

        The job leaves ``held`` while the call is in flight, so a forced close
        cannot release it at the same time. A refusal (lock lost, job gone or
        broken) is logged, not raised: the job's fate is then someone else's
        (an admin, the stalled checker). Redis over maxmemory refuses the call
        before it starts: the job then goes back to ``held`` (its lock is still
        renewed, renewals run when Redis is full) and the call is tried again
        every second, so a job that ran is not run again; a closing worker
        stops trying, and the stalled check hands the job back once its lock
        expires.
        """
        while True:
            token = self.held.pop(job_id, None)
            if token is None:
                return None  # released by close(force) meanwhile
            try:
                return await self._run_quietly(call, command, job_id, unless_full=not self.closing)
            except RedisError:
                log.warning(
                    "worker %s: Redis is out of memory; %s of job %s waits for room",
                    self.name,
                    command,
                    job_id,
                )
            self.held[job_id] = token
            await self._sleep(ERROR_BACKOFF_S)

    async def _run_quietly(
        self, call: scripts.ScriptCall, command: str, job_id: str, *, unless_full: bool = False
    ) -> Any:
        """Run a call for a job; a refusal or a Redis error is logged, not
        raised, except Redis being out of memory when ``unless_full``."""
        try:
            answer = await self._run(call)
            raise_for_code(answer, command, job_id)
            return answer
        except (ScriptError, JobBroken) as refused:
            log.warning("worker %s: %s", self.name, refused)
        except (RedisError, OSError) as exc:
            if unless_full and is_out_of_memory(exc):
                raise
            log.error("worker %s: %s for job %s failed: %s", self.name, command, job_id, exc)
        return None

    def _report_broken(self, broken: Sequence[SkippedJob]) -> None:
        """Log the jobs whose keys are broken that a script met, each once per
        worker (a pick-up meets the same ones again and again), and keep them
        in ``broken_seen`` (bounded: it starts afresh when full)."""
        for job in broken:
            if job.job_id in self.broken_seen:
                continue
            if len(self.broken_seen) >= MAX_REPORTED_BROKEN:
                self.broken_seen.clear()
            self.broken_seen[job.job_id] = job
            fate = "dropped" if job.reason == "missing" else "left where it was"
            log.warning(
                "worker %s: job %s of %s %s: %s",
                self.name,
                job.job_id,
                self.keys,
                fate,
                job.describe(),
            )

    # -- timers ---------------------------------------------------------------

    async def _renew_locks_forever(self) -> None:
        # Runs until run() ends, closing included: jobs finishing during a
        # graceful close still need their locks.
        interval = self.lock_duration_ms / 2000
        while True:
            await asyncio.sleep(interval)
            if self.held:
                try:
                    await self.renew_locks()
                except (RedisError, OSError) as exc:
                    log.error("worker %s: renewing locks failed: %s", self.name, exc)

    async def renew_locks(self) -> list[str]:
        """Extend every held lock in one pipeline; returns the ids whose lock was lost."""
        held = list(self.held.items())
        calls = [
            tr.extend_lock(self.keys, job_id, token=token, lock_duration_ms=self.lock_duration_ms)
            for job_id, token in held
        ]
        if self._pipe is not None:
            # Issued in one loop turn, so they leave in one write anyway.
            answers = await asyncio.gather(*(self._pipe.run(call) for call in calls))
        else:
            try:
                answers = await self._pipelined(calls)
            except NoScriptError:
                await self.client.script_load(scripts.code(calls[0].script)[1])
                answers = await self._pipelined(calls)
        # A job finished while the renewals were in flight has no lock left to
        # extend: only jobs still held under the same token count as lost.
        lost = [
            job_id
            for (job_id, token), ok in zip(held, answers, strict=True)
            if ok != 1 and self.held.get(job_id) == token
        ]
        for job_id in lost:
            log.warning("worker %s: lost the lock of job %s in %s", self.name, job_id, self.keys)
        return lost

    async def _pipelined(self, calls: list[scripts.ScriptCall]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for call in calls:
            scripts.queue_in_pipeline(pipe, call)
        answers: list[Any] = await pipe.execute()
        return answers

    async def _check_stalled_forever(self) -> None:
        while not self.closing:
            try:
                await self.check_stalled()
            except (RedisError, OSError) as exc:
                log.error("worker %s: stalled check failed: %s", self.name, exc)
            await self._sleep(self.stalled_interval_ms / 1000)

    async def check_stalled(self) -> list[str]:
        """One stalled-job check (a no-op when another worker ran one this interval)."""
        call = tr.move_stalled_jobs_to_wait(
            self.keys,
            max_stalled_count=self.max_stalled_count,
            now_ms=_now_ms(),
            stalled_interval_ms=self.stalled_interval_ms,
        )
        checked = tr.decode_stalled(await self._run(call))
        if checked.recovered:
            log.info("worker %s: moved stalled jobs back to wait: %s", self.name, checked.recovered)
        self._report_broken(checked.broken)
        return checked.recovered

    # -- shutdown -------------------------------------------------------------

    async def _release_held(self) -> None:
        """Hand the jobs still held (cancelled by a forced close) back to wait,
        where they run next, without counting an attempt."""
        held, self.held = self.held, {}
        for job_id, token in held.items():
            call = release_job(self.keys, job_id, token=token)
            await self._run_quietly(call, "releaseJob", job_id)
