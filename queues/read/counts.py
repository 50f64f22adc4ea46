"""How many jobs each state holds, whether a queue is paused, and what
finished lately: one round trip for any number of queues.

On a single Redis server the counts are one read-only script call
(priv/scripts/queueCounts-0.lua); on a cluster, where a queue's keys may live
on any node, the same reads go out as one pipeline shaped like the script's
reply. Which key is counted how, and which keys a tab adds up, comes from
``queues.read.states``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from redis import Redis

from queues import codec, scripts, throughput
from queues.commands import reads
from queues.connection import is_cluster
from queues.keys import InvalidName, QueueKeys
from queues.read import answers
from queues.read.answers import METRICS_POINTS as METRICS_POINTS
from queues.read.refs import QueueRef
from queues.read.replies import replies
from queues.read.states import COUNTED_KEYS, KEY_STATE, KEY_STATES, TAB, TABS, KeyState
from queues.throughput import RecentFinishes, Windows


@dataclass(slots=True)
class QueueSummary:
    ref: QueueRef
    counts: dict[str, int]
    paused: bool
    # Full minutes, oldest first, the newest being the minute before now's
    # (queues.throughput aligns the metrics to now); empty without metrics.
    completed_per_minute: list[int] = field(default_factory=list)
    failed_per_minute: list[int] = field(default_factory=list)
    # (completed, failed) in the current minute so far; None when not known.
    this_minute: tuple[int, int] | None = None
    # What finished lately, from the metrics or the finished sets; None when
    # the caller asked for no metrics.
    recent: RecentFinishes | None = None
    # The moment the series are aligned to (ms), for charts that label minutes.
    read_at_ms: int = 0
    # The series come from the dashboard's metrics history, not BullMQ's metrics
    # (the workers keep none): queues.read.history.with_history_series.
    counted_from_events: bool = False

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_json(self) -> answers.QueueSummary:
        return answers.QueueSummary(
            queue=self.ref.qualified,
            prefix=self.ref.prefix,
            name=self.ref.name,
            connection=self.ref.connection,
            counts=answers.counts_of(self.counts),
            paused=self.paused,
            metrics=answers.Metrics(
                completed_per_minute=self.completed_per_minute,
                failed_per_minute=self.failed_per_minute,
            ),
        )


def _count(pipe: Any, keys: QueueKeys, state: KeyState) -> None:
    key = keys.state(state.name)
    if state.is_list:
        pipe.llen(key)
    else:
        pipe.zcard(key)


def _queue_count_commands(
    pipe: Any, keys: QueueKeys, metrics_points: int, windows: Windows
) -> None:
    # The same reads, in the same order, as priv/scripts/queueCounts-0.lua
    # (which shortens the recent window to a trimmed completed set: see
    # _pipelined_summary_replies).
    for state in COUNTED_KEYS:
        _count(pipe, keys, state)
    pipe.hexists(keys.meta, "paused")
    if metrics_points:
        pipe.lrange(keys.metrics_data("completed"), 0, metrics_points - 1)
        pipe.lrange(keys.metrics_data("failed"), 0, metrics_points - 1)
        for kind in ("completed", "failed"):
            pipe.hmget(keys.metrics(kind), ["count", "prevTS", "prevCount"])
        recent, previous = windows.recent_start, windows.previous_start
        pipe.zrange(keys.completed, 0, 0, withscores=True)
        pipe.zcount(keys.completed, recent, "+inf")
        pipe.zcount(keys.failed, recent, "+inf")
        pipe.zcount(keys.completed, previous, f"({recent}")
        pipe.zcount(keys.failed, previous, f"({recent}")


def _compile_counts_from() -> Callable[[Sequence[Any]], tuple[dict[str, int], bool]]:
    """``_counts_from(counted)``: per tab, the sum of its keys' lengths (read
    in COUNTED_KEYS order), then the paused flag.

    Built once from the definition as one expression: the overview decodes
    this for every queue, and the plain loop over TABS (a sum per tab) cost
    four times as much, about 15 µs a queue more (1,000 queues: 15 ms a
    page). The text holds only the tabs' names (repr) and indices.
    """
    parts, index = [], 0
    for tab in TABS:
        lengths = " + ".join(f"int(c[{index + n}] or 0)" for n in range(len(tab.keys)))
        parts.append(f"{tab.name!r}: {lengths}")
        index += len(tab.keys)
    source = f"lambda c: ({{{', '.join(parts)}}}, bool(c[{index}]))"
    return cast(
        "Callable[[Sequence[Any]], tuple[dict[str, int], bool]]",
        eval(source),  # noqa: S307 - built above from the fixed definition, no input
    )


_counts_from = _compile_counts_from()


def _summary_replies(
    client: Redis, refs: Sequence[QueueRef], metrics_points: int, windows: Windows
) -> list[Any]:
    """The flat reply list of queueCounts: one script call on a single Redis; on
    a cluster (queues spread over nodes) the same reads as one pipeline."""
    if not is_cluster(client):
        call = reads.queue_counts(
            [ref.keys for ref in refs], metrics_points=metrics_points, windows=windows
        )
        return list(scripts.run(client, call))
    return _pipelined_summary_replies(client, refs, metrics_points, windows)


def _pipelined_summary_replies(
    client: Redis, refs: Sequence[QueueRef], metrics_points: int, windows: Windows
) -> list[Any]:
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        _queue_count_commands(pipe, ref.keys, metrics_points, windows)
    answered = replies(pipe)
    if not metrics_points:
        return answered
    # Shaped like the script's reply: the oldest completed score and where the
    # recent counts start; a completed set trimmed inside the recent window is
    # counted again from its oldest job, both sets alike (one more round trip
    # for those queues only).
    per_queue = reads.COUNT_REPLIES + throughput.REPLIES - 1
    shaped: list[Any] = []
    recount = client.pipeline(transaction=False)
    recounted: list[int] = []
    for index, ref in enumerate(refs):
        chunk = answered[index * per_queue : (index + 1) * per_queue]
        oldest_pairs = chunk[reads.COUNT_REPLIES + 4] or []
        oldest = codec.score_ms(oldest_pairs[0][1]) if oldest_pairs else -1
        start = windows.recent_start
        if oldest > start:
            start = oldest
            recount.zcount(ref.keys.completed, start, "+inf")
            recount.zcount(ref.keys.failed, start, "+inf")
            recounted.append(len(shaped) + reads.COUNT_REPLIES + 6)
        shaped += [*chunk[: reads.COUNT_REPLIES + 4], oldest, start, *chunk[-4:]]
    counted = replies(recount) if recounted else []
    for n, position in enumerate(recounted):
        shaped[position : position + 2] = counted[2 * n : 2 * n + 2]
    return shaped


def queue_summaries(
    client: Redis,
    refs: Sequence[QueueRef],
    *,
    metrics_points: int = METRICS_POINTS,
    now_ms: int | None = None,
) -> list[QueueSummary]:
    """Counts, paused flag, per-minute metrics and recent finishes of many
    queues: one round trip (``metrics_points=0``: counts only)."""
    if not refs:
        return []
    windows = Windows(int(time.time() * 1000) if now_ms is None else now_ms)
    answered = _summary_replies(client, refs, metrics_points, windows)
    per_queue = reads.COUNT_REPLIES + (throughput.REPLIES if metrics_points else 0)
    summaries = []
    for index, ref in enumerate(refs):
        chunk = answered[index * per_queue : (index + 1) * per_queue]
        counts, paused = _counts_from(chunk[: reads.COUNT_REPLIES])
        summary = QueueSummary(ref, counts, paused, read_at_ms=windows.now_ms)
        if metrics_points:
            done = throughput.decode(chunk[reads.COUNT_REPLIES :], windows, metrics_points)
            summary.completed_per_minute = done.completed_per_minute
            summary.failed_per_minute = done.failed_per_minute
            summary.this_minute = done.this_minute
            summary.recent = done.recent
        summaries.append(summary)
    return summaries


def _counted_keys(name: str) -> tuple[KeyState, ...]:
    # A tab adds up its keys ("wait": wait and paused); a key state that is no
    # tab ("paused") counts its own key.
    if name in TAB:
        return TAB[name].keys
    if name in KEY_STATE:
        return (KEY_STATE[name],)
    raise InvalidName(f"unknown state {name!r}")


def state_counts(client: Redis, keys: QueueKeys, names: Sequence[str] = ()) -> dict[str, int]:
    """Jobs per state of one queue in one round trip, for ``names`` (tabs or
    key states; none given: every key state, "wait" including paused)."""
    wanted = [(name, _counted_keys(name)) for name in names or [s.name for s in KEY_STATES]]
    pipe = client.pipeline(transaction=False)
    for _, counted in wanted:
        for state in counted:
            _count(pipe, keys, state)
    lengths = iter(replies(pipe))  # a key of the wrong type counts as empty
    return {name: sum(int(next(lengths) or 0) for _ in counted) for name, counted in wanted}


def one_count_each(client: Redis, refs: Sequence[QueueRef], name: str) -> list[int]:
    """Jobs in tab or key state ``name`` of each queue, in one round trip: the
    overview sorts every queue by its failed count this way and reads the
    rest (metrics, other states) for its page of rows only."""
    counted = _counted_keys(name)
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        for state in counted:
            _count(pipe, ref.keys, state)
    lengths = iter(replies(pipe)) if refs else iter(())  # a wrong-typed key counts as empty
    return [sum(int(next(lengths) or 0) for _ in counted) for _ in refs]


@dataclass(frozen=True, slots=True)
class LastFinished:
    """When a queue's newest kept completed and failed jobs finished (ms, their
    finishedOn: the finished sets' score), None where the set keeps none. It
    dates the last moment a worker of the queue is known to have been alive;
    when the workers left is written nowhere (a connection closing leaves no
    key and no event). ``oldest_waiting_ms``: when the job next in line was
    added (the wait list's tail), how long the queue has waited at least,
    for a queue that keeps no finished job to date it by."""

    completed_ms: int | None
    failed_ms: int | None
    oldest_waiting_ms: int | None = None

    @property
    def newest_ms(self) -> int | None:
        known = [ms for ms in (self.completed_ms, self.failed_ms) if ms is not None]
        return max(known) if known else None


def _finished_on(score: Any) -> int | None:
    """A finished set's score as ms (None: no member, or a score no
    finishedOn can be, such as another writer's inf or garbage)."""
    try:
        value = float(score)
    except (TypeError, ValueError):
        return None
    return int(value) if math.isfinite(value) else None


def last_finished(client: Redis, refs: Sequence[QueueRef]) -> dict[QueueRef, LastFinished]:
    """Each queue's :class:`LastFinished`: one round trip, two O(log n) reads
    a queue (the health rule asks it for the queues without a worker only):
    one script call on a single Redis (priv/scripts/lastFinished-0.lua); on a
    cluster, where the queues' keys sit on several nodes, a pipeline."""
    if not refs:
        return {}
    if not is_cluster(client):
        found = list(scripts.run(client, reads.last_finished([ref.keys for ref in refs])))
    else:
        found = _last_finished_per_node(client, refs)
    return {
        ref: LastFinished(*(_finished_on(found[3 * n + i]) for i in range(3)))
        for n, ref in enumerate(refs)
    }


def _last_finished_per_node(client: Redis, refs: Sequence[QueueRef]) -> list[Any]:
    """lastFinished-0.lua's answer read with pipelines where the queues' keys
    sit on several nodes: the sets' newest scores and the wait list's tail,
    then the tail jobs' timestamps (a second round, the ids known)."""
    pipe = client.pipeline(transaction=False)
    for ref in refs:
        pipe.zrange(ref.keys.completed, -1, -1, withscores=True)
        pipe.zrange(ref.keys.failed, -1, -1, withscores=True)
        pipe.lindex(ref.keys.wait, -1)
    first = replies(pipe)
    tails = [first[3 * n + 2] for n in range(len(refs))]
    pipe = client.pipeline(transaction=False)
    for ref, tail in zip(refs, tails, strict=True):
        if isinstance(tail, bytes):
            pipe.hget(ref.keys.job(tail.decode(errors="replace")), "timestamp")
    added = iter(replies(pipe)) if any(isinstance(tail, bytes) for tail in tails) else iter(())
    found: list[Any] = []
    for n, tail in enumerate(tails):
        completed, failed = first[3 * n], first[3 * n + 1]
        found += [completed[0][1] if completed else None, failed[0][1] if failed else None]
        found.append(next(added) if isinstance(tail, bytes) else None)
    return found


def is_paused(client: Redis, keys: QueueKeys) -> bool:
    return bool(client.hexists(keys.meta, "paused"))
