"""The transition builders, without Redis: KEYS order, ARGV, option tables."""

from __future__ import annotations

import msgpack
import pytest

from queues.commands import transitions as t
from queues.keys import QueueKeys

KEYS = QueueKeys("mail", prefix="{bull}")
B = "{bull}:mail:"


def _unpack(raw: object) -> object:
    assert isinstance(raw, bytes)
    return msgpack.unpackb(raw, raw=False)


def test_move_to_active_takes_wait_as_its_key_and_plain_options() -> None:
    c = t.move_to_active(
        KEYS,
        token="tok",
        lock_duration_ms=5000,
        now_ms=123,
        worker_name="w1",
        limiter=t.RateLimit(max=10, duration_ms=1000),
    )
    assert c.keys == (KEYS.wait,)
    assert c.args[:5] == (B, 123, "tok", "5000", "w1")
    assert _unpack(c.args[5]) == {"max": 10, "duration": 1000}


def test_move_to_active_without_name_and_limiter_sends_empty_ones() -> None:
    c = t.move_to_active(KEYS, token="0", lock_duration_ms=1, now_ms=1)
    assert c.args == (B, 1, "0", "1", "", b"")


def test_move_to_finished_takes_the_job_key_and_packs_only_the_rarer_options() -> None:
    options = t.FinishOptions(
        lock_duration_ms=3000,
        attempts=3,
        keep=t.KeepJobs(count=5, age_s=60),
        max_metrics_size=100,
        limiter=None,
        worker_name="w",
        fail_parent_on_failure=True,
    )
    c = t.move_to_finished(
        KEYS,
        "42",
        token="tok",
        now_ms=99,
        target="failed",
        value="boom",
        fetch_next=True,
        options=options,
        extra_fields={"stacktrace": '["x"]'},
    )
    assert c.keys == (B + "42",)
    assert c.args[:10] == (B, "42", 99, "failed", "boom", "tok", "5", "3", "3000", "w")
    assert _unpack(c.args[10]) == {"age": 60, "limit": 1000, "maxMetricsSize": 100, "fpof": True}
    assert _unpack(c.args[11]) == ["stacktrace", '["x"]']


def test_a_common_completion_has_no_rarer_options_and_no_fields_argument() -> None:
    c = t.move_to_finished(
        KEYS,
        "7",
        token="tok",
        now_ms=1,
        target="completed",
        value='{"a":1}',
        fetch_next=False,
        options=t.FinishOptions(lock_duration_ms=1, attempts=1, keep=t.KeepJobs.remove()),
    )
    # Keep "0" (remove), no next job ("0" as its lock duration), nothing rare.
    assert c.args[3:] == ("completed", '{"a":1}', "tok", "0", "1", "0", "", b"")


def test_move_to_delayed_and_stalled_and_extend_lock_keys() -> None:
    d = t.move_to_delayed(KEYS, "9", token="tok", now_ms=5, delay_ms=250, skip_attempt=True)
    assert [k.removeprefix(B) for k in d.keys] == [
        "marker",
        "active",
        "prioritized",
        "delayed",
        "9",
        "events",
        "meta",
        "stalled",
    ]
    assert d.args == (B, 5, "9", "tok", 250, 1)
    s = t.move_stalled_jobs_to_wait(KEYS, max_stalled_count=2, now_ms=5, stalled_interval_ms=30000)
    assert [k.removeprefix(B) for k in s.keys] == [
        "stalled",
        "wait",
        "active",
        "stalled-check",
        "meta",
        "paused",
        "marker",
        "events",
    ]
    assert s.args == (2, B, 5, 30000)
    e = t.extend_lock(KEYS, "9", token="tok", lock_duration_ms=1000)
    assert e.keys == (B + "9:lock", B + "stalled")
    assert e.args == ("tok", 1000, "9")


@pytest.mark.parametrize(
    ("option", "count", "by_age"),
    [
        (True, "0", {}),
        (False, "-1", {}),
        (None, "-1", {}),
        (10, "10", {}),
        (-3, "-1", {}),
        ({"age": 3600}, "-1", {"age": 3600, "limit": 1000}),
        ({"age": 60, "count": 5, "limit": 20}, "5", {"age": 60, "limit": 20}),
        ("garbage", "-1", {}),
    ],
)
def test_keep_jobs_reads_bullmq_remove_options(
    option: object, count: str, by_age: dict[str, int]
) -> None:
    keep = t.KeepJobs.from_option(option)
    assert (keep.count_arg(), keep.by_age()) == (count, by_age)


def test_builders_refuse_bad_values_before_redis() -> None:
    with pytest.raises(ValueError, match="lock duration"):
        t.move_to_active(KEYS, token="x", lock_duration_ms=0, now_ms=1)
    with pytest.raises(ValueError, match="token"):
        t.move_to_active(KEYS, token="", lock_duration_ms=10, now_ms=1)
    with pytest.raises(ValueError, match="rate limit"):
        t.RateLimit(max=0, duration_ms=10)
    with pytest.raises(ValueError, match="delay"):
        t.move_to_delayed(KEYS, "1", token="x", now_ms=1, delay_ms=-1)
    with pytest.raises(ValueError, match="job id"):
        t.extend_lock(KEYS, "a:b", token="x", lock_duration_ms=10)
