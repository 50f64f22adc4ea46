"""A queue's failed jobs grouped by their folded reason (queues.read.error_folding).

Counting groups by reading every failed job on each page load would cost
O(failed) per look; instead the dashboard keeps an index in Redis under
``<prefix>:<queue>:dashboard-error-groups:*`` (docs/protocol.md, "The
dashboard's error groups index"), built once and then caught up on each look:

- **build**: a reset, then the failed zset read newest first in batches of
  ``BATCH`` (one short read script answering ids, scores and reasons, and
  add script calls run on a thread of their own while the next batch is
  folded), by one dashboard at a time (a lock; the others show what is
  there, marked as building);
- **new failures**: the failed zset's score is finishedOn, so the jobs with a
  score at or above the watermark (less ``CLOCK_SKEW_MS``) are the new ones;
- **jobs that left failed**: a retry, a removal or a move shows in the queue's
  events stream with the job id; the index reads the stream from its cursor
  and lets the drop script check each job mentioned;
- **rules changed**: the index keeps the version of the folding rules it
  was counted by (``RULES_VERSION``); one counted by older rules, or by a
  dashboard from before the version was kept, is counted again on a thread
  of its own (``_regroup_in_background``), and meanwhile the page shows the
  groups as they are, marked as regrouping;
- **drift**: ``clean`` emits one ``cleaned`` event without ids and
  ``removeOnFail`` trims without any, and a stream trimmed past the cursor
  loses ids: after catching up, the index's total is compared with ZCARD
  failed; jobs leave such trims oldest first, so the oldest jobs of each
  group are checked until the totals agree (a rebuild when that does not
  settle it within ``MAX_REPAIR_CHECKS``).

Every write is one of three scripts (priv/scripts/*ErrorGroups*): adding
counts a job only while it is still failed with the finishedOn it was read
with and only once, dropping takes out only jobs no longer failed, and each
carries the index's generation, so two dashboards catching up at once never
count a job twice and a reset refuses writers still holding the old one.

Bounds: at most ``MAX_GROUPS`` groups (later kinds count in ``other``), a
sample of ``MAX_SAMPLE_REASON`` / ``MAX_SAMPLE_TRACE`` characters per group;
the index holds one hash field and one zset member per failed job (100 to
180 bytes each, measured in bench/search.py).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import chain
from typing import Any

from redis import Redis
from redis.exceptions import LockError, OutOfMemoryError, ResponseError

from queues import codec, errors, scripts
from queues.keys import QueueKeys
from queues.locks import expire_unheld_lock
from queues.read import answers
from queues.read.decode import job_from_values
from queues.read.error_folding import REASON_BYTES, RULES_VERSION, fold_field
from queues.read.refs import QueueRef
from queues.read.replies import read, replies

# Declared with the answers that carry them (queues.read.answers.ErrorGroups).
MAX_GROUPS = answers.ERROR_GROUPS_MAX
OTHER = answers.ERROR_GROUP_OTHER
OTHER_TEXT = f"Other errors (beyond the {MAX_GROUPS} kinds kept)"
MAX_SAMPLE_REASON = answers.ERROR_SAMPLE_REASON_MAX
MAX_SAMPLE_TRACE = answers.ERROR_SAMPLE_TRACE_MAX
# Jobs per read (the build: one failedReasons call, its ids and reasons; a
# catch-up: one ZRANGE and a pipeline of HGETs), and jobs per add call: each
# Redis call stays well under 10 ms (bench/grouping.py at 100,000, load 2.5:
# a read of 1,000 took 10-13 ms, of 500 about 5). An add call of 250 jobs
# costs Redis 3.2-3.9 ms of CPU (3.9-4.6 before it wrote once per group); one of
# 500 costs 6.2-6.6 ms and saves less than the spread between runs
# (docs/benchmarks.md, "stop 20 (grouping-first)").
BATCH = 500
SCRIPT_BATCH = 250
# Workers on other hosts stamp finishedOn with their own clocks: failures
# that land this much below the watermark are still found.
CLOCK_SKEW_MS = 2_000
# One look catches up at most this many new failures or events; the rest is
# left for the next look (the page says the index is catching up).
MAX_CATCH_UP = 50_000
MAX_REPAIR_CHECKS = 20_000
# The build lock is a lease, as the history collector's: renewed while a build
# runs (every quarter of it), so a dashboard process killed mid-build (its
# request thread gone with it) holds up the others' builds this long at most;
# at 120 s a queue's groups said "Counting…" for two minutes after a crash.
BUILD_LOCK_MS = 15_000
# Events that never take a job out of failed.
_NOT_LEAVING = frozenset(
    {"failed", "progress", "added", "retries-exhausted", "duplicated", "deduplicated"}
)
_SAMPLE_FIELDS = (b"failedReason", b"stacktrace")
_STATE_FIELDS = ["gen", "built", "watermark", "cursor", "total", "rules", "regroup"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ErrorGroup:
    """One kind of failure: its folded text, how many failed jobs have it,
    when the first and last of them failed (ms) and one of them as a sample."""

    key: str
    text: str
    count: int
    first_seen: int | None
    last_seen: int | None
    sample_job: str
    sample_reason: str
    sample_trace: str

    def as_json(self) -> answers.ErrorGroup:
        return answers.ErrorGroup(
            key=self.key,
            text=self.text,
            count=self.count,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
            sample=answers.ErrorSample(
                job=self.sample_job or None,
                reason=self.sample_reason,
                stacktrace=self.sample_trace,
            ),
        )


@dataclass(frozen=True, slots=True)
class ErrorGroups:
    """The groups of a queue's failed jobs, most jobs first. ``indexed`` is how
    many failed jobs the groups count, ``failed`` how many the queue holds;
    ``complete`` is False while the index is being built or catching up;
    ``regrouping`` is True while it is counted again by newer folding rules:
    the groups are the old ones until that starts (``old_rules``), then fill
    in anew."""

    ref: QueueRef
    groups: list[ErrorGroup]
    indexed: int
    failed: int
    complete: bool
    regrouping: bool = False
    old_rules: bool = False

    def as_json(self) -> answers.ErrorGroups:
        return answers.ErrorGroups(
            queue=self.ref.qualified,
            failed=self.failed,
            indexed=self.indexed,
            complete=self.complete,
            regrouping=self.regrouping,
            groups=[group.as_json() for group in self.groups],
        )


class _Index:
    """The index's key names and its three script calls for one queue."""

    def __init__(self, keys: QueueKeys) -> None:
        self.keys = keys
        self.failed = keys.failed
        self.state = keys.error_groups("state")
        self.own = (
            self.state,
            keys.error_groups("counts"),
            keys.error_groups("samples"),
            keys.error_groups("first"),
            keys.error_groups("last"),
            keys.error_groups("jobs"),
        )
        self.counts, self.samples, self.first, self.last, self.jobs = self.own[1:]
        self.group_base = keys.error_groups("group:")
        self.lock = keys.error_groups("build-lock")

    def group(self, key: str) -> str:
        return self.group_base + key

    def add(
        self,
        generation: str,
        entries: Sequence[tuple[str, float, str, str]],
        *,
        watermark: float | None = None,
        built: bool = False,
        cursor: str = "",
    ) -> scripts.ScriptCall:
        args: list[scripts.ScriptArg] = [
            self.group_base,
            generation,
            MAX_GROUPS,
            "" if watermark is None else watermark,
            "1" if built else "",
            cursor,
        ]
        args.extend(chain.from_iterable(entries))  # job id, finishedOn, group, sample each
        return scripts.call("addToErrorGroups", (self.failed, *self.own), tuple(args))

    def drop(self, generation: str, job_ids: Iterable[str], cursor: str = "") -> scripts.ScriptCall:
        args = (self.group_base, generation, cursor, *job_ids)
        return scripts.call("dropFromErrorGroups", (self.failed, *self.own), args)

    def reset(self, *, regroup: bool = False) -> scripts.ScriptCall:
        """Empty the index for a new generation counted by these rules
        (``regroup``: in place of one counted by older rules)."""
        args = (self.group_base, RULES_VERSION, "1" if regroup else "")
        return scripts.call("resetErrorGroups", self.own, args)


@dataclass(slots=True)
class _State:
    generation: str
    built: bool
    watermark: int
    cursor: str
    total: int
    rules: int = RULES_VERSION  # the folding rules it is counted by (0: before they were kept)
    regroup: bool = False  # reset to be counted again by newer rules

    @property
    def regrouping(self) -> bool:
        """Counted by older rules, or being counted again by these."""
        return self.rules < RULES_VERSION if self.built else self.regroup


def _state_of(raw: Sequence[Any]) -> _State:
    gen, built, watermark, cursor, total, rules, regroup = (codec.text(value) for value in raw)
    return _State(
        gen or "0",
        built == "1",
        codec.integer(watermark, 0) or 0,
        cursor or "",
        codec.integer(total, 0) or 0,
        codec.integer(rules, 0) or 0,
        regroup == "1",
    )


def _read_state(client: Redis, index: _Index) -> _State:
    try:
        raw: Any = client.hmget(index.state, _STATE_FIELDS)
    except ResponseError:  # the state key has the wrong type: start again
        return _State("broken", False, 0, "", 0)
    return _state_of(raw)


def error_groups(client: Redis, ref: QueueRef) -> ErrorGroups:
    """The queue's error groups, the index caught up first (built on the first
    look). Raises :class:`queues.errors.CorruptKey` when ``failed`` itself has
    the wrong type; a broken key of the index is rebuilt."""
    index = _Index(ref.keys)
    try:
        complete = _refresh_or_repair(client, index)
    except OutOfMemoryError:
        complete = False  # Redis is full: show the groups as they were counted last
    grouped = _read(client, ref, index, complete)
    if grouped.regrouping:
        # Started after the read: this look shows the groups as they were.
        _regroup_in_background(client, index)
    return grouped


def _refresh_or_repair(client: Redis, index: _Index) -> bool:
    """Build or catch up the index; False when it is not complete yet. A key
    of the index of the wrong type is only a broken cache: reset, once."""
    try:
        return _refresh(client, index)
    except OutOfMemoryError:
        raise
    except (errors.CorruptKey, ResponseError) as error:
        if isinstance(error, errors.CorruptKey) and error.key != index.failed:
            scripts.run(client, index.reset())
            return _refresh(client, index)
        _check_failed_key(client, index)
        if "WRONGTYPE" not in str(error):
            raise
        scripts.run(client, index.reset())
        return _refresh(client, index)


def _check_failed_key(client: Redis, index: _Index) -> None:
    """Raise CorruptKey when the queue's failed set itself has the wrong type."""
    kind_raw: Any = client.type(index.failed)
    kind = codec.text(kind_raw) or "none"
    if kind not in ("zset", "none"):
        raise errors.CorruptKey(index.failed, kind, "zset")


def _refresh(client: Redis, index: _Index) -> bool:
    state = _read_state(client, index)
    if state.rules > RULES_VERSION:
        # Counted by newer rules (a newer dashboard beside this one): shown
        # as it is, never written with these, nor counted again by them.
        return False
    if state.regrouping:
        return False  # counted again in the background (error_groups)
    if not state.built:
        return _build(client, index)
    complete = _add_new_failures(client, index, state)
    complete = _drop_leavers(client, index, state) and complete
    if complete and not _settle_drift(client, index, state.generation):
        return _build(client, index)
    return complete


def _read(client: Redis, ref: QueueRef, index: _Index, complete: bool) -> ErrorGroups:
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(index.counts)
    pipe.hmget(index.state, _STATE_FIELDS)
    pipe.zcard(index.failed)
    counts_raw, state_raw, failed = replies(pipe)
    state = _state_of(state_raw or [None] * len(_STATE_FIELDS))
    counts = {
        codec.text(key) or "": codec.integer(value, 0) or 0
        for key, value in (counts_raw or {}).items()
    }
    keys = sorted(counts, key=lambda key: (-counts[key], key))
    pipe = client.pipeline(transaction=False)
    pipe.hmget(index.samples, keys or ["-"])
    pipe.hmget(index.first, keys or ["-"])
    pipe.hmget(index.last, keys or ["-"])
    samples, firsts, lasts = (reply or [None] * len(keys) for reply in replies(pipe))
    groups = []
    for key, sample_raw, first, last in zip(keys, samples, firsts, lasts, strict=False):
        sample = codec.loads(sample_raw, {})
        sample = sample if isinstance(sample, dict) else {}
        text = OTHER_TEXT if key == OTHER else _string(sample.get("text")) or key
        groups.append(
            ErrorGroup(
                key=key,
                text=text,
                count=counts[key],
                first_seen=codec.integer(first),
                last_seen=codec.integer(last),
                sample_job=_string(sample.get("job")),
                sample_reason=_string(sample.get("reason")),
                sample_trace=_string(sample.get("trace")),
            )
        )
    return ErrorGroups(
        ref,
        groups,
        state.total,
        codec.integer(failed, 0) or 0,
        complete and not state.regrouping,
        state.regrouping,
        state.built and state.rules < RULES_VERSION,
    )


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


# -- building -----------------------------------------------------------------


def _build(client: Redis, index: _Index, *, regroup: bool = False) -> bool:
    """Reset and rebuild, newest failures first (``regroup``: in place of an
    index counted by older rules); False when another dashboard holds the
    build lock (it is building; this look shows its progress)."""
    lock = client.lock(index.lock, timeout=BUILD_LOCK_MS / 1000, blocking=False)
    if not lock.acquire(token=uuid.uuid4().hex):
        expire_unheld_lock(client, index.lock, BUILD_LOCK_MS)
        return False
    try:
        generation = str(scripts.run(client, index.reset(regroup=regroup)))
        # Events from here on are caught up after the build: a job retried
        # while it is being read is dropped then (or never added).
        cursor = _last_event_id(client, index.keys)
        high: float = float("inf")
        tied = 0  # jobs already read at score == high (ties across batches)
        watermark: float | None = None
        sampled: set[str] = set()
        renewed = time.monotonic()
        # The next batch is asked for (on a thread of its own) as soon as this
        # one's last score is known, before this one is folded: Redis reads it
        # while this thread folds, and the fold of the next batch then runs
        # while Redis writes this one. Asked after the writes instead, each
        # read waited behind them and Redis and Python took turns (the first
        # grouping of 100,000 took about their sum: bench/grouping.py).
        with (
            _Writer(client, background=True) as writer,
            ThreadPoolExecutor(1, "error-groups-read") as reader,
        ):
            coming = reader.submit(_newest_failures, client, index, high, tied)
            while True:
                failures = coming.result()
                if not failures:
                    break
                if watermark is None:
                    watermark = _newest_finite(score for _, score, _ in failures)
                last = failures[-1][1]
                tied = tied + len(failures) if last == high else sum(f[1] == last for f in failures)
                high = last
                coming = reader.submit(_newest_failures, client, index, high, tied)
                if not _add_failures(client, index, generation, failures, sampled, writer):
                    break
                if time.monotonic() - renewed > BUILD_LOCK_MS / 4000:
                    # Renewed when a quarter of it is gone, not per batch: a
                    # renewal waits behind the batches Redis is running, and
                    # the next read is asked for only after it.
                    lock.extend(BUILD_LOCK_MS / 1000, replace_ttl=True)
                    renewed = time.monotonic()
            done = index.add(generation, [], watermark=watermark or 0, built=True, cursor=cursor)
            writer.add(done)
        return writer.ok
    finally:
        with contextlib.suppress(LockError):  # expired meanwhile: nothing to release
            lock.release()


# Regroupings run by this process: one at a time on a thread of their own
# (the look that finds an index counted by older rules does not wait: a
# first grouping of 100,000 takes seconds), each queue once. Between
# processes the build lock decides who counts. Bounded by the queues.
_REGROUPER = ThreadPoolExecutor(1, "error-groups-regroup")
_regrouping: set[str] = set()
_regrouping_guard = threading.Lock()


def _regroup_in_background(client: Redis, index: _Index) -> None:
    """Count the index again with these rules, on the regrouping thread,
    unless this process is at it already."""
    base = index.keys.base
    with _regrouping_guard:
        if base in _regrouping:
            return
        _regrouping.add(base)
    _REGROUPER.submit(_regroup, client, index)


def _regroup(client: Redis, index: _Index) -> None:
    try:
        _build(client, index, regroup=True)
    except Exception:  # a broken key, Redis gone: the next look tries again
        log.exception("regrouping the failed jobs of %s failed", index.keys.base)
    finally:
        with _regrouping_guard:
            _regrouping.discard(index.keys.base)


class _Writer:
    """Runs the add script calls, in order: inline, or (``background``) on
    one thread of its own, so that Redis runs a batch's calls while this
    thread reads and folds the next batch (the first grouping takes about
    the longer of the two instead of their sum; bench/search.py). At most
    ``_IN_FLIGHT`` calls wait, so a slow Redis holds back the reading."""

    _IN_FLIGHT = 8

    def __init__(self, client: Redis, *, background: bool = False) -> None:
        self.client = client
        self.ok = True
        self._pool = ThreadPoolExecutor(1, "error-groups") if background else None
        self._pending: deque[Future[bool]] = deque()

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            while self._pending:
                self._settle()
        finally:  # a call that raised (a broken key) does not leave the thread behind
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)

    def add(self, call: scripts.ScriptCall) -> bool:
        """Run (or queue) ``call``; False once a call was stale."""
        if self._pool is None:
            self.ok = self.ok and _ran(self.client, call)
            return self.ok
        self._pending.append(self._pool.submit(_ran, self.client, call))
        while len(self._pending) > self._IN_FLIGHT:
            self._settle()
        return self.ok

    def _settle(self) -> None:
        self.ok = self._pending.popleft().result() and self.ok


def _ran(client: Redis, call: scripts.ScriptCall) -> bool:
    """Run an index script; False when a reset made the caller's generation stale."""
    return not _is_stale(scripts.run(client, call))


def _is_stale(answer: Any) -> bool:
    return isinstance(answer, bytes | str) and codec.text(answer) == "stale"


def _last_event_id(client: Redis, keys: QueueKeys) -> str:
    try:
        newest: Any = client.xrevrange(keys.events, count=1)
    except ResponseError:  # not a stream: nothing to follow, drift checks cover it
        return ""
    return codec.text(newest[0][0]) or "" if newest else "0-0"


def _newest_failures(
    client: Redis, index: _Index, high: float, tied: int
) -> list[tuple[str, float, Any]]:
    """The next ``BATCH`` failed jobs at or below score ``high`` (skipping the
    ``tied`` read at ``high`` already), newest first: (id, finishedOn, raw
    failedReason, its first REASON_BYTES: all that folding reads) each, from
    one script call (priv/scripts/failedReasons-1.lua)."""
    answer: Any = scripts.run(
        client,
        scripts.call(
            "failedReasons",
            (index.failed,),
            (
                index.keys.base,
                f"{high:+}" if math.isinf(high) else int(high),
                tied,
                BATCH,
                REASON_BYTES,
            ),
        ),
    )
    if len(answer) == 2 and codec.text(answer[0]) == "wrongtype":
        raise errors.CorruptKey(index.failed, codec.text(answer[1]) or "", "zset")
    # Sliced and zipped rather than a tuple built per job in Python: this
    # thread holds the GIL meanwhile, and the thread whose add call has come
    # back waits for it while Redis idles.
    ids = [codec.text(raw) or "" for raw in answer[0::3]]
    return list(zip(ids, map(_finished, map(float, answer[1::3])), answer[2::3], strict=False))


def _finished(score: float) -> float:
    """A failed job's score as the index keeps it: an integer (finishedOn in
    ms), or +-inf as it is when another writer left one, so that the add
    script finds the job still scored as it was read (int() refused it)."""
    return int(score) if math.isfinite(score) else score


def _scored(reply: Any) -> list[tuple[Any, float]]:
    """ZRANGE WITHSCORES as (member, score) pairs: a cluster client's
    transaction answers it flat (member, score, member, ...), unparsed."""
    if reply and not isinstance(reply[0], list | tuple):
        return [
            (member, float(score)) for member, score in zip(reply[::2], reply[1::2], strict=True)
        ]
    return list(reply or [])


def _newest_finite(scores: Iterable[float]) -> float | None:
    """The first score a clock could have written: a watermark at +inf would
    leave every later failure uncounted."""
    return next((score for score in scores if math.isfinite(score)), None)


def _add_members(
    client: Redis,
    index: _Index,
    generation: str,
    members: Sequence[tuple[str, float]],
    sampled: set[str],
    writer: _Writer,
) -> bool:
    """Read the reasons of failed jobs (one pipelined HGET each) and add them."""
    pipe = client.pipeline(transaction=False)
    for job_id, _ in members:
        pipe.hget(index.keys.job(job_id), "failedReason")
    reasons = replies(pipe)
    failures = [(job_id, score, reasons[at]) for at, (job_id, score) in enumerate(members)]
    return _add_failures(client, index, generation, failures, sampled, writer)


def _add_failures(
    client: Redis,
    index: _Index,
    generation: str,
    failures: Sequence[tuple[str, float, Any]],
    sampled: set[str],
    writer: _Writer,
) -> bool:
    """Fold the reasons of failed jobs (id, finishedOn, raw failedReason) and
    add them; the first job of a group not sampled yet (by this caller) is
    read again with its stack trace."""
    keyed = []
    new: dict[str, tuple[str, str]] = {}  # group key -> (its first job, its folded text)
    for at, (job_id, score, value) in enumerate(failures):
        if at % 100 == 99:
            # Lets the reading and writing threads take the GIL: without it a
            # thread whose Redis reply has come waits for this loop's forced
            # switch (every 5 ms) before it parses it and sends the next call,
            # and Redis idles meanwhile (first grouping 4.15 -> 3.6 s).
            time.sleep(0)
        # The one field read, folded without building a Job per failed job
        # (a third of the first grouping's time).
        key, folded = fold_field(value)
        keyed.append((job_id, score, key))
        if key not in sampled and key not in new:
            new[key] = (job_id, folded)
    samples = _samples(client, index.keys, new)
    sampled.update(new)
    entries = [(job_id, score, key, samples.get(key, "")) for job_id, score, key in keyed]
    for start in range(0, len(entries), SCRIPT_BATCH):
        if not writer.add(index.add(generation, entries[start : start + SCRIPT_BATCH])):
            return False
    return True


def _samples(client: Redis, keys: QueueKeys, new: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Sample JSON per group key (``new``: its first job and folded text): the
    folded text, and the job's reason and latest stack trace (truncated)."""
    pipe = client.pipeline(transaction=False)
    for job_id, _ in new.values():
        pipe.hmget(keys.job(job_id), list(_SAMPLE_FIELDS))
    samples = {}
    for (key, (job_id, text)), values in zip(
        new.items(), replies(pipe) if new else [], strict=True
    ):
        job = job_from_values(job_id, _SAMPLE_FIELDS, values or [None, None])
        trace = job.stacktrace[-1] if job.stacktrace else ""
        samples[key] = codec.dumps(
            {
                "text": text,
                "job": job_id,
                "reason": (job.failed_reason or "")[:MAX_SAMPLE_REASON],
                "trace": trace[:MAX_SAMPLE_TRACE],
            }
        )
    return samples


# -- catching up ----------------------------------------------------------------


def _add_new_failures(client: Redis, index: _Index, state: _State) -> bool:
    """Count the jobs that failed since the watermark; False when more than
    one look's share are left."""
    low = max(0, state.watermark - CLOCK_SKEW_MS)
    offset, read = 0, 0
    sampled: set[str] = set()
    while read < MAX_CATCH_UP:
        batch: Any = client.zrangebyscore(
            index.failed, low, "+inf", start=offset, num=BATCH, withscores=True
        )
        if not batch:
            return True
        members = [(codec.text(raw) or "", _finished(score)) for raw, score in batch]
        # Within the skew window most jobs are counted already: skip them
        # without reading their reasons (a job that failed again has a newer score).
        indexed: Any = client.hmget(index.jobs, [job_id for job_id, _ in members])
        fresh = [
            member
            for member, group in zip(members, indexed, strict=True)
            if group is None or member[1] > state.watermark
        ]
        writer = _Writer(client)
        if fresh and not _add_members(client, index, state.generation, fresh, sampled, writer):
            return False  # reset meanwhile: the next look starts over
        top = _newest_finite(score for _, score in reversed(members))
        if not _ran(client, index.add(state.generation, [], watermark=top)):
            return False
        if len(members) < BATCH:
            return True
        offset += len(members)
        read += len(members)
    return False


def _drop_leavers(client: Redis, index: _Index, state: _State) -> bool:
    """Check the jobs the events stream mentions since the cursor; False when
    more than one look's share are left."""
    cursor = state.cursor
    if not cursor:
        return True
    read = 0
    while read < MAX_CATCH_UP:
        try:
            batch: Any = client.xrange(index.keys.events, min=f"({cursor}", count=BATCH)
        except ResponseError:
            return True  # no stream to follow: the drift check repairs
        if not batch:
            return True
        ids: dict[str, None] = {}
        for _, fields in batch:
            event = codec.text(fields.get(b"event"))
            job_id = codec.text(fields.get(b"jobId"))
            if job_id and event not in _NOT_LEAVING:
                ids[job_id] = None
        cursor = codec.text(batch[-1][0]) or cursor
        if not _ran(client, index.drop(state.generation, ids, cursor)):
            return False
        read += len(batch)
    return False


def _settle_drift(client: Redis, index: _Index, generation: str) -> bool:
    """Compare the index with the failed set and repair what trims took away;
    False when only a rebuild can settle it."""
    for _ in range(4):
        pipe = client.pipeline(transaction=True)
        pipe.zcard(index.failed)
        pipe.hmget(index.state, ["total", "watermark", "cursor", "gen"])
        pipe.zrevrange(index.failed, 0, 0, withscores=True)
        pipe.xrevrange(index.keys.events, count=1)
        failed, state_raw, newest, last_event = replies(pipe)
        total, watermark, cursor, current = (codec.text(v) for v in state_raw or [None] * 4)
        if (current or "0") != generation:
            return True  # reset meanwhile: the next look starts over
        newest_score = _newest_finite(score for _, score in _scored(newest))
        if newest_score is not None and newest_score > (codec.integer(watermark, 0) or 0):
            return True  # failures arrived since this look caught up: the next look
        drift = (codec.integer(total, 0) or 0) - int(failed or 0)
        if drift == 0:
            return True
        if drift < 0:
            return False  # failures the index never saw: rebuild
        event_id = codec.text(last_event[0][0]) if last_event else None
        if cursor and event_id and _stream_id(event_id) > _stream_id(cursor):
            # Jobs left failed since this look read the stream: read on.
            state = _State(generation, True, 0, cursor, 0)
            if not _drop_leavers(client, index, state):
                return True
            continue
        if not _repair_oldest(client, index, generation, drift):
            return False
    return True  # still moving under this look: the next one goes on


def _stream_id(text: str) -> tuple[int, int]:
    ms, _, seq = text.partition("-")
    return (codec.integer(ms, 0) or 0, codec.integer(seq, 0) or 0)


def _repair_oldest(client: Redis, index: _Index, generation: str, drift: int) -> bool:
    """Drop jobs no longer failed, oldest of each group first (trims and
    cleans take the oldest), until ``drift`` of them are found."""
    checked, found = 0, 0
    names: Any = client.hkeys(index.counts)
    groups = [codec.text(key) or "" for key in names]
    for group in groups:
        start = 0
        while found < drift and checked < MAX_REPAIR_CHECKS:
            oldest: Any = client.zrange(index.group(group), start, start + 99)
            ids = [codec.text(raw) or "" for raw in oldest]
            if not ids:
                break
            pipe = client.pipeline(transaction=False)
            for job_id in ids:
                pipe.zscore(index.failed, job_id)
            gone = [
                job_id for job_id, score in zip(ids, pipe.execute(), strict=True) if score is None
            ]
            checked += len(ids)
            if not gone:
                break  # this group's oldest are all still failed
            dropped = scripts.run(client, index.drop(generation, gone))
            if _is_stale(dropped):
                return False
            found += int(dropped)
            start += len(ids) - int(dropped)
        if found >= drift or checked >= MAX_REPAIR_CHECKS:
            break
    return found >= drift


# -- a group's jobs ----------------------------------------------------------------


def group_job_ids(client: Redis, ref: QueueRef, key: str, *, start: int, size: int) -> list[str]:
    """Ids of a group's jobs, newest failure first, ``size`` from ``start``
    (none when the group's key is broken: the next look rebuilds it)."""
    if size <= 0:
        return []
    found = read(client.zrevrange, _Index(ref.keys).group(key), start, start + size - 1)
    return [codec.text(job_id) or "" for job_id in found]


def group_count(client: Redis, ref: QueueRef, key: str) -> int:
    try:
        count: Any = client.hget(_Index(ref.keys).counts, key)
    except ResponseError:  # a broken index: the next look rebuilds it
        return 0
    return codec.integer(count, 0) or 0


def forget_jobs(client: Redis, ref: QueueRef, job_ids: Sequence[str]) -> None:
    """Take jobs that an action moved out of failed off the index now, rather
    than at the next look (the drop script checks each one)."""
    index = _Index(ref.keys)
    state = _read_state(client, index)
    try:
        for start in range(0, len(job_ids), BATCH):
            scripts.run(client, index.drop(state.generation, job_ids[start : start + BATCH]))
    except ResponseError:  # a broken index (CorruptKey included): the next look rebuilds it
        return
