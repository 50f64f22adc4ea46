"""The metrics history collector: folds every queue's events stream into per-minute figures.

Per queue and per minute it records how many jobs completed and failed, how
long jobs waited (ready → active) and ran (active → finished) as log-scale
histogram buckets (queues.latency) with the exact maximum, and the backlog
(the ready tabs: waiting + prioritized). Every write also adds into the hour
holding the minute and into running totals, so hours are exactly the sum of
their minutes and Prometheus gets counters. Minutes are kept two days, hours
30 days (each hash expires on its own; nothing else needs trimming).

Exactly one collector runs across all dashboard processes sharing a Redis:
the holder of a lease (``COLLECTOR_LEASE``, redis-py's ``Lock``: SET NX PX,
renewed by the holder). Each batch is written by one script
(priv/scripts/recordHistory-4.lua) together with the stream id it read up to,
and only if the stored id is still the one this collector read after: a
collector that lost its lease without noticing cannot write twice, and the
one taking over resumes exactly after the last batch written. What the
passes fold is written about once a second (``RECORD_EVERY_S``); a collector
that dies loses only the folding of what it had not written, which the next
one reads again. No gap, no double count — as long as the events themselves
are still in the stream (a stream is capped at ``opts.maxLenEvents``, 10,000
by default: events trimmed before any collector read them are not counted,
and a gap is said; a dashboard down for long loses what the stream no longer
holds).

What is approximate, and why:

- Durations are the distance between two events' stream ids (Redis' clock, ms).
  Wait starts at the job's last ``waiting`` event (added, promoted, retried,
  recovered from a stall); run at its ``active`` event.
- The collector remembers the ``waiting`` and ``active`` times of at most
  ``TRACKED_JOBS`` jobs per queue (oldest forgotten first, after each batch
  read: within one, ``BATCH`` more). A job it did not
  see start — forgotten, or started before a takeover or restart — is looked
  up in its hash when it finishes: run = finishedOn - processedOn, wait =
  processedOn - (timestamp + delay), which is exact for a first attempt and
  too long for a retried one (the hash keeps the creation time, not when the
  retry became ready). A job whose hash is gone (removeOnComplete) adds no
  duration then; it is still counted.
- A gap (``g``) is counted in a minute when the cursor's own event is no
  longer in the stream and no older one is either: the stream was trimmed
  past the cursor, and events after it were probably trimmed unread.
- The backlog is a sample taken every ``BACKLOG_EVERY_S`` seconds; a minute
  keeps its last and its largest sample.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socket
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

from redis import Redis
from redis.exceptions import LockError, RedisError, ResponseError

from queues import codec, scripts
from queues.collector_report import CollectorReport
from queues.errors import CorruptKey
from queues.keys import COLLECTOR_LEASE, HistoryKeys, QueueKeys
from queues.latency import LAST_BUCKET, bucket_counts
from queues.locks import expire_unheld_lock
from queues.raw_streams import SINGLE, RawStreams, is_redirect
from queues.read.refs import QueueRef
from queues.read.replies import read
from queues.read.states import TABS

log = logging.getLogger(__name__)

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
MINUTES_KEPT_MS = 2 * 24 * HOUR_MS
# The recent minutes (HistoryKeys.recent): one slot per minute, a ring this
# long, so the overview reads a queue's last half hour (30 full minutes and
# the current one) with one GET of 384 bytes instead of 31 minute hashes:
# those cost 15-19 ms a page of 100 queues (docs/benchmarks.md).
RECENT_SLOTS = 32
HOURS_KEPT_MS = 30 * 24 * HOUR_MS
# The lease lapses this long after its holder last renewed it; a standby
# looks every STANDBY_POLL_S: a dead holder is replaced within about 17 s.
LEASE_S = 15.0
RENEW_EVERY_S = 5.0
STANDBY_POLL_S = 2.0
# Events read per queue per command; a full batch means "more to read now".
BATCH = 5000
# A stream capped at 10,000 events holds about 0.3 s of a 10,000 jobs/s
# queue, so the collector reads again at once after a full batch, after
# BUSY_S when it read anything, and after IDLE_S when it read nothing.
IDLE_S = 0.2
BUSY_S = 0.05
# Streams read per round trip: bounds what one pass holds (10 x 5,000 events).
QUEUES_PER_READ = 10
# Streams asked "anything after the cursor?" per XREAD COUNT 1 (single node):
# a pass reads only the streams with news, so a thousand idle queues cost a
# few commands a pass, not a thousand XRANGEs (measured: the idle collector of
# 1,000 queues raised the pages' server floor from 2.0 to 3.4 ms).
NEWS_PER_READ = 200
BACKLOG_EVERY_S = 10.0
# What a pass folds is recorded (with the status saying the collector caught
# up) this often, and as soon as a pass reads nothing: at 10,000 jobs/s a
# pass every 0.05 s recorded each time, a script call and its batch's JSON,
# a third of a pass's fixed cost (bench/collector.py). A collector that dies
# loses only what it had not recorded, which the next one reads again from
# the recorded cursor: no gap, no double count (if the stream still holds
# it). The history and its lag are this much later (docs/history.md's alert
# fires at 120 s).
RECORD_EVERY_S = 1.0
QUEUES_EVERY_S = 10.0
TRACKED_JOBS = 20_000
# A job hash's processedOn / finishedOn belongs to the attempt an event
# reports when they are this close (the hash is written in the same script
# as the event; a later attempt would be much further away).
SAME_ATTEMPT_MS = 1000

# What "backlog" counts: the tabs of jobs ready to run, from the one
# definition of the states.
BACKLOG_TABS = tuple(tab for tab in TABS if tab.ready)


# The field names of the latency buckets, built once (the hot path adds to them).
_BUCKET_FIELDS = {
    kind: tuple(f"{kind}{bucket}" for bucket in range(LAST_BUCKET + 1)) for kind in ("w", "r")
}
_SUM_FIELDS = {kind: kind + "s" for kind in ("w", "r")}
_MAX_FIELDS = {kind: kind + "x" for kind in ("w", "r")}


def minute_of(ms: int) -> int:
    return ms // MINUTE_MS


def hour_of(ms: int) -> int:
    return ms // HOUR_MS


@dataclass
class MinuteBatch:
    """What one minute of one queue's events adds; written by one script call.

    Durations are kept as a list of milliseconds and bucketed once, when the
    batch is written (``as_json``): the fold appends one int per duration
    instead of updating a bucket, a sum and a maximum per event."""

    minute: int
    last_id: str
    add: Counter[str] = field(default_factory=Counter)
    max: dict[str, int] = field(default_factory=dict)
    set: dict[str, int] = field(default_factory=dict)
    waits: list[int] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)

    def duration(self, kind: str, ms: int) -> None:
        """One wait ("w") or run ("r") duration of ``ms`` milliseconds."""
        (self.waits if kind == "w" else self.runs).append(ms)

    def as_json(self) -> str:
        add = Counter(self.add)
        top = dict(self.max)
        for kind, durations in (("w", self.waits), ("r", self.runs)):
            if not durations:
                continue
            if min(durations) < 0:  # a clock step: counted as 0 ms
                durations = [max(0, ms) for ms in durations]
            fields = _BUCKET_FIELDS[kind]
            for bucket, times in bucket_counts(durations).items():
                add[fields[bucket]] += times
            add[_SUM_FIELDS[kind]] += sum(durations)
            top[_MAX_FIELDS[kind]] = max(max(durations), top.get(_MAX_FIELDS[kind], -1))

        def strings(values: dict[str, int]) -> dict[str, str]:
            return {name: str(value) for name, value in values.items() if value}

        return codec.dumps(
            {
                "add": strings(add),
                "max": {name: str(value) for name, value in top.items()},
                "set": {name: str(value) for name, value in self.set.items()},
            }
        )


class _Bounded(dict[bytes, int]):
    """Job id → time (ms), oldest entry first (re-remembering moves it last)."""

    def forget_oldest(self) -> None:
        """Forget the oldest entries past ``TRACKED_JOBS`` (once per fold, not
        per event: between two folds it holds at most one batch more)."""
        excess = len(self) - TRACKED_JOBS
        if excess <= 0:
            return
        for job_id in list(islice(self, excess)):
            del self[job_id]


@dataclass
class _Lookup:
    """A duration to take from a job's hash (the collector did not see it start)."""

    batch: MinuteBatch
    kind: str  # "w" or "r"
    job_id: bytes
    at_ms: int  # the event that ended the duration


@dataclass
class QueueFolder:
    """One queue's position in its stream and the job times it remembers."""

    ref: QueueRef
    cursor: str  # the stream id recorded last ("" = never collected)
    # Folded but not recorded yet (see RECORD_EVERY_S): minute batches in
    # order, and the id of the last event folded into them (reads go on
    # from there; "" when nothing is pending).
    pending: list[MinuteBatch] = field(default_factory=list)
    folded_to: str = ""
    ready_at: _Bounded = field(default_factory=_Bounded)
    active_at: _Bounded = field(default_factory=_Bounded)
    backlog_at: float = 0.0  # time.monotonic() of the last backlog sample
    # Whether the last pass read events from this stream: a busy stream is
    # read again without first asking whether it has news (see _with_news).
    had_news: bool = False
    # A key of its history is broken: left out from now on (CollectorReport).
    stopped: bool = False
    # The queue's keys, built once: building them (names validated) for each of
    # a thousand idle queues on every pass cost 6 ms of a 0.2 s idle cycle.
    keys: QueueKeys = field(init=False)

    def __post_init__(self) -> None:
        self.keys = self.ref.keys

    @property
    def position(self) -> str:
        """The id of the last event folded: the next read starts after it."""
        return self.folded_to or self.cursor

    def fold(self, entries: Sequence[Any]) -> tuple[list[MinuteBatch], list[_Lookup]]:
        """Fold ``entries`` (XRANGE's raw reply: ``[id, [field, value, ...]]``
        each, bytes; see queues.raw_streams) into the pending minute
        batches; answers the batches it added to (the last pending one goes
        on when its minute does) and the durations still to look up in job
        hashes.

        The hot loop of the collector (10,000 jobs/s are 30,000 entries/s):
        fields are compared as bytes and job ids kept as bytes, nothing is
        decoded but a batch's last stream id, and no dict is built for an
        entry written the way BullMQ and our scripts write (``event`` first,
        ``jobId`` second)."""
        batches: list[MinuteBatch] = []
        lookups: list[_Lookup] = []
        ready_at, active_at = self.ready_at, self.active_at
        # The current minute's batch, its bounds (ms), its duration lists and
        # its counts, all in locals: the loop does one dict or list operation
        # per event and no call.
        batch = self.pending[-1] if self.pending else MinuteBatch(0, "")
        first_ms = batch.minute * MINUTE_MS if self.pending else 0
        end_ms = first_ms + MINUTE_MS if self.pending else 0
        if self.pending:
            batches.append(batch)
        waits, runs = batch.waits, batch.runs
        completed = failed = 0
        last_raw: bytes = b""
        # The "<ms>-" of the last id: at 10,000 jobs/s dozens of events share
        # a millisecond, and int() of the id was a third of the loop's time.
        head = b"-"
        ms = 0
        for raw_id, flat in entries:
            if not raw_id.startswith(head):
                cut = raw_id.index(b"-") + 1
                head = raw_id[:cut]
                ms = int(head[:-1])
                if ms >= end_ms or ms < first_ms:
                    if last_raw:
                        _close(batch, last_raw, completed, failed)
                    elif batches:
                        batches.pop()  # the pending batch this fold added nothing to
                    batch = MinuteBatch(ms // MINUTE_MS, "")
                    batches.append(batch)
                    self.pending.append(batch)
                    first_ms = batch.minute * MINUTE_MS
                    end_ms = first_ms + MINUTE_MS
                    waits, runs = batch.waits, batch.runs
                    completed = failed = 0
            last_raw = raw_id
            if len(flat) >= 4 and flat[0] == b"event" and flat[2] == b"jobId":
                event, job_id = flat[1], flat[3]
            else:
                event, job_id = _field(flat, b"event"), _field(flat, b"jobId")
            if not job_id:
                continue
            if event == b"waiting":
                ready_at.pop(job_id, None)  # a job ready again counts as the newest
                ready_at[job_id] = ms
            elif event == b"active":
                active_at.pop(job_id, None)
                active_at[job_id] = ms
                ready = ready_at.pop(job_id, None)
                if ready is None:
                    lookups.append(_Lookup(batch, "w", job_id, ms))
                else:
                    waits.append(ms - ready)
            elif event == b"completed" or event == b"failed":
                if event == b"completed":
                    completed += 1
                else:
                    failed += 1
                    # A job failed from another state (an admin's fail of a
                    # waiting job) never ran: no run time.
                    if _field(flat, b"prev", b"active") != b"active":
                        continue
                started = active_at.pop(job_id, None)
                if started is None:
                    lookups.append(_Lookup(batch, "r", job_id, ms))
                else:
                    runs.append(ms - started)
        if last_raw:
            _close(batch, last_raw, completed, failed)
            self.folded_to = batch.last_id
        ready_at.forget_oldest()
        active_at.forget_oldest()
        return batches, lookups

    def record_pending(self, client: Redis) -> None:
        """Record the pending minute batches, oldest first, each with the
        stream id it reaches (see ``record``)."""
        while self.pending:
            record(client, self.ref, self.cursor, self.pending[0])
            self.cursor = self.pending.pop(0).last_id
        self.folded_to = ""


def _close(batch: MinuteBatch, last_raw: bytes, completed: int, failed: int) -> None:
    """End a minute's batch in the fold: its last stream id and its counts."""
    batch.last_id = last_raw.decode()
    if completed:
        batch.add["c"] += completed
    if failed:
        batch.add["f"] += failed


def _field(flat: Sequence[bytes], name: bytes, default: bytes | None = None) -> bytes | None:
    """The value of ``name`` in a stream entry's flat ``[field, value, ...]``."""
    for index in range(0, len(flat) - 1, 2):
        if flat[index] == name:
            return flat[index + 1]
    return default


def _durations_from_hashes(client: Redis, keys: QueueKeys, lookups: list[_Lookup]) -> None:
    """Add the durations a job hash still tells (see the module's notes)."""
    if not lookups:
        return
    pipe = client.pipeline(transaction=False)
    for lookup in lookups:
        job_key = keys.job(lookup.job_id.decode(errors="replace"))
        pipe.hmget(job_key, ["processedOn", "finishedOn", "timestamp", "delay"])
    for lookup, reply in zip(lookups, pipe.execute(raise_on_error=False), strict=True):
        if not isinstance(reply, list):
            continue  # not a hash (a writer's garbage): no duration
        processed, finished, created, delay = (codec.integer(value) for value in reply)
        if processed is None:
            continue
        if lookup.kind == "r":
            if finished is not None and abs(finished - lookup.at_ms) <= SAME_ATTEMPT_MS:
                lookup.batch.duration("r", finished - processed)
        elif created is not None and abs(processed - lookup.at_ms) <= SAME_ATTEMPT_MS:
            lookup.batch.duration("w", processed - created - (delay or 0))


@dataclass
class _Folded:
    """What one read of one stream folded into, still to be recorded."""

    folder: QueueFolder
    batches: list[MinuteBatch]
    lookups: list[_Lookup]
    # The id the read started from when it did not find that event: events
    # after it may have been trimmed unread (see _trimmed_past); "" otherwise.
    read_from: str
    events: int
    full: bool  # a whole batch was read: the stream has more now


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """No cyclic garbage collection in this process while the block runs.

    Measured reason (bench/collector.py at 10,000 jobs/s): an XRANGE reply
    is two lists per event, built by hiredis in one go, and they outlived
    the collections their own allocations set off, so they were traversed,
    promoted to the oldest generation and set off full collections: 1.5% of
    a core in the bench's small process, 20 ms a full collection, and a full
    collection of a server process costs more. Paused, a reply's lists are
    freed (by reference counting: they form no cycle) before any collection
    counts them. Other threads allocate meanwhile (a few ms) and the next
    collection simply comes after. GC is turned back on only if it was on:
    a host that switched it off keeps it off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class LeaseLost(Exception):
    """This collector no longer holds the lease: it lapsed, or another collector
    wrote a queue's history since this one read it."""


def record(client: Redis, ref: QueueRef, cursor: str, batch: MinuteBatch) -> None:
    """Write one minute batch after ``cursor``; raises LeaseLost when the stored
    cursor moved, CorruptKey when a key of the queue's history is broken."""
    keys = HistoryKeys(ref.name, ref.prefix)
    hour = hour_of(batch.minute * MINUTE_MS)
    answer = scripts.run(
        client,
        scripts.call(
            "recordHistory",
            (keys.state, keys.minute(batch.minute), keys.hour(hour), keys.recent),
            (
                cursor,
                batch.last_id,
                (batch.minute + 1) * MINUTE_MS + MINUTES_KEPT_MS,
                (hour + 1) * HOUR_MS + HOURS_KEPT_MS,
                batch.as_json(),
                batch.minute,
                RECENT_SLOTS,
                (batch.minute + 1 + RECENT_SLOTS) * MINUTE_MS,
            ),
        ),
    )
    if answer == 0:
        raise LeaseLost(f"another collector recorded {ref.qualified}")


class HistoryCollector:
    """Collects while it holds the lease; stands by otherwise. ``start()`` runs it
    in a daemon thread, ``stop()`` ends it and hands the lease back at once."""

    def __init__(
        self,
        client: Redis,
        list_queues: Callable[[], Sequence[QueueRef]],
        *,
        name: str = "",
        lease_s: float = LEASE_S,
        renew_every_s: float = RENEW_EVERY_S,
        standby_poll_s: float = STANDBY_POLL_S,
        idle_s: float = IDLE_S,
        batch: int = BATCH,
        record_every_s: float = RECORD_EVERY_S,
    ) -> None:
        self.client = client
        self._streams = RawStreams(client)
        self.list_queues = list_queues
        # Host and pid: the status says which process collects.
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.lease_s = lease_s
        self.renew_every_s = renew_every_s
        self.standby_poll_s = standby_poll_s
        self.idle_s = idle_s
        self.batch = batch
        self.lease = client.lock(COLLECTOR_LEASE, timeout=lease_s, thread_local=False)
        self.report = CollectorReport(client)
        self.holding = False
        self.terms = 0  # how many times this collector took the lease
        self.folders: dict[QueueRef, QueueFolder] = {}
        self._last_folders: tuple[object, object, list[QueueFolder]] = (None, None, [])
        self.read_last_pass = 0  # events read by the last pass
        self._renewed = 0.0
        self._queues: list[QueueRef] = []
        self._queues_at = -QUEUES_EVERY_S
        self.record_every_s = record_every_s
        self._recorded_at = time.monotonic()
        self._folded = False  # whether a fold since the last record left something pending
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ running

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name="echomq-history", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    busy = self.step()
                except RedisError as error:
                    log.warning("history collector %s: %r; trying again", self.name, error)
                    # Whatever was folded and not recorded is read again from
                    # the recorded cursors (a half-done pass may have missed
                    # a duration or a gap).
                    self.folders = {}
                    self._stop.wait(1.0)
                    continue
                except Exception:
                    # Whatever a queue's data held, the collector of every
                    # other queue must go on: start over from the stored
                    # cursors (nothing half-written: each batch is one script).
                    log.exception(
                        "history collector %s: unexpected error; starting over", self.name
                    )
                    self.folders = {}
                    self._stop.wait(1.0)
                    continue
                if not busy:
                    if not self.holding:
                        pause = self.standby_poll_s
                    else:
                        pause = min(BUSY_S, self.idle_s) if self.read_last_pass else self.idle_s
                    self._stop.wait(pause)
        finally:
            self._hand_back()

    def step(self) -> bool:
        """Take or renew the lease, then read every queue once if it is ours.
        True when some stream had more to read at once."""
        if not self.holding:
            if not self.lease.acquire(blocking=False):
                expire_unheld_lock(self.client, COLLECTOR_LEASE, int(self.lease_s * 1000))
                return False
            self._take_over()
        try:
            self._renew_if_due()
            return self.collect_pass()
        except LeaseLost as lost:
            self._lose(str(lost))
            return False

    def _renew_if_due(self) -> None:
        """Renew the lease every ``renew_every_s``; LeaseLost when it lapsed."""
        if time.monotonic() - self._renewed < self.renew_every_s:
            return
        try:
            self.lease.reacquire()
        except LockError:
            raise LeaseLost("the lease lapsed") from None
        self._renewed = time.monotonic()

    def _take_over(self) -> None:
        self.holding = True
        self.terms += 1
        self._renewed = time.monotonic()
        self._recorded_at = -self.record_every_s  # the status says who collects at once
        # Cursors are read again from Redis: whatever this process remembered
        # may be behind what another holder wrote meanwhile.
        self.folders = {}
        self.report.take_over()
        log.info("history collector %s: collecting", self.name)

    def _lose(self, why: str) -> None:
        log.warning("history collector %s: stands by (%s)", self.name, why)
        self.holding = False
        self.folders = {}

    def _hand_back(self) -> None:
        if self.holding:
            self.holding = False
            # What was folded is recorded first: the next collector may start
            # at once, and reads only what comes after the recorded cursors.
            with contextlib.suppress(LeaseLost, RedisError):
                self._record_all(self.folders.values())
            with contextlib.suppress(LockError, RedisError):
                self.lease.release()

    # ------------------------------------------------------------ one pass

    def _refs(self) -> list[QueueRef]:
        if time.monotonic() - self._queues_at >= QUEUES_EVERY_S:
            self._queues = list(self.list_queues())
            self._queues_at = time.monotonic()
            self.report.prune(self._queues)
        return self._queues

    def _folders(self, refs: list[QueueRef]) -> list[QueueFolder]:
        # The same queue list and the same folders as the last pass (the list
        # is re-read every QUEUES_EVERY_S, the folders reset on a takeover):
        # the same answer, without hashing a thousand refs twice a pass.
        # A queue whose history is stopped is left out until it is due to be
        # tried again: then its folder is made anew, from its stored cursor.
        now = time.monotonic()
        last_refs, last_folders, answer = self._last_folders
        if last_refs is refs and last_folders is self.folders and now < self.report.next_retry:
            return answer
        missing = [r for r in refs if r not in self.folders and not self.report.resting(r, now)]
        if missing:
            pipe = self.client.pipeline(transaction=False)
            for ref in missing:
                pipe.hget(HistoryKeys(ref.name, ref.prefix).state, "cursor")
            for ref, cursor in zip(missing, pipe.execute(raise_on_error=False), strict=True):
                if isinstance(cursor, ResponseError):
                    self._stop_history(ref, HistoryKeys(ref.name, ref.prefix).state)
                else:
                    self.folders[ref] = QueueFolder(ref, codec.text(cursor) or "")
        answer = [self.folders[ref] for ref in refs if ref in self.folders]
        self._last_folders = (refs, self.folders, answer)
        return answer

    def _stop_history(self, ref: QueueRef, broken: CorruptKey | str) -> None:
        """Stop the queue's history: ``broken`` is the refusal naming its
        broken key, or the key a read found of the wrong type."""
        if isinstance(broken, str):
            kind_raw: Any = self.client.type(broken)
            broken = CorruptKey(broken, codec.text(kind_raw) or "none", "hash")
        folder = self.folders.pop(ref, None)
        if folder is not None:
            folder.stopped = True
            folder.pending.clear()
        self._last_folders = (None, None, [])
        self.report.stop(ref, f"its key {broken.key} holds a {broken.actual}")

    def _record(self, ref: QueueRef, write: Callable[[], None]) -> None:
        """Record what ``write`` writes of the queue, which stops its history
        when a key of it is broken (the others go on)."""
        try:
            write()
        except CorruptKey as broken:
            self._stop_history(ref, broken)

    def collect_pass(self) -> bool:
        """Read every queue's stream once (at most ``batch`` events each);
        True when some stream had more. Queues are read ``QUEUES_PER_READ`` at
        a time, so a pass holds at most that many batches in memory, and the
        lease is renewed between them, however long the pass."""
        folders = self._folders(self._refs())
        busy = False
        self.read_last_pass = 0
        to_read = self._with_news(folders)
        for offset in range(0, len(to_read), QUEUES_PER_READ):
            group = to_read[offset : offset + QUEUES_PER_READ]
            with _cyclic_gc_paused():
                folded = self._read_and_fold(group)
            for read_ in folded:
                busy |= read_.full
                self.read_last_pass += read_.events
                self._complete(read_)
            self._renew_if_due()
        self._sample_backlogs(folders)
        if self.read_last_pass == 0 or time.monotonic() - self._recorded_at >= self.record_every_s:
            self._record_all(folders)
            if not busy:
                self._say_caught_up()
        return busy

    def _record_all(self, folders: Iterable[QueueFolder]) -> None:
        # Nothing folded since the last record: a thousand idle queues need
        # not be looked at (an idle pass costs about 2 ms of CPU as it is).
        if self._folded:
            for folder in folders:
                if folder.pending and not folder.stopped:
                    self._record(folder.ref, partial(folder.record_pending, self.client))
            self._folded = False
        if self.report.watching:
            # A stopped queue tried again resumes once all it read is
            # recorded (its backlog sample too): not at the first write that
            # went through, which may be followed by one that does not.
            for folder in folders:
                if not folder.pending and not folder.stopped:
                    self.report.recorded(folder.ref)
        self._recorded_at = time.monotonic()

    def _say_caught_up(self) -> None:
        """Write when this collector last read and recorded every stream to
        its end: when it records (at 10,000 jobs/s writing it every pass was
        one round trip in five)."""
        self.report.caught_up(self.name)

    def _with_news(self, folders: list[QueueFolder]) -> list[QueueFolder]:
        """The folders to read this pass: those that read events the last pass
        (a busy stream most likely has more: asking first was one round trip
        in five of a pass at 10,000 jobs/s), and those of the others whose
        stream holds events after their cursor: one XREAD COUNT 1 per
        ``NEWS_PER_READ`` streams of one hash slot (it names only the streams
        with news; one XREAD cannot span slots on a cluster), pipelined per
        node. A group holding a key that is no stream (XREAD refuses the
        whole group), or whose slot moved, is read whole. On a cluster the
        answer is in the order of the nodes holding the streams, so a read's
        group is mostly one node's (one round trip)."""
        found = [folder for folder in folders if folder.had_news]
        quiet = [folder for folder in folders if not folder.had_news] if found else folders
        groups: dict[str, dict[int, list[QueueFolder]]] = {SINGLE: {0: quiet}}
        if self._streams.cluster:
            groups = {}
            for folder in quiet:
                key = folder.keys.events
                on_node = groups.setdefault(self._streams.node_of(key), {})
                on_node.setdefault(self._streams.slot_of(key), []).append(folder)
        for node, by_slot in groups.items():
            asked = [
                in_slot[offset : offset + NEWS_PER_READ]
                for in_slot in by_slot.values()
                for offset in range(0, len(in_slot), NEWS_PER_READ)
            ]
            pipe = self._streams.on(node).pipeline(transaction=False)
            for group in asked:
                pipe.xread({f.keys.events: f.position or "0-0" for f in group}, count=1)
            replies = pipe.execute(raise_on_error=False)
            if any(is_redirect(reply) for reply in replies):
                self._streams.moved()
            for group, reply in zip(asked, replies, strict=True):
                if isinstance(reply, Exception):
                    found.extend(group)
                    continue
                named = {codec.text(stream) for stream, _ in reply or ()}
                found.extend(folder for folder in group if folder.keys.events in named)
        if self._streams.cluster:
            found.sort(key=lambda folder: self._streams.node_of(folder.keys.events))
        return found

    def _read_and_fold(self, group: list[QueueFolder]) -> list[_Folded]:
        """Read the streams of ``group`` (one round trip per node holding
        them: one off a cluster) and fold each: the replies (tens of
        thousands of objects) are gone when this returns."""
        by_node: dict[str, list[QueueFolder]] = {}
        for folder in group:
            by_node.setdefault(self._streams.node_of(folder.keys.events), []).append(folder)
        folded: list[_Folded] = []
        for node, on_node in by_node.items():
            pipe = self._streams.on(node).pipeline(transaction=False)
            for folder in on_node:
                # From the position itself, one more: finding its event proves
                # that nothing after it was trimmed, without a command of its own.
                if folder.position:
                    pipe.xrange(folder.keys.events, folder.position, "+", count=self.batch + 1)
                else:
                    pipe.xrange(folder.keys.events, "-", "+", count=self.batch)
            replies = pipe.execute(raise_on_error=False)
            if any(is_redirect(reply) for reply in replies):
                # A slot moved: those streams are read on their new node next pass.
                self._streams.moved()
            for folder, entries in zip(on_node, replies, strict=True):
                read_ = self._fold_read(folder, entries)
                if read_ is not None:
                    folded.append(read_)
        return folded

    def _fold_read(self, folder: QueueFolder, entries: Any) -> _Folded | None:
        """Fold what one XRANGE of ``folder``'s stream answered (None: nothing new)."""
        folder.had_news = False
        if isinstance(entries, Exception):
            return None  # not a stream (a writer's garbage), or moved: nothing to fold
        start = folder.position
        cursor_found = bool(entries) and entries[0][0] == start.encode()
        if cursor_found:
            del entries[0]
        else:
            del entries[self.batch :]
        if not entries:
            return None
        folder.had_news = self._folded = True
        batches, lookups = folder.fold(entries)
        read_from = start if start and not cursor_found else ""
        full = len(entries) >= self.batch
        return _Folded(folder, batches, lookups, read_from, len(entries), full)

    def _complete(self, folded: _Folded) -> None:
        """Add to one stream's folded batches what the fold could not know:
        durations from job hashes, and whether events were trimmed unread."""
        _durations_from_hashes(self.client, folded.folder.keys, folded.lookups)
        if folded.read_from and self._trimmed_past(folded.folder, folded.read_from):
            folded.batches[0].add["g"] += 1

    def _trimmed_past(self, folder: QueueFolder, read_from: str) -> bool:
        """Whether events after ``read_from`` may have been trimmed unread;
        asked when the read did not find that id's own event. Trimming takes
        the oldest events first, so when one older than it is still there its
        event was deleted on its own (XDEL) and nothing after it is missing.
        When none is, the stream was trimmed past it (or deleted and begun
        again): a gap is said, not assumed away.

        Asked this way, a later trim cannot hide the gap: the rule before ("is
        the first event read the oldest one left?", asked after the read)
        missed every gap whose stream was trimmed again in between, as a
        stream written at 10,000 jobs/s always is (bench/collector.py on a
        busy machine: 1,158 jobs of 87,700 lost, no gap said)."""
        older = read(self.client.xrevrange, folder.keys.events, f"({read_from}", "-", count=1)
        return not older

    def _sample_backlogs(self, folders: list[QueueFolder]) -> None:
        now = time.monotonic()
        due = [folder for folder in folders if now - folder.backlog_at >= BACKLOG_EVERY_S]
        if not due:
            return
        pipe = self.client.pipeline(transaction=False)
        for folder in due:
            for tab in BACKLOG_TABS:
                for state in tab.keys:
                    key = folder.keys.state(state.name)
                    if state.is_list:
                        pipe.llen(key)
                    else:
                        pipe.zcard(key)
        replies = iter(pipe.execute(raise_on_error=False))
        wall_ms = int(time.time() * 1000)
        per_queue = sum(len(tab.keys) for tab in BACKLOG_TABS)
        for folder in due:
            counted = [next(replies) for _ in range(per_queue)]
            backlog = sum(reply for reply in counted if isinstance(reply, int))
            batch = MinuteBatch(minute_of(wall_ms), folder.cursor)
            batch.set["b"] = backlog
            batch.max["bx"] = backlog
            self._record(folder.ref, partial(record, self.client, folder.ref, folder.cursor, batch))
            folder.backlog_at = now
