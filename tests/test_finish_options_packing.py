"""moveToFinished's option table is packed once per FinishOptions and only the
token is packed per finish: the spliced bytes must still be one valid msgpack
map holding every option, whatever the token."""

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


def finish_table(options: t.FinishOptions, token: str) -> object:
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
    assert isinstance(call.args[7], bytes)
    return msgpack.unpackb(call.args[7], raw=False)


@pytest.mark.parametrize("token", ["0", "t" * 31, "é" * 40, "x" * 300])
def test_every_option_and_the_token_survive_the_splice(token: str) -> None:
    expected = {
        "token": token,
        "lockDuration": 30_000,
        "name": "w" * 40,
        "limiter": {"max": 3, "duration": 1000},
        "keepJobs": {"count": 10, "age": 60, "limit": 5},
        "attempts": 4,
        "maxMetricsSize": 20,
        "fpof": True,
        "cpof": True,
        "idof": True,
        "rdof": True,
    }
    assert finish_table(FULL, token) == expected
    assert finish_table(FULL, "other") == {**expected, "token": "other"}  # cache reused


def test_bad_options_and_token_are_still_refused_at_every_finish() -> None:
    negative = t.FinishOptions(lock_duration_ms=10, attempts=-1, keep=t.KeepJobs.keep_all())
    for _ in range(2):  # a refusal is not cached as a success
        with pytest.raises(ValueError, match="attempts"):
            finish_table(negative, "tok")
    no_lock = t.FinishOptions(lock_duration_ms=0, attempts=1, keep=t.KeepJobs.keep_all())
    with pytest.raises(ValueError, match="lock duration"):
        finish_table(no_lock, "tok")
    with pytest.raises(ValueError, match="token"):
        finish_table(FULL, "")


def test_the_cache_does_not_change_equality_or_repr() -> None:
    fresh = t.FinishOptions(lock_duration_ms=10, attempts=1, keep=t.KeepJobs.keep_all())
    used = t.FinishOptions(lock_duration_ms=10, attempts=1, keep=t.KeepJobs.keep_all())
    finish_table(used, "tok")
    assert used == fresh
    assert hash(used) == hash(fresh)
    assert repr(used) == repr(fresh)
