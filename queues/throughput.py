"""What a queue finished lately, decoded from the replies of ``queueCounts``.

Two sources, read in the same script call as the counts (``queues.read.counts``):

- **Metrics**, kept by workers that enable them (BullMQ's encoding, PROTOCOL.md
  "Metrics"): a list of per-minute counts, newest first, that grows only when a
  job finishes, plus a hash saying where the list ends (``prevTS``) and how many
  finishes since then are not in it yet (``count - prevCount``). A queue whose
  workers stopped an hour ago still has its last busy minutes at the head of
  the list, so the series is aligned to now here: the pending finishes go in
  their minute and the minutes since get zeros.
- **The finished sets**, for queues whose workers keep no metrics (BullMQ's
  default): the completed and failed sets are scored by finishedOn, so a
  ZCOUNT over a time window is the number of jobs that finished in it, at
  O(log n) whatever the sets hold. They only know the jobs still kept: a set
  trimmed by removeOnComplete covers less time (the window is shortened to it,
  for both sets, so the rate stays fair), a queue that keeps no completed jobs
  has an unknown completed count, and failures removed by removeOnFail or
  retried are not seen.

Both give the same :class:`RecentFinishes`: the last ``RECENT_MINUTES`` full
minutes plus the current one so far, and the ``PREVIOUS_MINUTES`` before them
(to tell a rising failure rate from a steady one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from queues import codec

MINUTE_MS = 60_000
RECENT_MINUTES = 5
PREVIOUS_MINUTES = 10
# Replies per queue after the counts when metrics are asked for: two lists, two
# HMGETs (count, prevTS, prevCount) and six finished-set figures.
REPLIES = 10

Source = Literal["metrics", "finished jobs"]


@dataclass(frozen=True, slots=True)
class Windows:
    """The recent window starts RECENT_MINUTES whole minutes before now's
    minute; the previous one PREVIOUS_MINUTES before that."""

    now_ms: int

    @property
    def recent_start(self) -> int:
        return (self.now_ms // MINUTE_MS - RECENT_MINUTES) * MINUTE_MS

    @property
    def previous_start(self) -> int:
        return self.recent_start - PREVIOUS_MINUTES * MINUTE_MS


@dataclass(frozen=True, slots=True)
class RecentFinishes:
    """Jobs finished in the recent window and in the previous one."""

    source: Source
    completed: int | None  # None: unknown (completed jobs are not kept)
    failed: int
    previous_completed: int | None  # None: the source does not reach back that far
    previous_failed: int | None
    minutes: float  # how long the recent counts cover

    @property
    def total(self) -> int | None:
        return None if self.completed is None else self.completed + self.failed

    @property
    def rate(self) -> float | None:
        """Failed share of the recent finishes; None when not known or none finished."""
        total = self.total
        return self.failed / total if total else None

    @property
    def previous_rate(self) -> float | None:
        if self.previous_completed is None or self.previous_failed is None:
            return None
        total = self.previous_completed + self.previous_failed
        return self.previous_failed / total if total else None

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "completed": self.completed,
            "failed": self.failed,
            "previous_completed": self.previous_completed,
            "previous_failed": self.previous_failed,
            "minutes": round(self.minutes, 2),
        }


@dataclass(frozen=True, slots=True)
class Throughput:
    """A queue's per-minute series (full minutes, oldest first, the newest the
    minute before now's), the current minute so far, and the recent finishes."""

    completed_per_minute: list[int]
    failed_per_minute: list[int]
    this_minute: tuple[int, int] | None  # (completed, failed); None: not known
    recent: RecentFinishes | None


def _per_minute(raw: Sequence[Any] | None) -> list[int]:
    # Stored newest first; charts draw oldest first. ``int`` takes the bytes
    # Redis gives; map() is the overview's hot loop (21 queues x 2 series).
    if not raw:
        return []
    try:
        values = list(map(int, raw))
    except (TypeError, ValueError):
        values = [codec.integer(v, 0) or 0 for v in raw]
    values.reverse()
    return values


def _aligned(
    minutes: list[int], meta: Sequence[Any] | None, now_ms: int, points: int
) -> tuple[list[int], int | None]:
    """The full minutes up to the one before now's, and now's minute so far.

    Without the hash (an older writer, or test data) the list is taken as
    ending at the minute before now's, and the current minute is unknown.
    """
    if not meta or len(meta) < 2:
        return minutes, None
    count, prev_ts = meta[0], meta[1]
    prev_count = meta[2] if len(meta) > 2 else None
    last = codec.integer(prev_ts)
    if last is None:
        return minutes, None
    pending = max(0, (codec.integer(count, 0) or 0) - (codec.integer(prev_count, 0) or 0))
    elapsed = now_ms // MINUTE_MS - last // MINUTE_MS
    if elapsed <= 0:  # the pending finishes are this minute's (or a clock ahead of ours)
        return minutes, pending
    quiet = min(elapsed - 1, points)
    return (minutes + [pending] + [0] * quiet)[-points:], 0


def padded(series: Sequence[int], length: int) -> list[int]:
    """A series that started later (a queue's first failure starts its failed
    metrics) had nothing before: zeros in front, so both series line up."""
    return [0] * (length - len(series)) + list(series)


def from_metrics(replies: Sequence[Any], now_ms: int, points: int) -> Throughput | None:
    """The metrics replies of one queue; None when its workers keep no metrics."""
    completed_raw, failed_raw, completed_meta, failed_meta = replies[:4]
    has_hash = any(codec.integer((meta or [None])[0]) is not None for meta in replies[2:4])
    if not (completed_raw or failed_raw or has_hash):
        return None
    completed, completed_now = _aligned(_per_minute(completed_raw), completed_meta, now_ms, points)
    failed, failed_now = _aligned(_per_minute(failed_raw), failed_meta, now_ms, points)
    # A series without a hash (never a failure) lines up with the other one.
    if failed_now is None and not failed_raw:
        failed_now = 0 if completed_now is not None else None
    if completed_now is None and not completed_raw:
        completed_now = 0 if failed_now is not None else None
    length = max(len(completed), len(failed))
    completed, failed = padded(completed, length), padded(failed, length)
    this_minute = (
        (completed_now or 0, failed_now or 0)
        if completed_now is not None or failed_now is not None
        else None
    )
    current = this_minute or (0, 0)
    full_previous = length >= RECENT_MINUTES + PREVIOUS_MINUTES
    previous = slice(-(RECENT_MINUTES + PREVIOUS_MINUTES), -RECENT_MINUTES)
    minute_share = (now_ms % MINUTE_MS) / MINUTE_MS if this_minute is not None else 0.0
    recent = RecentFinishes(
        source="metrics",
        completed=sum(completed[-RECENT_MINUTES:]) + current[0],
        failed=sum(failed[-RECENT_MINUTES:]) + current[1],
        previous_completed=sum(completed[previous]) if full_previous else None,
        previous_failed=sum(failed[previous]) if full_previous else None,
        minutes=min(length, RECENT_MINUTES) + minute_share,
    )
    return Throughput(completed, failed, this_minute, recent)


def from_finished_sets(replies: Sequence[Any], windows: Windows) -> RecentFinishes:
    """The finished-set figures of one queue (see queueCounts' header)."""
    oldest_raw, start_raw, completed, failed, previous_completed, previous_failed = replies[:6]
    oldest = codec.integer(oldest_raw)
    start = codec.integer(start_raw) or windows.recent_start
    keeps_completed = oldest is not None and oldest >= 0
    covers_previous = oldest is not None and 0 <= oldest <= windows.previous_start
    return RecentFinishes(
        source="finished jobs",
        completed=codec.integer(completed, 0) if keeps_completed else None,
        failed=codec.integer(failed, 0) or 0,
        previous_completed=codec.integer(previous_completed, 0) if covers_previous else None,
        # The failed set is taken as kept (failures usually are): its own pace
        # before the window is known even when the completed set's is not.
        previous_failed=codec.integer(previous_failed, 0) or 0,
        minutes=max(0, windows.now_ms - start) / MINUTE_MS,
    )


def decode(replies: Sequence[Any], windows: Windows, points: int) -> Throughput:
    """One queue's REPLIES replies: the metrics when its workers keep them, else
    the finished sets' recent counts (and no per-minute series)."""
    from_lists = from_metrics(replies[:4], windows.now_ms, points)
    if from_lists is not None:
        return from_lists
    return Throughput([], [], None, from_finished_sets(replies[4:], windows))
