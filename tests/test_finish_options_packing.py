"""moveToFinished's option arguments are built once per FinishOptions and only
the token changes per finish: every option must still reach the script,
whatever the token, and the common options stay plain text."""

from __future__ import annotations

import msgpack
import pytest

from queues.commands import transitions as t
from queues.keys import QueueKeys

KEYS = QueueKeys("mail")

FULL = t.FinishOptions(
    lock_duration_ms=30_000,
    attempts=4,
    keep=t.KeepJobs(count=10, age_s=60, limit=5),
    max_metrics_size=20,
    limiter=t.RateLimit(max=3, duration_ms=1000),
    worker_name="w" * 40,
    fail_parent_on_failure=True,
    continue_parent_on_failure=True,
    ignore_dependency_on_failure=True,
    remove_dependency_on_failure=True,
)


def finish_args(options: t.FinishOptions, token: str) -> tuple[object, ...]:
    call = t.move_to_finished(
        KEYS,
        "1",
        token=token,
        now_ms=1,
        target="completed",
        value="null",
        fetch_next=True,
        options=options,
    )
    return call.args


@pytest.mark.parametrize("token", ["0", "t" * 31, "é" * 40, "x" * 300])
def test_every_option_and_the_token_reach_the_script(token: str) -> None:
    rare = {
        "age": 60,
        "limit": 5,
        "maxMetricsSize": 20,
        "limiter": {"max": 3, "duration": 1000},
        "fpof": True,
        "cpof": True,
        "idof": True,
        "rdof": True,
    }
    for _ in range(2):  # the second finish reuses the cached arguments
        args = finish_args(FULL, token)
        assert args[5:10] == (token, "10", "4", "30000", "w" * 40)
        assert isinstance(args[10], bytes)
        assert msgpack.unpackb(args[10], raw=False) == rare
    assert finish_args(FULL, "other")[5] == "other"


def test_bad_options_and_token_are_still_refused_at_every_finish() -> None:
    negative = t.FinishOptions(lock_duration_ms=10, attempts=-1, keep=t.KeepJobs.keep_all())
    for _ in range(2):  # a refusal is not cached as a success
        with pytest.raises(ValueError, match="attempts"):
            finish_args(negative, "tok")
    no_lock = t.FinishOptions(lock_duration_ms=0, attempts=1, keep=t.KeepJobs.keep_all())
    with pytest.raises(ValueError, match="lock duration"):
        finish_args(no_lock, "tok")
    with pytest.raises(ValueError, match="token"):
        finish_args(FULL, "")


def test_the_cache_does_not_change_equality_or_repr() -> None:
    fresh = t.FinishOptions(lock_duration_ms=10, attempts=1, keep=t.KeepJobs.keep_all())
    used = t.FinishOptions(lock_duration_ms=10, attempts=1, keep=t.KeepJobs.keep_all())
    finish_args(used, "tok")
    assert used == fresh
    assert hash(used) == hash(fresh)
    assert repr(used) == repr(fresh)
