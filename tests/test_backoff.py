from __future__ import annotations

import random

import pytest

from queues.backoff import Backoff, UnknownBackoffType, parse_backoff, retry_delay


def test_a_bare_number_is_a_fixed_delay() -> None:
    assert parse_backoff(1500) == Backoff("fixed", 1500)
    assert [retry_delay(1500, attempt) for attempt in (1, 2, 5)] == [1500, 1500, 1500]


def test_fixed_ignores_the_attempt_number() -> None:
    spec = {"type": "fixed", "delay": 250}
    assert [retry_delay(spec, attempt) for attempt in (1, 2, 3, 10)] == [250] * 4


def test_exponential_doubles_from_the_base_delay() -> None:
    spec = {"type": "exponential", "delay": 1000}
    assert [retry_delay(spec, attempt) for attempt in (1, 2, 3, 4)] == [1000, 2000, 4000, 8000]


def test_exponential_rounds_half_up_like_the_node_runtime() -> None:
    # 2^(2-1) * 1.25 = 2.5: half up gives 3 where Python's round() would give 2
    assert retry_delay({"type": "exponential", "delay": 1.25}, 2) == 3
    assert retry_delay({"type": "exponential", "delay": 1.25}, 1) == 1


def test_jitter_stays_within_its_band_and_spans_it() -> None:
    spec = {"type": "exponential", "delay": 1000, "jitter": 0.5}
    rng = random.Random(7)
    values = [retry_delay(spec, 3, rng.random) for _ in range(2000)]
    # base = 4000; the band is [2000, 4000]
    assert min(values) >= 2000
    assert max(values) <= 4000
    assert min(values) < 2100
    assert max(values) > 3900


def test_jitter_extremes_are_pinned_by_the_random_source() -> None:
    spec = {"type": "fixed", "delay": 1000, "jitter": 0.2}
    assert retry_delay(spec, 1, lambda: 0.0) == 1000
    assert retry_delay(spec, 1, lambda: 0.999999) == 800
    # jitter 1 may go all the way down to zero
    assert retry_delay({"type": "fixed", "delay": 1000, "jitter": 1}, 1, lambda: 0.999999) == 0


def test_no_backoff_means_no_delay() -> None:
    assert parse_backoff(None) is None
    assert retry_delay(None, 3) == 0
    assert retry_delay(0, 3) == 0


def test_malformed_fields_from_other_writers_degrade_to_zero() -> None:
    assert parse_backoff({"type": "fixed", "delay": "soon"}) == Backoff("fixed", 0)
    assert parse_backoff({"type": "fixed", "delay": -50}) == Backoff("fixed", 0)
    assert parse_backoff({"delay": 40}) == Backoff("fixed", 40)
    assert parse_backoff({"type": "fixed", "delay": 10, "jitter": 7}) == Backoff("fixed", 10, 1.0)
    assert parse_backoff("120") == Backoff("fixed", 120)
    assert parse_backoff([1, 2]) is None


def test_an_unknown_type_is_a_clear_error() -> None:
    with pytest.raises(UnknownBackoffType, match="'linear'"):
        retry_delay({"type": "linear", "delay": 10}, 1)


def test_huge_exponents_do_not_overflow() -> None:
    assert retry_delay({"type": "exponential", "delay": 1000}, 5000) == 2**52
