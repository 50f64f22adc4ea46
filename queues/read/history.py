"""The metrics history of a queue, as queues.collector recorded it.

``history`` gives the points of one range (1 h and 24 h: one per minute;
7 d and 30 d: one per hour), ``totals`` the running totals Prometheus
exports, ``recent`` the last hour of many queues for the overview's summary,
``with_recent_series`` the overview's half hour per queue (from the packed
recent minutes, one key a queue), and ``collector_status`` who collects and
how far behind it is. Every read is one pipelined round trip over keys whose
number is fixed by the range (at most 1,440 small hashes for 24 h), never by
how many jobs ran.
"""

from __future__ import annotations

import dataclasses
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from redis import Redis

from queues import codec, scripts
from queues.collector import HOUR_MS, MINUTE_MS, RECENT_SLOTS
from queues.commands import reads
from queues.connection import is_cluster
from queues.keys import COLLECTOR_STATUS, HistoryKeys, stopped_history_field
from queues.latency import LAST_BUCKET, percentile_ms
from queues.read.counts import QueueSummary
from queues.read.refs import QueueRef
from queues.read.replies import read


@dataclass(frozen=True, slots=True)
class HistoryRange:
    name: str  # in URLs (?range=) and the JSON API
    label: str
    points: int
    step_ms: int  # MINUTE_MS or HOUR_MS: which hashes it reads


RANGES: dict[str, HistoryRange] = {
    r.name: r
    for r in (
        # The queue chart's hour (dashboard.shared.charts): 60 full minutes and the
        # current one, so both parts of a page say the same "last hour".
        HistoryRange("1h", "hour", 61, MINUTE_MS),
        HistoryRange("24h", "24 hours", 1440, MINUTE_MS),
        HistoryRange("7d", "7 days", 168, HOUR_MS),
        HistoryRange("30d", "30 days", 720, HOUR_MS),
    )
}
DEFAULT_RANGE = "24h"


@dataclass(slots=True)
class Durations:
    """Durations (ms) counted per latency bucket, with their sum and exact maximum."""

    buckets: dict[int, int] = field(default_factory=dict)
    sum_ms: int = 0
    max_ms: int | None = None

    @property
    def count(self) -> int:
        return sum(self.buckets.values())

    def percentile(self, fraction: float) -> float | None:
        return percentile_ms(self.buckets, fraction, self.max_ms)

    def merge(self, other: Durations) -> None:
        for bucket, count in other.buckets.items():
            self.buckets[bucket] = self.buckets.get(bucket, 0) + count
        self.sum_ms += other.sum_ms
        if other.max_ms is not None:
            self.max_ms = other.max_ms if self.max_ms is None else max(self.max_ms, other.max_ms)

    def as_json(self) -> dict[str, Any]:
        p50, p95 = self.percentile(0.5), self.percentile(0.95)
        return {
            "count": self.count,
            "p50_ms": None if p50 is None else round(p50, 1),
            "p95_ms": None if p95 is None else round(p95, 1),
            "max_ms": self.max_ms,
        }


@dataclass(slots=True)
class Figures:
    """One minute's or hour's figures (or their sum), as the collector wrote them."""

    completed: int = 0
    failed: int = 0
    wait: Durations = field(default_factory=Durations)
    run: Durations = field(default_factory=Durations)
    backlog: int | None = None  # the last sample (None: none taken)
    backlog_max: int | None = None
    gaps: int = 0  # reads that found events trimmed before they were read

    @classmethod
    def from_hash(cls, raw: Mapping[Any, Any]) -> Figures:
        figures = cls()
        for raw_name, raw_value in raw.items():
            name, value = codec.text(raw_name) or "", codec.integer(raw_value)
            if value is None or not name:
                continue  # a hand edit or a foreign writer: skip what is not ours
            figures._apply(name, value)
        return figures

    def _apply(self, name: str, value: int) -> None:
        if name == "c":
            self.completed = value
        elif name == "f":
            self.failed = value
        elif name == "b":
            self.backlog = value
        elif name == "bx":
            self.backlog_max = value
        elif name == "g":
            self.gaps = value
        elif name[0] in "wr":
            durations = self.wait if name[0] == "w" else self.run
            rest = name[1:]
            if rest == "s":
                durations.sum_ms = value
            elif rest == "x":
                durations.max_ms = value
            elif rest.isdigit() and int(rest) <= LAST_BUCKET:
                durations.buckets[int(rest)] = value

    def merge(self, other: Figures) -> None:
        self.completed += other.completed
        self.failed += other.failed
        self.gaps += other.gaps
        self.wait.merge(other.wait)
        self.run.merge(other.run)
        if other.backlog is not None:
            self.backlog = other.backlog
        if other.backlog_max is not None:
            self.backlog_max = max(self.backlog_max or 0, other.backlog_max)

    @property
    def failure_rate(self) -> float | None:
        finished = self.completed + self.failed
        return self.failed / finished if finished else None


@dataclass(frozen=True, slots=True)
class Point:
    start_ms: int
    figures: Figures

    @property
    def recorded(self) -> bool:
        """Whether the step holds a figure (a finished job, a time, a backlog sample)."""
        f = self.figures
        return bool(f.completed or f.failed or f.wait.count or f.run.count or f.backlog is not None)

    def as_json(self) -> dict[str, Any]:
        f = self.figures
        return {
            "t": self.start_ms,
            "completed": f.completed,
            "failed": f.failed,
            "wait": f.wait.as_json(),
            "run": f.run.as_json(),
            "backlog": f.backlog,
            "gaps": f.gaps,
        }


@dataclass(frozen=True, slots=True)
class History:
    ref: QueueRef
    range: HistoryRange
    points: list[Point]  # oldest first, one per step, the last one the current step
    read_at_ms: int
    # Why the collector stopped this queue's history ("" when it did not):
    # one of its history keys is broken (queues/collector_report.py).
    stopped: str = ""

    @property
    def recorded_anything(self) -> bool:
        """Whether any step holds a figure (a finished job, a time, a backlog sample)."""
        return any(point.recorded for point in self.points)

    def as_json(self) -> dict[str, Any]:
        return {
            "queue": self.ref.qualified,
            "range": self.range.name,
            "step_ms": self.range.step_ms,
            "read_at_ms": self.read_at_ms,
            "stopped": self.stopped or None,
            "points": [point.as_json() for point in self.points],
        }


def _key(keys: HistoryKeys, step_ms: int, index: int) -> str:
    return keys.minute(index) if step_ms == MINUTE_MS else keys.hour(index)


def _figures(reply: Any) -> Figures:
    """A minute's or hour's HGETALL (empty for a missing or foreign key)."""
    return Figures.from_hash(reply) if isinstance(reply, dict) else Figures()


def _read(client: Redis, wanted: Sequence[str]) -> list[Figures]:
    pipe = client.pipeline(transaction=False)
    for key in wanted:
        pipe.hgetall(key)
    return [_figures(reply) for reply in pipe.execute(raise_on_error=False)]


def history(client: Redis, ref: QueueRef, range_name: str, now_ms: int | None = None) -> History:
    """The points of ``range_name`` (a key of RANGES) ending with the current minute or hour."""
    chosen = RANGES[range_name]
    now = int(time.time() * 1000) if now_ms is None else now_ms
    last = now // chosen.step_ms
    indexes = range(last - chosen.points + 1, last + 1)
    keys = HistoryKeys(ref.name, ref.prefix)
    pipe = client.pipeline(transaction=False)
    for index in indexes:
        pipe.hgetall(_key(keys, chosen.step_ms, index))
    # In the same round trip: whether the collector stopped this history.
    pipe.hget(COLLECTOR_STATUS, stopped_history_field(ref.qualified))
    *replies, stopped = pipe.execute(raise_on_error=False)
    points = [
        Point(index * chosen.step_ms, _figures(reply))
        for index, reply in zip(indexes, replies, strict=True)
    ]
    why = codec.text(stopped) if isinstance(stopped, bytes | str) else ""
    return History(ref, chosen, points, now, stopped=why or "")


def fitted(read: History) -> History:
    """``read`` narrowed to the shortest range of the same step that still
    holds every step recorded: a queue whose history began 20 minutes ago is
    drawn over the last hour, not as a sliver at the right edge of 24 hours.
    The narrower range's steps are the last ones of ``read``: nothing is read
    again. A read with nothing recorded stays as it is."""
    first = next((n for n, point in enumerate(read.points) if point.recorded), None)
    if first is None:
        return read
    span = len(read.points) - first
    narrower = sorted(
        (
            candidate
            for candidate in RANGES.values()
            if candidate.step_ms == read.range.step_ms and span <= candidate.points
        ),
        key=lambda candidate: candidate.points,
    )
    if not narrower or narrower[0].points >= len(read.points):
        return read
    return History(read.ref, narrower[0], read.points[-narrower[0].points :], read.read_at_ms)


def with_history_series(
    client: Redis, summaries: Sequence[QueueSummary], minutes: int
) -> list[QueueSummary]:
    """``summaries``, each whose workers keep no BullMQ metrics given its last
    ``minutes`` full minutes and the current one from the history instead (the
    shape of the metrics' series: oldest first, ``counted_from_events`` set);
    all unchanged while no collector keeps the history current, since an empty
    minute would then claim an idle queue. One read of ``minutes + 1`` minute
    hashes per such queue (``_finished_per_minute``)."""
    missing = [s for s in summaries if not s.completed_per_minute and not s.failed_per_minute]
    if not missing:
        return list(summaries)
    now = max(s.read_at_ms for s in missing) or int(time.time() * 1000)
    if not collector_status(client).is_current(now):
        return list(summaries)
    last = now // MINUTE_MS
    first = last - minutes
    flat = _finished_per_minute(client, [s.ref for s in missing], first, minutes + 1)
    filled: dict[QueueRef, QueueSummary] = {}
    for n, summary in enumerate(missing):
        row = flat[n * 2 * (minutes + 1) : (n + 1) * 2 * (minutes + 1)]
        completed, failed = row[0::2], row[1::2]
        filled[summary.ref] = dataclasses.replace(
            summary,
            completed_per_minute=completed[:-1],
            failed_per_minute=failed[:-1],
            this_minute=(completed[-1], failed[-1]),
            counted_from_events=True,
        )
    return [filled.get(s.ref, s) for s in summaries]


# A slot of the recent minutes: the minute, its completed, its failed (recordHistory-4.lua).
_RECENT_SLOT = struct.Struct(">III")
_RECENT_BYTES = RECENT_SLOTS * _RECENT_SLOT.size
# The newest minute the collector covered may be this many minutes before now's
# and the history still count as current (LAGGING_S, in whole minutes).
_CURRENT_MINUTES = 2


def with_recent_series(
    client: Redis, summaries: Sequence[QueueSummary], minutes: int
) -> list[QueueSummary]:
    """``summaries``, each whose workers keep no BullMQ metrics given its last
    ``minutes`` full minutes (at most RECENT_SLOTS - 1) and the current one
    from the recent minutes the collector keeps, as with_history_series does
    from the minute hashes: one GET a queue, all in one round trip (the
    overview's page; 31 minute hashes a queue cost it 15-19 ms).

    A slot holding its minute says the collector covered that minute (it
    marks every queue at least every 10 s while it runs): the series starts
    at the first minute covered, so a collector started ten minutes ago draws
    ten minutes, not twenty idle ones before them; a queue whose newest
    covered minute is older than _CURRENT_MINUTES is left without a series
    (no collector current: an empty minute would claim an idle queue)."""
    missing = [s for s in summaries if not s.completed_per_minute and not s.failed_per_minute]
    if not missing:
        return list(summaries)
    keys = [HistoryKeys(summary.ref.name, summary.ref.prefix).recent for summary in missing]
    # One MGET (a key of another type reads as nil); a cluster's keys sit in
    # as many slots as queues, which redis-py's non-atomic MGET splits by node.
    cluster: Any = client
    packed: list[Any] = cluster.mget_nonatomic(keys) if is_cluster(client) else cluster.mget(keys)
    filled: dict[QueueRef, QueueSummary] = {}
    for summary, raw in zip(missing, packed, strict=True):
        now = (summary.read_at_ms or int(time.time() * 1000)) // MINUTE_MS
        covered = recent_minutes(raw, now - minutes, now)
        if not covered or max(covered) < now - _CURRENT_MINUTES or min(covered) == now:
            continue
        full = range(min(covered), now)
        filled[summary.ref] = dataclasses.replace(
            summary,
            completed_per_minute=[covered.get(m, (0, 0))[0] for m in full],
            failed_per_minute=[covered.get(m, (0, 0))[1] for m in full],
            this_minute=covered.get(now, (0, 0)),
            counted_from_events=True,
        )
    return [filled.get(s.ref, s) for s in summaries]


def recent_minutes(raw: Any, first: int, last: int) -> dict[int, tuple[int, int]]:
    """minute -> (completed, failed) of the slots holding a minute from
    ``first`` to ``last``; nothing from a missing key or one of another
    type, and a short string (another writer's) read as far as it goes."""
    if not isinstance(raw, bytes):
        return {}
    packed = raw[:_RECENT_BYTES].ljust(_RECENT_BYTES, b"\0")
    return {
        minute: (completed, failed)
        for minute, completed, failed in _RECENT_SLOT.iter_unpack(packed)
        if first <= minute <= last
    }


def _finished_per_minute(
    client: Redis, refs: Sequence[QueueRef], first: int, minutes: int
) -> list[int]:
    """Per queue, per minute from ``first`` on: completed, failed (flat). One
    script call on a single Redis (100 queues of 31 minutes, on a loaded
    machine: 65 ms pipelined, 27-40 ms with the script; 15 ms with the script
    on a quiet one); on a cluster, where the queues' hashes sit on several
    nodes, the same reads as one pipeline."""
    keys = [HistoryKeys(ref.name, ref.prefix) for ref in refs]
    if not is_cluster(client):
        call = reads.history_minutes([k.base for k in keys], first_minute=first, minutes=minutes)
        return [int(value) for value in scripts.run(client, call)]
    pipe = client.pipeline(transaction=False)
    for k in keys:
        for index in range(first, first + minutes):
            pipe.hmget(k.minute(index), ["c", "f"])
    return [count for reply in pipe.execute(raise_on_error=False) for count in _finished(reply)]


def _finished(reply: Any) -> tuple[int, int]:
    """(completed, failed) of a minute's HMGET c f (0, 0 for a missing or foreign key)."""
    if not isinstance(reply, list):
        return 0, 0
    return codec.integer(reply[0]) or 0, codec.integer(reply[1]) or 0


def recent(
    client: Redis, refs: Sequence[QueueRef], minutes: int = 60, now_ms: int | None = None
) -> dict[QueueRef, Figures]:
    """Each queue's last ``minutes`` minutes (the current one included) added up:
    one pipeline of ``minutes`` small hashes per queue."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    last = now // MINUTE_MS
    indexes = range(last - minutes + 1, last + 1)
    wanted = [HistoryKeys(ref.name, ref.prefix).minute(i) for ref in refs for i in indexes]
    read = _read(client, wanted)
    summed: dict[QueueRef, Figures] = {}
    for n, ref in enumerate(refs):
        total = Figures()
        for figures in read[n * minutes : (n + 1) * minutes]:
            total.merge(figures)
        summed[ref] = total
    return summed


@dataclass(frozen=True, slots=True)
class Totals:
    """Everything the collector counted for a queue since its history began."""

    figures: Figures
    cursor: str  # the last event read ("" when never collected)


def stopped_histories(client: Redis, refs: Sequence[QueueRef]) -> dict[QueueRef, str]:
    """The queues of ``refs`` whose history the collector stopped, and why (a
    key of it is broken: queues/collector_report.py). One HMGET."""
    if not refs:
        return {}
    fields = [stopped_history_field(ref.qualified) for ref in refs]
    said = read(client.hmget, COLLECTOR_STATUS, fields)
    return {ref: codec.text(why) or "" for ref, why in zip(refs, said, strict=False) if why}


def totals(client: Redis, refs: Sequence[QueueRef]) -> dict[QueueRef, Totals]:
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.hgetall(HistoryKeys(ref.name, ref.prefix).state)
    found: dict[QueueRef, Totals] = {}
    for ref, reply in zip(refs, pipe.execute(raise_on_error=False), strict=True):
        raw = reply if isinstance(reply, dict) else {}
        cursor = codec.text(raw.get(b"cursor")) or ""
        found[ref] = Totals(Figures.from_hash(raw), cursor)
    return found


# The collector reads every stream at least this often while it runs at all:
# a history last caught up longer ago than this may be missing what happened since.
LAGGING_S = 120


@dataclass(frozen=True, slots=True)
class CollectorStatus:
    holder: str | None
    caught_up_ms: int | None  # when it last read every stream to its end

    def lag_s(self, now_ms: int | None = None) -> float | None:
        """Seconds since the collector last caught up; None when it never did."""
        if self.caught_up_ms is None:
            return None
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return max(0.0, (now - self.caught_up_ms) / 1000)

    def is_current(self, now_ms: int | None = None) -> bool:
        """Whether the history holds everything up to about now (so a minute
        with nothing in it means nothing happened)."""
        lag = self.lag_s(now_ms)
        return lag is not None and lag <= LAGGING_S


def collector_status(client: Redis) -> CollectorStatus:
    holder, caught_up = read(client.hmget, COLLECTOR_STATUS, ["holder", "caught_up_ms"]) or [
        None,
        None,
    ]
    return CollectorStatus(codec.text(holder), codec.integer(caught_up))
