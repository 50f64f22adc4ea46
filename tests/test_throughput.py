"""What a queue finished lately (queues/throughput.py), from real Redis keys."""

from __future__ import annotations

import pytest
from redis import Redis

from queues.read import counts
from queues.read.refs import QueueRef
from queues.throughput import MINUTE_MS, RecentFinishes, Windows
from tests.dashboard_seed import seed_job, seed_metrics

REF = QueueRef("bull", "mailer")
KEYS = REF.keys
# 12:34:30 on some day: half of the current minute has passed.
NOW = 29_000_000 * MINUTE_MS + 30_000


def read(client: Redis, now: int = NOW, points: int = 30) -> counts.QueueSummary:
    (summary,) = counts.queue_summaries(client, [REF], metrics_points=points, now_ms=now)
    return summary


@pytest.mark.parametrize(
    ("written_at", "series", "this_minute"),
    [
        # Written this minute: the list ends at the minute before, 4 finishes pending.
        (NOW - 10_000, [5, 6, 7], (4, 1)),
        # Written three minutes ago: the pending finishes are that minute's, then
        # two quiet minutes; nothing yet this minute.
        (NOW - 3 * MINUTE_MS, [5, 6, 7, 4, 0, 0], (0, 0)),
        # Workers gone for two hours: the half hour shown is quiet.
        (NOW - 120 * MINUTE_MS, [0] * 30, (0, 0)),
    ],
    ids=["this minute", "three minutes ago", "two hours ago"],
)
def test_metrics_are_aligned_to_now(
    redis_client: Redis, written_at: int, series: list[int], this_minute: tuple[int, int]
) -> None:
    seed_metrics(redis_client, KEYS, [5, 6, 7], [0, 1, 0], written_at, this_minute=(4, 1))
    summary = read(redis_client)
    assert summary.completed_per_minute == series
    assert summary.this_minute == this_minute


def test_metrics_without_their_hash_end_at_the_minute_before_now(redis_client: Redis) -> None:
    redis_client.lpush(KEYS.metrics_data("completed"), 5, 6, 7)  # 7 is the newest
    summary = read(redis_client)
    assert summary.completed_per_minute == [5, 6, 7]
    assert summary.failed_per_minute == [0, 0, 0]
    assert summary.this_minute is None


def test_a_queue_that_never_failed_has_zero_failures_each_minute(redis_client: Redis) -> None:
    redis_client.lpush(KEYS.metrics_data("completed"), 5, 6)
    redis_client.hset(
        KEYS.metrics("completed"), mapping={"count": 14, "prevTS": NOW, "prevCount": 11}
    )
    summary = read(redis_client)
    assert summary.failed_per_minute == [0, 0]
    assert summary.this_minute == (3, 0)
    assert summary.recent == RecentFinishes("metrics", 14, 0, None, None, 2.5)


def test_recent_and_previous_windows_from_metrics(redis_client: Redis) -> None:
    # 20 full minutes: the ten before the last five failed 1 each, the last five 6 each.
    completed = [100] * 20
    failed = [0] * 5 + [1] * 10 + [6] * 5
    seed_metrics(redis_client, KEYS, completed, failed, NOW, this_minute=(40, 3))
    recent = read(redis_client).recent
    assert recent == RecentFinishes("metrics", 540, 33, 1000, 10, 5.5)
    assert recent.rate == pytest.approx(33 / 573)
    assert recent.previous_rate == pytest.approx(10 / 1010)


def test_without_metrics_the_finished_sets_are_counted_by_finish_time(redis_client: Redis) -> None:
    windows = Windows(NOW)
    old, recent_time = windows.previous_start + 1000, windows.recent_start + 1000
    # Kept from before the previous window: the set covers both windows.
    seed_job(redis_client, KEYS, "first", state="completed", score=windows.previous_start - 5)
    for n in range(4):
        seed_job(redis_client, KEYS, f"c{n}", state="completed", score=old + n)
    for n in range(6):
        seed_job(redis_client, KEYS, f"r{n}", state="completed", score=recent_time + n)
    for n in range(2):
        seed_job(redis_client, KEYS, f"f{n}", state="failed", score=recent_time + n)
    seed_job(redis_client, KEYS, "ancient", state="failed", score=windows.previous_start - 1)
    summary = read(redis_client)
    assert summary.completed_per_minute == []
    assert summary.recent == RecentFinishes("finished jobs", 6, 2, 4, 0, 5.5)


def test_a_trimmed_completed_set_shortens_the_window_for_both_sets(redis_client: Redis) -> None:
    windows = Windows(NOW)
    kept_from = NOW - 90_000  # removeOnComplete kept the last 90 s only
    for n in range(3):
        seed_job(redis_client, KEYS, f"c{n}", state="completed", score=kept_from + n)
    seed_job(redis_client, KEYS, "before", state="failed", score=windows.recent_start + 1)
    seed_job(redis_client, KEYS, "after", state="failed", score=kept_from + 10)
    seed_job(redis_client, KEYS, "earlier", state="failed", score=windows.previous_start + 1)
    recent = read(redis_client).recent
    # 1 failure since the oldest completed job kept, not 2; the previous
    # window's completions are not known, its failure is.
    assert recent == RecentFinishes("finished jobs", 3, 1, None, 1, 1.5)


def test_a_queue_that_keeps_no_completed_jobs_has_an_unknown_completed_count(
    redis_client: Redis,
) -> None:
    seed_job(redis_client, KEYS, "f", state="failed", score=NOW - 1000)
    recent = read(redis_client).recent
    assert recent is not None
    assert (recent.completed, recent.failed, recent.rate) == (None, 1, None)


def test_counts_only_read_no_recent_finishes(redis_client: Redis) -> None:
    seed_metrics(redis_client, KEYS, [1, 2], [0, 0], NOW)
    summary = read(redis_client, points=0)
    assert (summary.recent, summary.this_minute, summary.completed_per_minute) == (None, None, [])
