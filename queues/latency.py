"""Durations as fixed log-scale histogram buckets: what the history stores per minute.

A duration in whole milliseconds falls in one bucket; a minute keeps how many
durations fell in each bucket, so minutes add up into hours (and hours into
anything) exactly, and a percentile of any range is read from the summed
counts. Four buckets per doubling: bucket 0 holds 0-1 ms, bucket ``i`` holds
``(2^((i-1)/4), 2^(i/4)]`` ms, the last one everything above 2^32 ms (about 50
days). A percentile is the geometric middle of the bucket it falls in, so it
is within about 9% of the true value (2^(1/8)); the exact maximum is kept
beside the buckets.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import partial

STEPS_PER_DOUBLING = 4
LAST_BUCKET = 32 * STEPS_PER_DOUBLING + 1


def bucket_of(ms: int) -> int:
    """The bucket of a duration (negative durations, from clock steps, count as 0)."""
    if ms <= 1:
        return 0
    return min(math.ceil(STEPS_PER_DOUBLING * math.log2(ms)), LAST_BUCKET)


# The upper bounds of every bucket but the last, for a binary search: the
# same answer as bucket_of (tests/test_latency.py checks every edge) at a
# fraction of its cost; the collector buckets tens of thousands of
# durations a second.
_UPPER_BOUNDS = tuple(2 ** (bucket / STEPS_PER_DOUBLING) for bucket in range(LAST_BUCKET))
_bucket_by_search = partial(bisect_left, _UPPER_BOUNDS)


def bucket_counts(durations: Iterable[int]) -> Counter[int]:
    """How many of ``durations`` (ms) fall in each bucket (bucket_of of each).

    Durations repeat a lot (a minute of 50 ms jobs holds a few dozen distinct
    values), so each distinct value is bucketed once: 20,000 durations of a
    steady workload take about 1 ms, five times less than bucketing each."""
    per_ms = Counter(durations)
    counts: Counter[int] = Counter()
    for bucket, times in zip(map(_bucket_by_search, per_ms), per_ms.values(), strict=True):
        counts[bucket] += times
    return counts


def upper_bound_ms(bucket: int) -> float:
    """The largest duration bucket ``bucket`` holds (inf for the last)."""
    if bucket >= LAST_BUCKET:
        return math.inf
    return float(2 ** (bucket / STEPS_PER_DOUBLING))


def middle_ms(bucket: int) -> float:
    """What a duration in ``bucket`` is reported as: its geometric middle."""
    if bucket <= 0:
        return 1.0
    return float(2 ** ((bucket - 0.5) / STEPS_PER_DOUBLING))


def percentile_ms(
    counts: Mapping[int, int], fraction: float, maximum: int | None = None
) -> float | None:
    """The ``fraction`` (0..1) percentile of the durations counted per bucket;
    None when none were counted. Never above ``maximum`` when it is known, and
    exactly ``maximum`` for the largest duration."""
    total = sum(counts.values())
    if total <= 0:
        return None
    rank = max(1, math.ceil(fraction * total))
    if rank >= total and maximum is not None:
        return float(maximum)
    seen = 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= rank:
            estimate = middle_ms(bucket)
            return min(estimate, float(maximum)) if maximum is not None else estimate
    return None  # unreachable: the last bucket brings seen to total
