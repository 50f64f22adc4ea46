"""Duration buckets: the collector's batch bucketing (a binary search over
the bucket bounds) gives exactly bucket_of's answer, edges included."""

from __future__ import annotations

import math
from collections import Counter

from queues.latency import LAST_BUCKET, STEPS_PER_DOUBLING, bucket_counts, bucket_of


def test_batch_bucketing_agrees_with_bucket_of_at_every_bucket_edge() -> None:
    durations = list(range(-3, 5000))
    for bucket in range(LAST_BUCKET + 2):
        edge = math.floor(2 ** (bucket / STEPS_PER_DOUBLING))
        durations += [edge + step for step in range(-2, 3)]
    durations += [2**32, 2**32 + 1, 2**40, 10**15]
    for ms in durations:
        assert bucket_counts([ms]) == {bucket_of(ms): 1}, ms


def test_batch_bucketing_counts_repeated_durations() -> None:
    durations = [0, 1, 2, 50, 50, 50, 51, 999, 123_456, 50, 2]
    assert bucket_counts(durations) == Counter(bucket_of(ms) for ms in durations)
    assert sum(bucket_counts(durations).values()) == len(durations)
    assert bucket_counts([]) == {}
