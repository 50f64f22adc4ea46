"""Which queues need a look, and why, in words: the one health rule. By failure
rate and trend over the last five minutes, never by a count above zero (2 lost
in 2,000 is healthy), with thresholds above ``manage.py demo``'s normal rates;
jobs ready with no worker connected is "no workers" at once.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass

from dashboard.shared.formatting import minute_label, percent, span
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
# Rising: the rate at least doubled against the ten minutes before and gained
# five points (0.1% -> 0.3% is noise, 1% -> 6% is not).
RISING_FACTOR = 2.0
RISING_GAIN = 0.05
# Fewer failures never mark a queue: 1 of 2 is 50% and says nothing yet.
MIN_FAILED = 3
# With the completed count unknown only the failures' own pace can rise: this
# many in the window, at RISING_FACTOR times the pace before.
MIN_FAILED_WITHOUT_RATE = 10


@dataclass(frozen=True, slots=True)
class Health:
    """``kind`` "" (fine), "failing", "rising" or "stuck"; ``label`` the badge's
    words, ``detail`` the figures ("23% failed, last 5 min"; fine queues too)."""

    kind: str
    label: str
    detail: str

    @property
    def css(self) -> str:
        return {"failing": "has-failed", "rising": "has-failed", "stuck": "stuck"}.get(
            self.kind, ""
        )


def low_end(failed: int, total: int) -> float:
    """The lower 99% Wilson bound of a failure rate."""
    share, spread = failed / total, _Z99 * _Z99 / total
    centre = share + spread / 2
    margin = _Z99 * math.sqrt(share * (1 - share) / total + spread / (4 * total))
    return (centre - margin) / (1 + spread)


def _window(recent: RecentFinishes) -> str:
    return f"last {min(RECENT_MINUTES, max(1, round(recent.minutes)))} min"


def _rising(recent: RecentFinishes) -> str | None:
    """The "was ..." words when failures rose, else None."""
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
    """ "0.2/min", "21,293/min": a tenth only where it is worth reading."""
    if per_minute >= 10:
        return f"{per_minute:,.0f}/min"
    return f"{per_minute:,.1f}/min".replace(".0/", "/")


def looks_stuck(summary: QueueSummary) -> bool:
    """Jobs ready, none active, not paused, nothing finished lately: the rule
    that holds where workers cannot be counted."""
    counts, recent = summary.counts, summary.recent
    moving = recent is not None and (recent.completed or 0) + recent.failed > 0
    return wants_workers(summary) and not counts["active"] and not moving


def wants_workers(summary: QueueSummary) -> bool:
    """Jobs ready (delayed ones are not late yet) and not paused (that waits on
    purpose): its workers are worth counting."""
    return not summary.paused and any(map(summary.counts.__getitem__, READY))


_DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class Workers:
    """A queue's workers in ``CLIENT LIST``, and when its newest kept job finished."""

    connected: int
    last_finished: LastFinished | None = None


def _when(at_ms: int, now_ms: int) -> str:
    """ "14 min ago (10:42 UTC)": how bad first, then the clock to line up with a
    deploy log ("Nov 30 10:42 UTC" another day)."""
    day = ""
    if at_ms // _DAY_MS != now_ms // _DAY_MS:
        try:
            moment = dt.datetime.fromtimestamp(at_ms / 1000, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            return f"at {at_ms} ms, a time no clock wrote"  # a score of 1e308, say
        day = f"{moment:%b} {moment.day} "
    ago = now_ms - at_ms
    return f"{span(ago) + ' ago' if ago >= MINUTE_MS else 'just now'} ({day}{minute_label(at_ms)})"


def _since_words(last: LastFinished | None, now_ms: int) -> str:
    """Since when the queue has had no worker, as far as the jobs kept say (when
    it left is written nowhere): the newest finishedOn, saying which set dated
    it, else when the job next in line was added."""
    if last is None:
        return ""
    if last.completed_ms is not None:
        return f"last job finished {_when(last.newest_ms or last.completed_ms, now_ms)}"
    if last.failed_ms is not None:
        return f"last failure {_when(last.failed_ms, now_ms)}, completed jobs not kept"
    if last.oldest_waiting_ms is not None:
        return f"none finished; the oldest added {_when(last.oldest_waiting_ms, now_ms)}"
    return "no finished job kept to date it"


def queue_health(summary: QueueSummary, workers: Workers | None = None) -> Health:
    """No workers (nothing changes until one is back; the failures follow in its
    words) outranks failing (surely over FAILING_FLOOR), then rising, then
    stuck (``workers`` None: they could not be counted)."""
    recent, ready = summary.recent, sum(map(summary.counts.__getitem__, READY))
    detail = ""
    if recent is not None and recent.failed:  # "23% failed, last 5 min", or "12 failed, ..."
        amount = percent(recent.rate) if recent.rate is not None else f"{recent.failed:,}"
        detail = f"{amount} failed, {_window(recent)}"
    if workers is not None and workers.connected == 0 and wants_workers(summary):
        since = _since_words(workers.last_finished, summary.read_at_ms or int(time.time() * 1000))
        # The badge says "no workers"; the failures follow when there were some lately.
        words = (f"{ready:,} waiting", since, detail)
        return Health("stuck", "no workers", "; ".join(word for word in words if word))
    if recent is not None and recent.failed >= MIN_FAILED:
        total = recent.total or 0  # 0: the rate is not known
        rate = recent.failed / total if total else 0.0
        if rate >= FAILING_RATE and low_end(recent.failed, total) >= FAILING_FLOOR:
            return Health("failing", "failing", detail)
        was = _rising(recent)
        if was is not None:
            return Health("rising", "failures rising", f"{detail} ({was})")
    if looks_stuck(summary):
        waiting = f"{ready:,} waiting, none active"
        if recent is not None and recent.completed is not None:
            waiting += f", none finished in the {_window(recent)}"
        if workers is not None:
            count = workers.connected
            waiting += f", {count:,} worker{'s' if count != 1 else ''} connected"
        return Health("stuck", "nothing active", waiting)
    return Health("", "", detail)
