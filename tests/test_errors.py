from __future__ import annotations

import pytest

from queues.errors import (
    ErrorCode,
    JobLockMismatch,
    JobNotInState,
    ScriptError,
    error_for,
    is_error_code,
    raise_for_code,
)


def test_the_set_is_closed_at_eleven_codes_each_with_its_own_exception() -> None:
    assert [int(c) for c in ErrorCode] == list(range(-1, -12, -1))
    classes = {type(error_for(int(c), "x")) for c in ErrorCode}
    assert len(classes) == 11
    assert all(issubclass(cls, ScriptError) for cls in classes)


def test_a_code_becomes_its_exception_naming_command_and_job() -> None:
    with pytest.raises(JobNotInState) as info:
        raise_for_code(-3, "retryJob", "42")
    assert info.value.job_id == "42"
    assert "retryJob" in str(info.value)
    assert "JOB_NOT_IN_STATE" in str(info.value)
    assert isinstance(error_for(-6, "moveToFinished"), JobLockMismatch)


@pytest.mark.parametrize("value", [0, 1, -12, "-1", None, b"-1"])
def test_values_outside_the_set_are_not_errors(value: object) -> None:
    assert not is_error_code(value)
    raise_for_code(value, "x")
