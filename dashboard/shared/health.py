"""Which queues need a look, and why, in words: the one health rule.

By failure rate and trend over the last five minutes
(:class:`queues.throughput.RecentFinishes`), never by a count above zero: a
queue losing 2 jobs in 2,000 is healthy, one losing a third is not. The
thresholds sit above ``manage.py demo``'s normal rates (0.05% to 5%) and its
noise. Before that: jobs ready, not paused and no worker in ``CLIENT LIST`` is
"no workers" at once (issue 21); where ``CLIENT LIST`` is refused only the
five-minute rule speaks (:func:`looks_stuck`); unnamed workers read as none.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass

from dashboard.shared.formatting import span
from queues.read.counts import LastFinished, QueueSummary
from queues.read.states import READY
from queues.throughput import MINUTE_MS, RECENT_MINUTES, RecentFinishes

# A queue is failing when at least this share of what finished lately failed...
FAILING_RATE = 0.10
# ... and enough finished that it is not chance: even the low end of the rate
# (99% Wilson bound) is this high. A fresh start of the demo gave thumbnails
# (5% corrupt images) 8 failures in its first 80 jobs: 10%, but a low end of 4%.
FAILING_FLOOR = 0.05
_Z99 = 2.576
# Failures are rising when the rate at least doubled against the ten minutes
# before and gained five points (0.1% -> 0.3% is noise, 1% -> 6% is not).
RISING_FACTOR = 2.0
RISING_GAIN = 0.05
# Fewer failures than this in the window never mark a queue: 1 of 2 is 50%,
# and says nothing yet.
MIN_FAILED = 3
# Where the completed count is unknown (no metrics, completed jobs not kept)
# only the failures' own pace can rise: this many in the window, at least
# RISING_FACTOR times the pace of the ten minutes before.
MIN_FAILED_WITHOUT_RATE = 10


@dataclass(frozen=True, slots=True)
class Health:
    """``kind`` is "" (fine), "failing", "rising" or "stuck"; ``label`` the
    badge's words and ``detail`` the figures behind them ("23% failed, last 5
    min"; also said for a fine queue that lost a few jobs)."""

    kind: str
    label: str
    detail: str

    @property
    def css(self) -> str:
        """The row's class: failing and rising are the failure look."""
        return {"failing": "has-failed", "rising": "has-failed", "stuck": "stuck"}.get(
            self.kind, ""
        )


def low_end(failed: int, total: int) -> float:
    """The lower 99% Wilson bound of a failure rate: how low it may really be."""
    share, spread = failed / total, _Z99 * _Z99 / total
    centre = share + spread / 2
    margin = _Z99 * math.sqrt(share * (1 - share) / total + spread / (4 * total))
    return (centre - margin) / (1 + spread)


def percent(share: float) -> str:
    """0.0004 -> "0.04%", 0.048 -> "4.8%", 0.23 -> "23%": two figures at most."""
    value = share * 100
    if value == 0 or value >= 10:
        return f"{value:.0f}%"
    digits = 1 if value >= 1 else 2
    return f"{value:.{digits}f}".rstrip("0").rstrip(".") + "%"


def _window(recent: RecentFinishes) -> str:
    minutes = min(RECENT_MINUTES, max(1, round(recent.minutes)))
    return f"last {minutes} min"


def _failed_words(recent: RecentFinishes) -> str:
    """ "23% failed, last 5 min", or "12 failed, last 5 min" when the rate is unknown."""
    rate = recent.rate
    amount = percent(rate) if rate is not None else f"{recent.failed:,}"
    return f"{amount} failed, {_window(recent)}"


def _rising(recent: RecentFinishes) -> str | None:
    """The "was ..." words when failures rose against the previous window, else None."""
    rate, before = recent.rate, recent.previous_rate
    if rate is not None:
        if before is None or rate < before * RISING_FACTOR or rate - before < RISING_GAIN:
            return None
        return f"was {percent(before)}"
    if recent.previous_failed is None or recent.failed < MIN_FAILED_WITHOUT_RATE:
        return None
    pace = recent.failed / max(recent.minutes, 1)
    pace_before = recent.previous_failed / (2 * RECENT_MINUTES)
    if pace < pace_before * RISING_FACTOR:
        return None
    # Both as paces: "12 failed … (was 0.2/min)" set a count against a rate.
    return f"{_pace(pace)} now, was {_pace(pace_before)}"


def _pace(per_minute: float) -> str:
    """ "0.2/min", "2.4/min", "21,293/min": a tenth only where it is worth reading."""
    if per_minute >= 10:
        return f"{per_minute:,.0f}/min"
    return f"{per_minute:,.1f}/min".replace(".0/", "/")


def looks_stuck(summary: QueueSummary) -> bool:
    """Jobs ready, none active, not paused and nothing finished lately: stuck,
    whether workers are connected or not (the rule where they cannot be
    counted: the server refuses ``CLIENT LIST``)."""
    counts, recent = summary.counts, summary.recent
    moving = recent is not None and (recent.completed or 0) + recent.failed > 0
    return wants_workers(summary) and not counts["active"] and not moving


def wants_workers(summary: QueueSummary) -> bool:
    """Jobs ready and the queue not paused: without a worker they wait for
    nothing, so its workers are worth counting (dashboard.browse.health_reads).
    Delayed jobs are not ready (nothing is late yet), and a paused queue
    waits on purpose."""
    return not summary.paused and any(map(summary.counts.__getitem__, READY))


_DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class Workers:
    """A queue's workers as ``CLIENT LIST`` shows them (queues.read.workers),
    and, for a queue without one, when its newest kept job finished."""

    connected: int
    last_finished: LastFinished | None = None


def _workers_words(workers: int) -> str:
    return f"{workers:,} worker{'s' if workers != 1 else ''} connected"


def _when(at_ms: int, now_ms: int) -> str:
    """ "14 min ago (10:42 UTC)": how long first (how bad), then the clock an
    on-call person lines up with a deploy log ("Nov 30 10:42 UTC" another day)."""
    minute = at_ms // MINUTE_MS
    day = ""
    if at_ms // _DAY_MS != now_ms // _DAY_MS:
        try:
            moment = dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return f"at {at_ms} ms, a time no clock wrote"  # a score of 1e308, say
        day = f"{moment:%b} {moment.day} "
    ago = now_ms - at_ms
    # Arithmetic, not strftime, for the clock: a page may hold 100 of these.
    clock = f"{day}{minute // 60 % 24:02d}:{minute % 60:02d} UTC"
    return f"{span(ago) + ' ago' if ago >= MINUTE_MS else 'just now'} ({clock})"


def _since_words(last: LastFinished | None, now_ms: int) -> str:
    """Since when the queue has had no worker, as far as the jobs kept say:
    the newest finishedOn is the last moment a worker is known to have been
    there (when it left is written nowhere). With completed jobs not kept
    (removeOnComplete), a later job may have completed unseen: the words say
    which set dated it. Nothing kept finished: the job next in line has
    waited since it was added, so no worker has taken a job since then."""
    if last is None:
        return ""
    if last.completed_ms is not None:
        return f"last job finished {_when(last.newest_ms or last.completed_ms, now_ms)}"
    if last.failed_ms is not None:
        return f"last failure {_when(last.failed_ms, now_ms)}, completed jobs not kept"
    if last.oldest_waiting_ms is not None:
        return f"none finished; the oldest added {_when(last.oldest_waiting_ms, now_ms)}"
    return "no finished job kept to date it"


def _no_workers(summary: QueueSummary, workers: Workers, detail: str) -> Health:
    ready = sum(map(summary.counts.__getitem__, READY))
    words = [f"{ready:,} waiting"]  # the badge says "no workers"
    since = _since_words(workers.last_finished, summary.read_at_ms or _now_ms())
    words += [since] if since else []
    words += [detail] if detail else []  # the failures, when there were some lately
    return Health("stuck", "no workers", "; ".join(words))


def _now_ms() -> int:
    return int(time.time() * 1000)


def queue_health(summary: QueueSummary, workers: Workers | None = None) -> Health:
    """No worker connected while jobs are ready and the queue is not paused
    (``workers`` counted, none connected: :func:`wants_workers`) outranks
    failing (rate at or over FAILING_RATE, and surely over FAILING_FLOOR),
    which outranks rising, which outranks stuck (:func:`looks_stuck`): with
    workers connected, or when they could not be counted (None), "nothing
    active". No worker comes first since nothing else changes until one is
    back: the failure figures follow in its words."""
    recent = summary.recent
    detail = _failed_words(recent) if recent is not None and recent.failed else ""
    if workers is not None and workers.connected == 0 and wants_workers(summary):
        return _no_workers(summary, workers, detail)
    if recent is not None and recent.failed >= MIN_FAILED:
        total = recent.total or 0  # 0: the rate is not known
        rate = recent.failed / total if total else 0.0
        if rate >= FAILING_RATE and low_end(recent.failed, total) >= FAILING_FLOOR:
            return Health("failing", "failing", detail)
        was = _rising(recent)
        if was is not None:
            return Health("rising", "failures rising", f"{detail} ({was})")
    if looks_stuck(summary):
        ready = sum(map(summary.counts.__getitem__, READY))
        waiting = f"{ready:,} waiting, none active"
        if recent is not None and recent.completed is not None:
            waiting += f", none finished in the {_window(recent)}"
        if workers is not None:
            waiting += f", {_workers_words(workers.connected)}"
        return Health("stuck", "nothing active", waiting)
    return Health("", "", detail)
