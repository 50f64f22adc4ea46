"""The health rule (dashboard/shared/health.py), case by case: exact figures in, exact words out."""

from __future__ import annotations

import pytest

from dashboard.shared.health import (
    MIN_FAILED,
    MIN_FAILED_WITHOUT_RATE,
    Health,
    Workers,
    low_end,
    percent,
    queue_health,
)
from queues.read.counts import LastFinished, QueueSummary
from queues.read.refs import QueueRef
from queues.read.states import STATES
from queues.throughput import RecentFinishes


def finishes(
    completed: int | None,
    failed: int,
    previous: tuple[int | None, int | None] = (None, None),
    minutes: float = 5.5,
    source: str = "metrics",
) -> RecentFinishes:
    return RecentFinishes(source, completed, failed, previous[0], previous[1], minutes)  # type: ignore[arg-type]


def summary(recent: RecentFinishes | None, *, paused: bool = False, **counts: int) -> QueueSummary:
    full = dict.fromkeys(STATES, 0)
    full.update({state.replace("_", "-"): n for state, n in counts.items()})
    return QueueSummary(QueueRef("bull", "q"), full, paused, recent=recent)


CASES = [
    # Healthy traffic says its rate but marks nothing: the 2 in 2,000.
    pytest.param(
        summary(finishes(1998, 2), active=8),
        ("", "", "0.1% failed, last 5 min"),
        id="2 failed of 2,000",
    ),
    pytest.param(
        summary(finishes(1799, 1), active=8), ("", "", "0.06% failed, last 5 min"), id="demo emails"
    ),
    pytest.param(
        summary(finishes(582, 18, (1164, 36)), active=4),
        ("", "", "3% failed, last 5 min"),
        id="demo payments, 3%",
    ),
    pytest.param(
        summary(finishes(570, 30, (1140, 60)), active=3),
        ("", "", "5% failed, last 5 min"),
        id="demo thumbnails, 5%",
    ),
    pytest.param(summary(finishes(600, 0, (1200, 0)), active=3), ("", "", ""), id="nothing failed"),
    pytest.param(
        summary(finishes(None, 0, minutes=0.2, source="finished jobs")),
        ("", "", ""),
        id="a new queue",
    ),
    # A real incident: by rate.
    pytest.param(
        summary(finishes(462, 138, (900, 9)), active=4),
        ("failing", "failing", "23% failed, last 5 min"),
        id="23% failed",
    ),
    pytest.param(
        summary(finishes(540, 60), active=1),
        ("failing", "failing", "10% failed, last 5 min"),
        id="exactly 10%",
    ),
    # 10% of a small sample may be chance (the demo's thumbnails, 5% corrupt
    # images, once had 8 in its first 80 jobs): not marked until surely over 5%.
    pytest.param(
        summary(finishes(72, 8, minutes=1.2), active=1),
        ("", "", "10% failed, last 1 min"),
        id="10% of 80 could be chance",
    ),
    pytest.param(
        summary(finishes(137, 24, minutes=1.8), active=1),
        ("failing", "failing", "15% failed, last 2 min"),
        id="15% of 161 is not",
    ),
    pytest.param(
        summary(finishes(0, 40), active=1),
        ("failing", "failing", "100% failed, last 5 min"),
        id="all failed",
    ),
    pytest.param(
        summary(finishes(901, 99, (1000, 97)), active=1),
        ("", "", "9.9% failed, last 5 min"),
        id="9.9% is not 10%",
    ),
    # Too few failures to mean anything, whatever the share.
    pytest.param(
        summary(finishes(1, 2), active=1), ("", "", "67% failed, last 5 min"), id="2 of 3 failed"
    ),
    # By trend: doubled and gained five points against the ten minutes before.
    pytest.param(
        summary(finishes(564, 36, (1194, 6)), active=2),
        ("rising", "failures rising", "6% failed, last 5 min (was 0.5%)"),
        id="rising 0.5% -> 6%",
    ),
    pytest.param(
        summary(finishes(585, 15, (1188, 12)), active=2),
        ("", "", "2.5% failed, last 5 min"),
        id="doubled, gained 1.5 points",
    ),
    pytest.param(
        summary(finishes(549, 51, (1152, 48)), active=2),
        ("", "", "8.5% failed, last 5 min"),
        id="doubled, gained 4.5 points",
    ),
    pytest.param(
        summary(finishes(564, 36), active=2),
        ("", "", "6% failed, last 5 min"),
        id="no history to compare",
    ),
    # Completed jobs not kept and no metrics: only the failures' pace can rise.
    pytest.param(
        summary(finishes(None, 12, (None, 2), 5.0, "finished jobs"), active=1),
        ("rising", "failures rising", "12 failed, last 5 min (2.4/min now, was 0.2/min)"),
        id="pace rising, rate unknown",
    ),
    # A storm: whole numbers past ten a minute ("21,292.4/min" read as noise).
    pytest.param(
        summary(finishes(None, 106_462, (None, 0), 5.0, "finished jobs"), active=1),
        ("rising", "failures rising", "106,462 failed, last 5 min (21,292/min now, was 0/min)"),
        id="pace of a storm",
    ),
    pytest.param(
        summary(finishes(None, 12, (None, 24), 5.0, "finished jobs"), active=1),
        ("", "", "12 failed, last 5 min"),
        id="pace steady, rate unknown",
    ),
    pytest.param(
        summary(finishes(None, 9, (None, 0), 5.0, "finished jobs"), active=1),
        ("", "", "9 failed, last 5 min"),
        id="too few to rise, rate unknown",
    ),
    # A completed set trimmed to its last 2 minutes: the rate is over those.
    pytest.param(
        summary(finishes(150, 50, minutes=2.1, source="finished jobs"), active=1),
        ("failing", "failing", "25% failed, last 2 min"),
        id="window shortened",
    ),
    # Nothing active: ready jobs, none active, not paused, nothing finished lately.
    pytest.param(
        summary(finishes(0, 0, (300, 0)), wait=5),
        ("stuck", "nothing active", "5 waiting, none active, none finished in the last 5 min"),
        id="stuck",
    ),
    pytest.param(
        summary(finishes(0, 0), prioritized=2),
        ("stuck", "nothing active", "2 waiting, none active, none finished in the last 5 min"),
        id="stuck on prioritized jobs",
    ),
    pytest.param(summary(finishes(300, 0), wait=5), ("", "", ""), id="between two jobs"),
    pytest.param(summary(finishes(0, 0), wait=5, paused=True), ("", "", ""), id="paused"),
    pytest.param(
        summary(finishes(0, 0), wait=5, active=1), ("", "", ""), id="waiting with one active"
    ),
    pytest.param(summary(finishes(0, 0), delayed=5), ("", "", ""), id="delayed only"),
    pytest.param(
        summary(finishes(None, 0, source="finished jobs"), wait=3),
        ("stuck", "nothing active", "3 waiting, none active"),
        id="stuck, finishes unknown",
    ),
    pytest.param(
        summary(None, wait=3),
        ("stuck", "nothing active", "3 waiting, none active"),
        id="stuck, no metrics asked",
    ),
    # Failing outranks stuck.
    pytest.param(
        summary(finishes(10, 20), wait=5),
        ("failing", "failing", "67% failed, last 5 min"),
        id="failing and stuck",
    ),
]


@pytest.mark.parametrize(("queue", "expected"), CASES)
def test_health_of_a_queue(queue: QueueSummary, expected: tuple[str, str, str]) -> None:
    assert queue_health(queue) == Health(*expected)


def test_failing_and_rising_rows_look_failing_and_stuck_ones_stuck() -> None:
    assert [Health(kind, "", "").css for kind in ("failing", "rising", "stuck", "")] == [
        "has-failed",
        "has-failed",
        "stuck",
        "",
    ]


@pytest.mark.parametrize(
    ("failed", "total", "low"),
    [(8, 80, 0.042), (10, 100, 0.046), (24, 161, 0.091), (3, 3, 0.311), (138, 600, 0.189)],
)
def test_the_low_end_of_a_failure_rate(failed: int, total: int, low: float) -> None:
    assert low_end(failed, total) == pytest.approx(low, abs=0.0005)


@pytest.mark.parametrize(
    ("share", "words"),
    [(0, "0%"), (0.0004, "0.04%"), (0.001, "0.1%"), (0.048, "4.8%"), (0.1, "10%"), (1, "100%")],
)
def test_percent_keeps_two_figures(share: float, words: str) -> None:
    assert percent(share) == words


# 2026-12-02 10:56:30 UTC: the moment the summaries below were read.
NOW_MS = 1_796_208_990_000
MINUTE = 60_000


def read_now(queue: QueueSummary) -> QueueSummary:
    queue.read_at_ms = NOW_MS
    return queue


WORKER_CASES = [
    pytest.param(
        summary(finishes(0, 0, (300, 0)), wait=5),
        Workers(0),
        ("stuck", "no workers", "5 waiting"),
        id="no worker connected",
    ),
    # At once: the workers left a minute ago, their last jobs finished then
    # (issue 21: the badge came five minutes after the last finished job).
    pytest.param(
        summary(finishes(300, 0), wait=200),
        Workers(0),
        ("stuck", "no workers", "200 waiting"),
        id="no worker, jobs finished a minute ago",
    ),
    # Killed mid-job: its jobs stay active with nobody to finish or recover them.
    pytest.param(
        summary(finishes(300, 0), wait=20, active=4),
        Workers(0),
        ("stuck", "no workers", "20 waiting"),
        id="no worker, jobs left active",
    ),
    pytest.param(
        summary(finishes(0, 0), wait=4),
        Workers(2),
        (
            "stuck",
            "nothing active",
            "4 waiting, none active, none finished in the last 5 min, 2 workers connected",
        ),
        id="workers connected, nothing active",
    ),
    # Connected but busy elsewhere (another queue's jobs, or long ones): jobs
    # finished lately, so no badge; not "no workers".
    pytest.param(
        summary(finishes(40, 0), wait=30), Workers(3), ("", "", ""), id="workers busy elsewhere"
    ),
    pytest.param(
        summary(None, wait=1),
        Workers(1),
        ("stuck", "nothing active", "1 waiting, none active, 1 worker connected"),
        id="one worker",
    ),
    # The server refuses CLIENT LIST: the five-minute rule, as before.
    pytest.param(
        summary(finishes(0, 0), wait=3),
        None,
        ("stuck", "nothing active", "3 waiting, none active, none finished in the last 5 min"),
        id="workers not known",
    ),
    pytest.param(summary(finishes(300, 0), wait=5), None, ("", "", ""), id="not known, moving"),
    pytest.param(
        summary(finishes(0, 0), wait=5, paused=True), Workers(0), ("", "", ""), id="paused"
    ),
    pytest.param(
        summary(finishes(0, 0), delayed=5, completed=3), Workers(0), ("", "", ""), id="delayed only"
    ),
    pytest.param(summary(finishes(0, 0), active=2), Workers(0), ("", "", ""), id="nothing ready"),
    pytest.param(
        summary(finishes(0, 0), prioritized=7),
        Workers(0),
        ("stuck", "no workers", "7 waiting"),
        id="prioritized jobs and no worker",
    ),
    # Nothing changes until a worker is back: that comes first, the failures follow.
    pytest.param(
        summary(finishes(10, 20), wait=5),
        Workers(0),
        ("stuck", "no workers", "5 waiting; 67% failed, last 5 min"),
        id="no workers outranks failing",
    ),
    pytest.param(
        summary(finishes(10, 20), wait=5),
        Workers(1),
        ("failing", "failing", "67% failed, last 5 min"),
        id="failing with a worker",
    ),
]


@pytest.mark.parametrize(("queue", "workers", "expected"), WORKER_CASES)
def test_health_with_the_workers_counted(
    queue: QueueSummary, workers: Workers | None, expected: tuple[str, str, str]
) -> None:
    assert queue_health(read_now(queue), workers) == Health(*expected)


SINCE_CASES = [
    # The newest of both sets dates it, to the minute, with how long ago.
    pytest.param(
        LastFinished(NOW_MS - 14 * MINUTE, NOW_MS - 20 * MINUTE),
        "last job finished 14 min ago (10:42 UTC)",
        id="completed newest",
    ),
    pytest.param(
        LastFinished(NOW_MS - 3 * 3_600_000, NOW_MS - 90 * MINUTE),
        "last job finished 1 h ago (09:26 UTC)",
        id="failed newest",
    ),
    pytest.param(
        LastFinished(NOW_MS - 20_000, None), "last job finished just now (10:56 UTC)", id="just now"
    ),
    pytest.param(
        LastFinished(NOW_MS - 2 * 86_400_000, None),
        "last job finished 2 d ago (Nov 30 10:56 UTC)",
        id="another day",
    ),
    # Completed jobs not kept (removeOnComplete): one may have finished later, unseen.
    pytest.param(
        LastFinished(None, NOW_MS - 5 * MINUTE),
        "last failure 5 min ago (10:51 UTC), completed jobs not kept",
        id="failures only",
    ),
    # Nothing kept finished: the job next in line dates it (no worker took a job since).
    pytest.param(
        LastFinished(None, None, NOW_MS - 14 * MINUTE),
        "none finished; the oldest added 14 min ago (10:42 UTC)",
        id="nothing kept, oldest waiting",
    ),
    pytest.param(LastFinished(None, None), "no finished job kept to date it", id="nothing kept"),
]


@pytest.mark.parametrize(("last", "words"), SINCE_CASES)
def test_no_workers_says_since_when_as_far_as_the_jobs_kept_tell(
    last: LastFinished, words: str
) -> None:
    health = queue_health(read_now(summary(finishes(0, 0), wait=200)), Workers(0, last))
    assert health == Health("stuck", "no workers", f"200 waiting; {words}")


THRESHOLD_CASES = [
    # Exactly MIN_FAILED failures mark a queue (issue 26: ">" for ">=" survived).
    pytest.param(finishes(0, MIN_FAILED), "failing", id="exactly MIN_FAILED, all failed"),
    pytest.param(finishes(0, MIN_FAILED - 1), "", id="one fewer"),
    # Exactly MIN_FAILED_WITHOUT_RATE failures can rise when the rate is unknown.
    pytest.param(
        finishes(None, MIN_FAILED_WITHOUT_RATE, (None, 0), 5.0, "finished jobs"),
        "rising",
        id="exactly MIN_FAILED_WITHOUT_RATE",
    ),
    pytest.param(
        finishes(None, MIN_FAILED_WITHOUT_RATE - 1, (None, 0), 5.0, "finished jobs"),
        "",
        id="one fewer without a rate",
    ),
]


@pytest.mark.parametrize(("recent", "kind"), THRESHOLD_CASES)
def test_the_thresholds_hold_exactly(recent: RecentFinishes, kind: str) -> None:
    assert queue_health(summary(recent, active=1)).kind == kind
