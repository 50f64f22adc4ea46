"""The transition builders, without Redis: KEYS order, ARGV, option tables."""

from __future__ import annotations

import msgpack
import pytest

from queues.commands import transitions as t
from queues.keys import QueueKeys

KEYS = QueueKeys("mail", prefix="{bull}")
B = "{bull}:mail:"
# The first ten KEYS of moveToActive and moveToFinished, in protocol order.
SHARED_KEYS = ["wait", "active", "prioritized", "events", "stalled", "limiter", "delayed"]
SHARED_KEYS += ["paused", "meta", "pc"]


def _unpack(raw: object) -> object:
    assert isinstance(raw, bytes)
    return msgpack.unpackb(raw, raw=False)


def test_move_to_active_keys_follow_the_protocol_order_and_pack_the_options() -> None:
    c = t.move_to_active(
        KEYS,
        token="tok",
        lock_duration_ms=5000,
        now_ms=123,
        worker_name="w1",
        limiter=t.RateLimit(max=10, duration_ms=1000),
    )
    assert [k.removeprefix(B) for k in c.keys] == [*SHARED_KEYS, "marker"]
    assert c.args[:2] == (B, 123)
    assert _unpack(c.args[2]) == {
        "token": "tok",
        "lockDuration": 5000,
        "name": "w1",
        "limiter": {"max": 10, "duration": 1000},
    }


def test_move_to_active_omits_absent_name_and_limiter() -> None:
    c = t.move_to_active(KEYS, token="0", lock_duration_ms=1, now_ms=1)
    assert _unpack(c.args[2]) == {"token": "0", "lockDuration": 1}


def test_move_to_finished_keys_args_and_option_table() -> None:
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
    assert [k.removeprefix(B) for k in c.keys] == [
        *SHARED_KEYS,
        "failed",
        "42",
        "metrics:failed",
        "marker",
    ]
    assert c.args[:7] == ("42", 99, "failedReason", "boom", "failed", 1, B)
    assert _unpack(c.args[7]) == {
        "token": "tok",
        "lockDuration": 3000,
        "name": "w",
        "keepJobs": {"count": 5, "age": 60, "limit": 1000},
        "attempts": 3,
        "maxMetricsSize": 100,
        "fpof": True,
    }
    assert _unpack(c.args[8]) == ["stacktrace", '["x"]']


def test_move_to_finished_completed_uses_returnvalue_and_no_fields_argument() -> None:
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
    assert c.keys[10] == KEYS.completed
    assert c.keys[12] == KEYS.metrics_completed
    assert c.args[2:6] == ("returnvalue", '{"a":1}', "completed", 0)
    assert len(c.args) == 8
    table = _unpack(c.args[7])
    assert isinstance(table, dict)
    assert table["keepJobs"] == {"count": 0}


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
    ("option", "expected"),
    [
        (True, {"count": 0}),
        (False, {"count": -1}),
        (None, {"count": -1}),
        (10, {"count": 10}),
        ({"age": 3600}, {"count": -1, "age": 3600, "limit": 1000}),
        ({"age": 60, "count": 5, "limit": 20}, {"count": 5, "age": 60, "limit": 20}),
        ("garbage", {"count": -1}),
    ],
)
def test_keep_jobs_reads_bullmq_remove_options(option: object, expected: dict[str, int]) -> None:
    assert t.KeepJobs.from_option(option).packed() == expected


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
