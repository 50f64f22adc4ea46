"""The health rule at edges its case table did not reach, found by mutation
testing (issue 26, docs/mutation.md): a queue that finished anything lately
is not stuck, whatever mix of completed and failed; a trend that exactly
doubled is rising; the window and pace of a queue younger than a minute; the
figures a rate is said with; and when the last job finished, said against
the clock, at exactly a minute, and for times no clock wrote."""

from __future__ import annotations

import time

import pytest

from dashboard.shared.formatting import percent
from dashboard.shared.health import Health, Workers, queue_health
from queues.read.counts import LastFinished
from queues.throughput import MINUTE_MS
from tests.test_health import NOW_MS, finishes, summary


@pytest.mark.parametrize(
    "recent",
    [
        # As many failed as completed: the two are added, not set against each other.
        pytest.param(finishes(2, 2), id="2 completed, 2 failed"),
        # Completed jobs not kept: the one failure is still a job a worker finished.
        pytest.param(finishes(None, 1, source="finished jobs"), id="completed unknown, 1 failed"),
        pytest.param(finishes(1, 0), id="1 completed"),
    ],
)
def test_a_queue_that_finished_anything_lately_is_not_stuck(recent: object) -> None:
    queue = summary(recent, wait=5)  # type: ignore[arg-type]
    assert queue_health(queue).kind == ""


RISING_EDGES = [
    # 5% of the ten minutes before (60 of 1,200), now 8 of 80: exactly double
    # and exactly five points more, which is what "rising" asks. Not failing:
    # 10% of 80 may be chance (its low end is under FAILING_FLOOR).
    pytest.param(
        finishes(72, 8, (1140, 60), minutes=5.0),
        Health("rising", "failures rising", "10% failed, last 5 min (was 5%)"),
        id="exactly doubled, exactly five points",
    ),
    # 6.5% before, 12% now (6 of 50: too few to call failing): more than five
    # points more but not double (12% < 13%), so not rising.
    pytest.param(
        finishes(44, 6, (1122, 78), minutes=5.0),
        Health("", "", "12% failed, last 5 min"),
        id="over five points, not doubled",
    ),
    # Completed jobs not kept: 10 failed in 5 minutes against 10 in the ten
    # before is exactly twice the pace.
    pytest.param(
        finishes(None, 10, (None, 10), 5.0, "finished jobs"),
        Health("rising", "failures rising", "10 failed, last 5 min (2/min now, was 1/min)"),
        id="pace exactly doubled",
    ),
    # A burst that filled the kept failed set (removeOnFail: 100) in its last
    # 30 s: the pace is per minute at least, not inflated by the short window.
    pytest.param(
        finishes(None, 100, (None, 0), 0.5, "finished jobs"),
        Health("rising", "failures rising", "100 failed, last 1 min (100/min now, was 0/min)"),
        id="a burst in the last 30 s",
    ),
    # A queue started 12 s ago, one of its first three jobs failed: "last 1 min".
    pytest.param(
        finishes(2, 1, minutes=0.2),
        Health("", "", "33% failed, last 1 min"),
        id="younger than a minute",
    ),
]


@pytest.mark.parametrize(("recent", "expected"), RISING_EDGES)
def test_health_at_the_edges_of_rising_and_of_the_window(recent: object, expected: Health) -> None:
    assert queue_health(summary(recent, active=1)) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("share", "words"),
    [(0.104, "10%"), (0.0123, "1.2%"), (0.0483, "4.8%"), (0.00123, "0.12%")],
)
def test_a_rate_is_said_with_two_figures_at_most(share: float, words: str) -> None:
    assert percent(share) == words


def test_a_queue_read_without_a_time_dates_its_last_job_from_now() -> None:
    """A summary built without read_at_ms (0) says how long ago against the
    clock: the workers left 14 minutes ago."""
    finished = int(time.time() * 1000) - 14 * MINUTE_MS
    minute = finished // MINUTE_MS
    health = queue_health(summary(finishes(0, 0), wait=3), Workers(0, LastFinished(finished, None)))
    clock = f"{minute // 60 % 24:02d}:{minute % 60:02d} UTC"
    assert health.detail == f"3 waiting; last job finished 14 min ago ({clock})"


def test_a_job_that_finished_a_minute_ago_is_not_just_now() -> None:
    queue = summary(finishes(0, 0), wait=3)
    queue.read_at_ms = NOW_MS
    health = queue_health(queue, Workers(0, LastFinished(NOW_MS - MINUTE_MS, None)))
    assert health.detail == "3 waiting; last job finished 1 min ago (10:55 UTC)"


@pytest.mark.parametrize(
    "finished_ms",
    [
        pytest.param(1_733_387_400_000_000, id="microseconds (year 56898)"),
        pytest.param(10**20, id="past the platform's time_t"),
        pytest.param(int(1e308), id="a score of 1e308"),
    ],
)
def test_a_finished_time_no_clock_wrote_is_said_as_it_is(finished_ms: int) -> None:
    """A producer that wrote finishedOn in microseconds, or a hand-edited
    score: the words say the number instead of failing the page."""
    queue = summary(finishes(0, 0), wait=3)
    queue.read_at_ms = NOW_MS
    health = queue_health(queue, Workers(0, LastFinished(finished_ms, None)))
    assert health.detail == (
        f"3 waiting; last job finished at {finished_ms} ms, a time no clock wrote"
    )
